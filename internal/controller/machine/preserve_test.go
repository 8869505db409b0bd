package machine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// crdReadFails is the API server's client, except that reading a
// CustomResourceDefinition fails: resolving a bootstrap ConfigRef then
// returns an error to the reconcile.
type crdReadFails struct{ client.Client }

func (c crdReadFails) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if p, ok := obj.(*metav1.PartialObjectMetadata); ok && p.Kind == "CustomResourceDefinition" {
		return errors.New("injected: reading CustomResourceDefinitions fails")
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A reconcile that fails the Machine (its creation timeout passed) and
// returns an error (its bootstrap ConfigRef cannot be resolved) writes
// Preserved with Failed all the same: its MachineSet must never see the
// one without the other.
func TestPreservationWrittenWhenTheReconcileFailsTheMachineWithAnError(t *testing.T) {
	controllertest.RegisterProviderKind(t, "PreserveConfig", "v1alpha1")
	h := newHarness(t, nil)
	// A namespace no manager watches: only the reconciler below acts.
	ns := h.Prefix + "preserve-byhand"
	h.Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns,
			Annotations: map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveWhenFailed}},
		Spec: v1alpha1.MachineSpec{
			Class:     &v1alpha1.MachineClassReference{Name: "small"},
			Bootstrap: v1alpha1.Bootstrap{ConfigRef: &v1alpha1.ContractReference{APIGroup: controllertest.ProviderGroup, Kind: "PreserveConfig", Name: "m"}},
			Lifecycle: v1alpha1.MachineLifecycle{CreationTimeout: &metav1.Duration{Duration: time.Minute}},
		},
	}
	h.Create(m)
	env := controllertest.Env.Client
	r := &machine.Reconciler{
		Client: crdReadFails{env}, APIReader: env, Target: env, TargetAPI: env,
		Namespace: ns, Config: h.Config,
		Now: func() time.Time { return time.Now().Add(time.Hour) }, // past the creation timeout
	}
	r.StartCreates()
	_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "m"}})
	if err == nil {
		t.Fatal("the reconcile returned no error: the test no longer makes the case it is about")
	}
	got := &v1alpha1.Machine{}
	if err := env.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.FailureReason != machine.FailureCreationTimeout {
		t.Fatalf("failure %q, want %s", got.Status.FailureReason, machine.FailureCreationTimeout)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.PreservedCondition); c == nil ||
		c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.PreservedWhenFailedReason {
		t.Errorf("Failed written with Preserved %+v, want True (%s)", c, v1alpha1.PreservedWhenFailedReason)
	}
}
