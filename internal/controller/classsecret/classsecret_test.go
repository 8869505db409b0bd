package classsecret

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// A fake client is enough here: Read is pure merging logic over two Gets.
func TestReadMergesCredentialsOverSecretRef(t *testing.T) {
	userdata := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ud", Namespace: "ns"},
		Data: map[string][]byte{"userData": []byte("boot"), "token": []byte("old")}}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "ns"},
		Data: map[string][]byte{"token": []byte("new")}}
	c := fake.NewClientBuilder().WithObjects(userdata, creds).Build()
	class := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"},
		Spec: v1alpha1.MachineClassSpec{SecretRef: &corev1.SecretReference{Name: "ud"},
			CredentialsSecretRef: &corev1.SecretReference{Name: "creds", Namespace: "ns"}}}
	got, err := Read(context.Background(), c, class)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Data["userData"]) != "boot" || string(got.Data["token"]) != "new" {
		t.Fatalf("merged data = %v; want userData from secretRef and token from the credentials", got.Data)
	}

	class.Spec.SecretRef.Name = "missing"
	_, err = Read(context.Background(), c, class)
	var nf *NotFoundError
	if !errors.As(err, &nf) || nf.Key.Name != "missing" || nf.Key.Namespace != "ns" {
		t.Fatalf("a missing Secret gave %v; want a NotFoundError naming ns/missing", err)
	}
}

// A class reads Secrets of its own namespace only: a reference to another
// one is refused, and that Secret is never read.
func TestReadRefusesSecretsOfAnotherNamespace(t *testing.T) {
	other := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "admin", Namespace: "kube-system"}, Data: map[string][]byte{"token": []byte("root")}}
	reads := 0
	c := interceptedReads(fake.NewClientBuilder().WithObjects(other).Build(), &reads)
	for _, spec := range []v1alpha1.MachineClassSpec{
		{SecretRef: &corev1.SecretReference{Name: "admin", Namespace: "kube-system"}},
		{CredentialsSecretRef: &corev1.SecretReference{Name: "admin", Namespace: "kube-system"}},
	} {
		class := &v1alpha1.MachineClass{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "tenant"}, Spec: spec}
		got, err := Read(context.Background(), c, class)
		var refused *OtherNamespaceError
		if !errors.As(err, &refused) || refused.Key.Namespace != "kube-system" {
			t.Fatalf("a class of tenant naming kube-system/admin: %v, %v; want an OtherNamespaceError", got, err)
		}
	}
	if reads != 0 {
		t.Fatalf("the refused Secrets were read %d times", reads)
	}
}

// interceptedReads counts the Gets made through c.
func interceptedReads(c client.WithWatch, reads *int) client.Client {
	return interceptor.NewClient(c, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		*reads++
		return c.Get(ctx, key, obj, opts...)
	}})
}
