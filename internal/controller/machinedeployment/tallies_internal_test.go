package machinedeployment

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

// TestTalliesAreTheCache runs a deployment on a real API server through a
// scale-up, a delete-priority mark, a preserved Machine and a rolling
// update, and checks that the counts the deployment decides from (its
// tallies, kept from the Machine events) come to equal plan.Count of the
// manager's cache for every set, the old one's dropping to nothing.
func TestTalliesAreTheCache(t *testing.T) {
	ctx := context.Background()
	var r *Reconciler
	var cache client.Reader
	h := controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller")}
			if err := ms.SetupWithManager(ctx, mgr, 2); err != nil {
				return err
			}
			r = &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("machinedeployment-controller")}
			cache = mgr.GetClient()
			return r.SetupWithManager(ctx, mgr, 2)
		},
	})
	h.Class("small", controllertest.SimSpec)
	h.Class("large", controllertest.SimSpec)
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + "tally", Namespace: h.NS},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 3,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "tally"}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"app": "tally"}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "small"}},
			},
		},
	}
	h.Create(md)

	// sameAsCache compares, for every set of the deployment and one that
	// is gone, the tallies with plan.Count of the cache's Machines.
	var gone []*v1alpha1.MachineSet
	sameAsCache := func(wantAvailable int32) (bool, error) {
		now := time.Now()
		sets := &v1alpha1.MachineSetList{}
		if err := cache.List(ctx, sets, client.InNamespace(h.NS)); err != nil {
			return false, err
		}
		machines := &v1alpha1.MachineList{}
		if err := cache.List(ctx, machines, client.InNamespace(h.NS)); err != nil {
			return false, err
		}
		var available int32
		check := append([]*v1alpha1.MachineSet{}, gone...)
		for i := range sets.Items {
			check = append(check, &sets.Items[i])
		}
		for _, ms := range check {
			var own []*v1alpha1.Machine
			for i := range machines.Items {
				if metav1.IsControlledBy(&machines.Items[i], ms) {
					own = append(own, &machines.Items[i])
				}
			}
			want, wantNext := plan.Count(own, 0, now, time.Time{})
			got, gotNext := r.tallies.counts(ms.UID, 0, now, time.Time{})
			if got != want || gotNext != wantNext || r.tallies.machines(ms.UID) != len(own) {
				return false, nil
			}
			available += got.Available
		}
		return available == wantAvailable, nil
	}
	wait := func(what string, wantAvailable int32) {
		t.Helper()
		h.Eventually(60*time.Second, what, func() (bool, error) { return sameAsCache(wantAvailable) })
	}
	edit := func(name string, change func(*v1alpha1.Machine)) {
		t.Helper()
		m := &v1alpha1.Machine{}
		if err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: h.NS, Name: name}, m); err != nil {
			t.Fatal(err)
		}
		base := m.DeepCopy()
		change(m)
		if err := controllertest.Env.Client.Patch(ctx, m, client.MergeFrom(base)); err != nil {
			t.Fatal(err)
		}
	}
	machineNames := func() []string {
		list := &v1alpha1.MachineList{}
		if err := controllertest.Env.Client.List(ctx, list, client.InNamespace(h.NS)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range list.Items {
			if m.DeletionTimestamp.IsZero() {
				out = append(out, m.Name)
			}
		}
		return out
	}

	wait("3 Machines available, tallied as the cache counts them", 3)
	names := machineNames()
	if len(names) != 3 {
		t.Fatalf("Machines %v, want 3", names)
	}
	// A delete group (AvailableAhead) and a preserved Machine (out of
	// every count) change no Ready condition: only the tallies see them.
	edit(names[0], func(m *v1alpha1.Machine) { m.Annotations[v1alpha1.PriorityAnnotation] = "1" })
	wait("a priority annotation tallied", 3)
	edit(names[1], func(m *v1alpha1.Machine) { m.Annotations[v1alpha1.PreserveAnnotation] = v1alpha1.PreserveNow })
	// Its replacement comes up; the preserved one counts nowhere.
	wait("a preserved Machine tallied, its replacement available", 3)

	old := &v1alpha1.MachineSetList{}
	if err := cache.List(ctx, old, client.InNamespace(h.NS)); err != nil || len(old.Items) != 1 {
		t.Fatalf("sets %d, %v: want 1", len(old.Items), err)
	}
	gone = append(gone, &old.Items[0])
	cur := &v1alpha1.MachineDeployment{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
		t.Fatal(err)
	}
	base := cur.DeepCopy()
	cur.Spec.Template.Spec.Class.Name = "large"
	if err := controllertest.Env.Client.Patch(ctx, cur, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	h.Eventually(90*time.Second, "the rollout done, the old set's Machines but the preserved one gone and untallied", func() (bool, error) {
		ok, err := sameAsCache(3)
		if !ok || err != nil {
			return ok, err
		}
		// The preserved Machine stays with its set (docs/preservation.md).
		n := r.tallies.machines(gone[0].UID)
		return n == 1, nil
	})
}
