package e2e

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The recorder judges the order of a Machine's drain and its Node's
// deletion from what it saw. A deletion a relist found (the watch broke)
// happened out of sight: it is not judged unless the Machine was seen
// undrained after it, and it is counted. No cluster: the events are fed
// to the recorder as its watch and relists would.
func TestRecorderJudgesDeletionsOutOfSight(t *testing.T) {
	const ns = "judge"
	draining := &v1alpha1.MachineDeletionStatus{Step: v1alpha1.StepDrain}
	deletingVM := &v1alpha1.MachineDeletionStatus{Step: v1alpha1.StepDeleteInfrastructure}
	machine := func(rv int, d *v1alpha1.MachineDeletionStatus) *v1alpha1.Machine {
		return &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns, ResourceVersion: fmt.Sprint(rv)},
			Status:     v1alpha1.MachineStatus{NodeName: ns + "-n", Deletion: d},
		}
	}
	node := func(rv int) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-n", ResourceVersion: fmt.Sprint(rv)}}
	}
	// relist feeds a list of kind at rv that no longer holds the object.
	relist := func(r *recorder, kind string, rv int) {
		switch kind {
		case kindNode:
			l := &corev1.NodeList{}
			l.ResourceVersion = fmt.Sprint(rv)
			r.relisted(kind, l)
		case kindMachine:
			l := &v1alpha1.MachineList{}
			l.ResourceVersion = fmt.Sprint(rv)
			r.relisted(kind, l)
		}
	}
	for _, tc := range []struct {
		name    string
		feed    func(r *recorder)
		failure string
		hidden  int
	}{
		{"the Node's deletion seen while draining", func(r *recorder) {
			r.apply(kindMachine, watch.Modified, machine(10, draining))
			r.apply(kindNode, watch.Deleted, node(12))
			r.apply(kindMachine, watch.Deleted, machine(14, deletingVM))
		}, "while Machine m was not drained", 0},
		{"in order, seen", func(r *recorder) {
			r.apply(kindMachine, watch.Modified, machine(10, draining))
			r.apply(kindMachine, watch.Modified, machine(11, deletingVM))
			r.apply(kindNode, watch.Deleted, node(12))
			r.apply(kindMachine, watch.Deleted, machine(14, deletingVM))
		}, "", 0},
		{"both found gone by relists", func(r *recorder) {
			r.apply(kindMachine, watch.Modified, machine(10, draining))
			relist(r, kindMachine, 20)
			relist(r, kindNode, 21)
		}, "", 2},
		{"the Node's deletion seen, the Machine found gone by a relist", func(r *recorder) {
			r.apply(kindMachine, watch.Modified, machine(10, draining))
			r.apply(kindNode, watch.Deleted, node(12))
			relist(r, kindMachine, 20)
		}, "", 2},
		{"the Node found gone, the Machine seen draining after", func(r *recorder) {
			r.apply(kindMachine, watch.Modified, machine(10, draining))
			relist(r, kindNode, 20)
			r.apply(kindMachine, watch.Modified, machine(22, draining))
		}, "out of sight) while Machine m was seen not drained afterwards", 0},
		{"the Machine gone undrained, its deletion seen", func(r *recorder) {
			r.apply(kindMachine, watch.Modified, machine(10, draining))
			r.apply(kindMachine, watch.Deleted, machine(11, draining))
		}, "disappeared without its deletion steps", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRecorder(&scenario{t: t, ns: ns})
			r.apply(kindNode, watch.Added, node(1))
			tc.feed(r)
			failures, _ := r.judgeDeletionsLocked()
			got := strings.Join(failures, "\n")
			if tc.failure == "" && got != "" || !strings.Contains(got, tc.failure) {
				t.Errorf("failures %q, want one saying %q", got, tc.failure)
			}
			if r.hidden != tc.hidden {
				t.Errorf("%d deletions out of sight, want %d", r.hidden, tc.hidden)
			}
		})
	}
}

// A relist is one state: the checks judge it once it is all in. Applied
// object by object, a new Machine's version met the stale version of one
// the list no longer held, and the 40-minute sim run reported two
// Machines disrupted at once, one of them gone.
func TestRecorderJudgesARelistAsAWhole(t *testing.T) {
	const ns = "judge"
	deleting := func(name string) *v1alpha1.Machine {
		now := metav1.Now()
		return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "5",
			DeletionTimestamp: &now, Finalizers: []string{v1alpha1.MachineFinalizer}}}
	}
	atMostOneDeleting := func(r *recorder) string {
		if n := len(r.machinesLocked()); n > 1 {
			return fmt.Sprintf("%d Machines being deleted", n)
		}
		return ""
	}
	r := newRecorder(&scenario{t: t, ns: ns}, atMostOneDeleting)
	r.synced = map[string]bool{kindMachine: true, kindNode: true, kindPod: true}
	r.apply(kindMachine, watch.Modified, deleting("a"))
	list := &v1alpha1.MachineList{Items: []v1alpha1.Machine{*deleting("b")}}
	list.ResourceVersion = "9"
	r.relisted(kindMachine, list)
	if len(r.violations) > 0 || r.checksRun != 2 {
		t.Errorf("after a relist that replaced Machine a by b: violations %q, checks run %d (want none, 2)", r.violations, r.checksRun)
	}
}
