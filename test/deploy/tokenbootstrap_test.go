package deploy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

const bootstrapGroup = "bootstrap.millwright.dev"

// checkTokenBootstrap runs a MachineSet of one whose Machines boot from a
// TokenBootstrapConfigTemplate, under the manager's ServiceAccount: the
// MachineSet controller clones the template, the machine controller adopts
// the clone, the TokenBootstrapConfig controller makes the token (in
// kube-system) and the user data (in the set's namespace), the Machine
// runs, and the token is deleted once the Node joined; scaling to zero
// deletes the config. Every step is a permission config/rbac must grant.
func checkTokenBootstrap(ctx context.Context, t *testing.T) {
	t.Helper()
	ns := "tokens"
	create(ctx, t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(ctx, t, &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim", Namespace: ns},
		Spec: v1alpha1.MachineClassSpec{
			Provider:     "sim",
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{"region":"local","zones":["local-a"]}`)},
		},
	})
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bootstrapGroup + "/v1alpha1", "kind": "TokenBootstrapConfigTemplate",
		"metadata": map[string]any{"name": "boot", "namespace": ns},
		"spec":     map[string]any{"template": map[string]any{"spec": map[string]any{"tokenTTL": "10m"}}},
	}}
	create(ctx, t, tmpl)
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "tokens", Namespace: ns},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 1,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": "tokens"}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"pool": "tokens"}},
				Spec: v1alpha1.MachineSpec{
					Class: &v1alpha1.MachineClassReference{Name: "sim"},
					Bootstrap: v1alpha1.Bootstrap{ConfigRef: &v1alpha1.ContractReference{
						APIGroup: bootstrapGroup, Kind: "TokenBootstrapConfigTemplate", Name: "boot"}},
				},
			},
		},
	}
	create(ctx, t, ms)

	machine := &v1alpha1.Machine{}
	testenv.Eventually(t, 2*time.Minute, "the token-bootstrapped Machine to be Running", func() (bool, error) {
		list := &v1alpha1.MachineList{}
		if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err
		}
		if len(list.Items) != 1 {
			return false, fmt.Errorf("%d Machines", len(list.Items))
		}
		*machine = list.Items[0]
		if machine.Status.Phase != v1alpha1.PhaseRunning || machine.Status.NodeRef == nil {
			return false, fmt.Errorf("Machine %s: phase %q, conditions %+v", machine.Name, machine.Status.Phase, machine.Status.Conditions)
		}
		return true, nil
	})
	ref := machine.Spec.Bootstrap.ConfigRef
	if ref == nil || ref.Kind != "TokenBootstrapConfig" || machine.Spec.Bootstrap.DataSecretName == nil {
		t.Fatalf("the Machine's bootstrap %+v does not come from a TokenBootstrapConfig", machine.Spec.Bootstrap)
	}
	cfg := &unstructured.Unstructured{}
	cfg.SetAPIVersion(bootstrapGroup + "/v1alpha1")
	cfg.SetKind("TokenBootstrapConfig")
	testenv.Eventually(t, 30*time.Second, "the config to see the join and its token to be deleted", func() (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, cfg); err != nil {
			return false, err
		}
		if joined, _, _ := unstructured.NestedBool(cfg.Object, "status", "joined"); !joined {
			return false, fmt.Errorf("config status %v", cfg.Object["status"])
		}
		id, _, _ := unstructured.NestedString(cfg.Object, "status", "tokenID")
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "bootstrap-token-" + id}, &corev1.Secret{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("token %s still there (err %v)", id, err)
		}
		return true, nil
	})
	data := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: *machine.Spec.Bootstrap.DataSecretName}, data); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data.Data["value"]), "#cloud-config\n") || !strings.Contains(string(data.Data["value"]), "--hostname-override="+machine.Name) {
		t.Errorf("user data of Machine %s:\n%s", machine.Name, data.Data["value"])
	}

	base := ms.DeepCopy()
	ms.Spec.Replicas = 0
	if err := env.Client.Patch(ctx, ms, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Machine and its config to be gone", func() (bool, error) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(machine), &v1alpha1.Machine{}); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("Machine still there (err %v)", err)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cfg), cfg); !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("config still there (err %v)", err)
		}
		return true, nil
	})
}
