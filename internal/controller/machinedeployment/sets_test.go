package machinedeployment

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestTemplateLabelsOf(t *testing.T) {
	ms := &v1alpha1.MachineSet{}
	ms.Spec.Template.Metadata.Labels = map[string]string{
		"app": "web", v1alpha1.TemplateHashLabel: "abc",
		v1alpha1.MachineDeploymentNameLabel: "web", v1alpha1.AutoscalerDeploymentNameLabel: "web",
	}
	md := &v1alpha1.MachineDeployment{}
	md.Spec.Selector.MatchLabels = map[string]string{"app": "web"}
	if got, want := templateLabelsOf(md, ms), map[string]string{"app": "web"}; !maps.Equal(got, want) {
		t.Errorf("bookkeeping labels kept: %v, want %v", got, want)
	}
	// A person's own use of the deployment-name label stays: the selector
	// needs it.
	md.Spec.Selector.MatchExpressions = []v1alpha1.LabelSelectorRequirement{
		{Key: v1alpha1.MachineDeploymentNameLabel, Operator: metav1.LabelSelectorOpExists},
	}
	if got := templateLabelsOf(md, ms); got[v1alpha1.MachineDeploymentNameLabel] != "web" || got[v1alpha1.TemplateHashLabel] != "" {
		t.Errorf("labels %v: want the selected label kept, the hash dropped", got)
	}
}

func TestCountStatus(t *testing.T) {
	md := &v1alpha1.MachineDeployment{}
	md.Generation = 4
	md.Spec.Replicas = 5
	set := func(name string, replicas, ready, available int32, failed ...string) *v1alpha1.MachineSet {
		ms := &v1alpha1.MachineSet{}
		ms.Name = name
		ms.Status = v1alpha1.MachineSetStatus{Replicas: replicas, ReadyReplicas: ready, AvailableReplicas: available}
		for _, f := range failed {
			ms.Status.FailedMachines = append(ms.Status.FailedMachines, v1alpha1.MachineSummary{Name: f, OwnerRef: name})
		}
		return ms
	}
	newSet := set("new", 2, 1, 1, "new-b")
	st := &v1alpha1.MachineDeploymentStatus{CollisionCount: new(int32)}
	countStatus(st, md, newSet, []*v1alpha1.MachineSet{set("old", 3, 3, 2, "old-a", "old-c"), newSet})
	if st.Replicas != 5 || st.UpdatedReplicas != 2 || st.ReadyReplicas != 4 || st.AvailableReplicas != 3 ||
		st.UnavailableReplicas != 2 || st.ObservedGeneration != 4 || st.CollisionCount == nil {
		t.Errorf("status %+v", st)
	}
	if len(st.FailedMachines) != 3 || st.FailedMachines[0].Name != "new-b" || st.FailedMachines[2].Name != "old-c" {
		t.Errorf("failedMachines %+v: want all three, by name", st.FailedMachines)
	}
}

func TestExpectations(t *testing.T) {
	var e expectations
	ms := &v1alpha1.MachineSet{}
	ms.Name, ms.UID, ms.Generation = "a", types.UID("a"), 2
	e.expectGeneration("md", ms.UID, 3)
	e.expectCreated("md", "b")
	if e.satisfied("md", []*v1alpha1.MachineSet{ms}) {
		t.Error("satisfied before the cache shows generation 3 and set b")
	}
	ms.Generation = 3
	created := &v1alpha1.MachineSet{}
	created.Name, created.UID = "b", "b"
	if !e.satisfied("md", []*v1alpha1.MachineSet{ms, created}) {
		t.Error("not satisfied once the cache shows both")
	}
	e.expectGeneration("md", "gone", 5)
	if !e.satisfied("md", []*v1alpha1.MachineSet{ms}) {
		t.Error("a set that is gone holds the deployment back")
	}
}

// TestExpectationsWaitForListWrites: a write of a set's in-place lists
// changes no generation; the next reconcile still waits until the cache
// shows the lists written.
func TestExpectationsWaitForListWrites(t *testing.T) {
	var e expectations
	ms := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{UID: "a", Generation: 2,
		Annotations: map[string]string{v1alpha1.InPlaceMovingOutAnnotation: "m1"}}}
	e.expectLists("md", ms.UID, "|")
	if e.satisfied("md", []*v1alpha1.MachineSet{ms}) {
		t.Fatal("satisfied by a set still listing m1 moving out")
	}
	delete(ms.Annotations, v1alpha1.InPlaceMovingOutAnnotation)
	if !e.satisfied("md", []*v1alpha1.MachineSet{ms}) {
		t.Fatal("not satisfied by the lists written")
	}
}
