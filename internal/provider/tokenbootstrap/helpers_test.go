package tokenbootstrap

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
)

var nsSeq atomic.Int64

// owned is a TokenBootstrapConfig and its Machine, as the Millwright
// machine controller would set them up.
type owned struct {
	t   *testing.T
	c   client.Client
	cfg *bootstrapv1.TokenBootstrapConfig
	m   *v1alpha1.Machine
}

// newConfig creates, in a namespace of the test's own, a Machine and the
// config its spec.bootstrap.configRef names, edited by edit if set; the
// Machine does not own the config yet (see adopt).
func newConfig(t *testing.T, edit func(*bootstrapv1.TokenBootstrapConfig, *v1alpha1.Machine)) *owned {
	t.Helper()
	ns := fmt.Sprintf("tb%d-%s", nsSeq.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	ns = strings.TrimRight(ns[:min(len(ns), 60)], "-")
	o := &owned{t: t, c: testClient}
	o.cfg = &bootstrapv1.TokenBootstrapConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1-boot"}}
	o.m = &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"},
		Spec: v1alpha1.MachineSpec{
			InfrastructureRef: &v1alpha1.ContractReference{APIGroup: "infrastructure.millwright.dev", Kind: "SimMachine", Name: "m1"},
			Bootstrap: v1alpha1.Bootstrap{ConfigRef: &v1alpha1.ContractReference{
				APIGroup: bootstrapv1.GroupName, Kind: Kind, Name: "m1-boot"}},
		},
	}
	if edit != nil {
		edit(o.cfg, o.m)
	}
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, o.cfg, o.m} {
		if err := o.c.Create(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// newOwned is newConfig with the Machine as the config's controller owner.
func newOwned(t *testing.T, edit func(*bootstrapv1.TokenBootstrapConfig, *v1alpha1.Machine)) *owned {
	o := newConfig(t, edit)
	o.adopt()
	return o
}

// adopt makes the Machine the config's controller owner.
func (o *owned) adopt() {
	o.patch(func(cfg *bootstrapv1.TokenBootstrapConfig) {
		cfg.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Name: o.m.Name, UID: o.m.UID, Controller: ptr.To(true),
		}}
	})
}

func (o *owned) patch(mutate func(*bootstrapv1.TokenBootstrapConfig)) {
	o.t.Helper()
	o.get()
	base := o.cfg.DeepCopy()
	mutate(o.cfg)
	if err := o.c.Patch(context.Background(), o.cfg, client.MergeFrom(base)); err != nil {
		o.t.Fatal(err)
	}
}

func (o *owned) patchMachine(status bool, mutate func(*v1alpha1.Machine)) {
	o.t.Helper()
	if err := o.c.Get(context.Background(), client.ObjectKeyFromObject(o.m), o.m); err != nil {
		o.t.Fatal(err)
	}
	base := o.m.DeepCopy()
	mutate(o.m)
	var err error
	if status {
		err = o.c.Status().Patch(context.Background(), o.m, client.MergeFrom(base))
	} else {
		err = o.c.Patch(context.Background(), o.m, client.MergeFrom(base))
	}
	if err != nil {
		o.t.Fatal(err)
	}
}

func (o *owned) get() *bootstrapv1.TokenBootstrapConfig {
	o.t.Helper()
	if err := o.c.Get(context.Background(), client.ObjectKeyFromObject(o.cfg), o.cfg); err != nil {
		o.t.Fatal(err)
	}
	return o.cfg
}

// eventually polls the config until cond holds (gone: until it is deleted).
func (o *owned) eventually(what string, cond func(*bootstrapv1.TokenBootstrapConfig) bool) {
	o.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := o.c.Get(ctx, client.ObjectKeyFromObject(o.cfg), o.cfg)
		if apierrors.IsNotFound(err) {
			return cond(nil), nil
		}
		return err == nil && cond(o.cfg), err
	})
	if err != nil {
		o.t.Fatalf("waiting for the TokenBootstrapConfig %s: %v\nstatus: %+v", what, err, o.cfg.Status)
	}
}

// token is the config's token Secret in kube-system; nil when there is none.
func (o *owned) token() *corev1.Secret {
	o.t.Helper()
	s := &corev1.Secret{}
	err := o.c.Get(context.Background(), bootstraptoken.Key(bootstraptoken.ID(o.cfg.UID)), s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		o.t.Fatal(err)
	}
	return s
}

// dataSecret is the config's user-data Secret; nil when there is none.
func (o *owned) dataSecret() *corev1.Secret {
	o.t.Helper()
	s := &corev1.Secret{}
	err := o.c.Get(context.Background(), client.ObjectKeyFromObject(o.cfg), s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		o.t.Fatal(err)
	}
	return s
}

func ready(cfg *bootstrapv1.TokenBootstrapConfig) bool { return cfg != nil && cfg.Status.Ready }

func gone(cfg *bootstrapv1.TokenBootstrapConfig) bool { return cfg == nil }

func failedWith(reason string) func(*bootstrapv1.TokenBootstrapConfig) bool {
	return func(cfg *bootstrapv1.TokenBootstrapConfig) bool {
		return cfg != nil && ptr.Deref(cfg.Status.FailureReason, "") == reason
	}
}

func conditionIs(t, status, reason string) func(*bootstrapv1.TokenBootstrapConfig) bool {
	return func(cfg *bootstrapv1.TokenBootstrapConfig) bool {
		if cfg == nil {
			return false
		}
		got := meta.FindStatusCondition(cfg.Status.Conditions, t)
		return got != nil && string(got.Status) == status && got.Reason == reason
	}
}
