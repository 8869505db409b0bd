package disruption_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// ownedBy makes the MachineSet owner the Machine's controller.
func ownedBy(m v1alpha1.Machine, owner string) v1alpha1.Machine {
	yes := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: owner,
		UID: types.UID("uid-" + owner), Controller: &yes}}
	return m
}

// TestEvaluateCountsAgainstOwnersReplicas: Machines of an owner the budget
// selects wholly count against the owner's size, not what exists.
func TestEvaluateCountsAgainstOwnersReplicas(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	replicas := map[string]int32{"md": 4, "zero": 0}
	owners := func(set string) (string, int32, bool) {
		n, ok := replicas[set]
		return "MachineDeployment/" + set, n, ok
	}
	deletingOf := func(name, owner string) v1alpha1.Machine {
		m := ownedBy(ready(name), owner)
		m.DeletionTimestamp = &metav1.Time{Time: now}
		return m
	}
	deleting := func(name string) v1alpha1.Machine { return deletingOf(name, "md") }
	notReady := func(name string) v1alpha1.Machine {
		return ownedBy(withCondition(ready(name), v1alpha1.ReadyCondition, metav1.ConditionFalse), "md")
	}
	for _, tc := range []struct {
		name                     string
		machines                 []v1alpha1.Machine
		grants                   []v1alpha1.DisruptedMachine
		expected, unavail, allow int32
	}{
		{"a replacement that failed to be created counts",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md")}, nil, 4, 1, 1},
		{"a Machine being replaced and its replacement count once",
			[]v1alpha1.Machine{deleting("a"), notReady("a2"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), ownedBy(ready("d"), "md")}, nil, 4, 1, 1},
		{"a surge Machine not yet Ready costs nothing",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), ownedBy(ready("d"), "md"), notReady("e")}, nil, 4, 0, 2},
		{"a scale-down's drains count though the owner is at its size",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), ownedBy(ready("d"), "md"), deleting("e"), deleting("f")}, nil, 4, 2, 0},
		{"an in-place update counts though the owner is above its size",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), ownedBy(ready("d"), "md"),
				ownedBy(targeted(inPlace(ready("e"), v1alpha1.InPlaceDraining)), "md")}, nil, 4, 1, 1},
		{"an in-place update and a scale-down's drain count both",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), ownedBy(ready("d"), "md"),
				ownedBy(targeted(inPlace(ready("e"), v1alpha1.InPlaceUpdating)), "md"), deleting("f")}, nil, 4, 2, 0},
		{"a stopped in-place update counts until cleared",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), ownedBy(ready("d"), "md"),
				ownedBy(targeted(inPlace(ready("e"), v1alpha1.InPlaceRefused)), "md")}, nil, 4, 1, 1},
		{"a pending grant counts",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), ownedBy(ready("d"), "md")},
			[]v1alpha1.DisruptedMachine{grant("a", now)}, 4, 1, 1},
		{"an owner scaled to 0 drains under the budget, one at a time",
			[]v1alpha1.Machine{ownedBy(ready("z1"), "zero"), ownedBy(ready("z2"), "zero"), ownedBy(ready("z3"), "zero")}, nil, 3, 0, 2},
		{"an owner scaled to 0, one draining",
			[]v1alpha1.Machine{deletingOf("z1", "zero"), ownedBy(ready("z2"), "zero"), ownedBy(ready("z3"), "zero")}, nil, 2, 1, 1},
		{"an owner selected in part: its Machines count alone",
			[]v1alpha1.Machine{ownedBy(ready("a"), "md"), ownedBy(ready("b"), "md"), ownedBy(ready("c"), "md"), notSelected(ownedBy(ready("d"), "md"))}, nil, 3, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := disruption.Evaluate(budget(intstr.FromInt32(2), tc.grants...), pointers(tc.machines), owners, now)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Expected != tc.expected || ev.Unavailable != tc.unavail || ev.Allowed != tc.allow {
				t.Errorf("expected %d unavailable %d allowed %d, want %d %d %d (why: %v)",
					ev.Expected, ev.Unavailable, ev.Allowed, tc.expected, tc.unavail, tc.allow, ev.Why)
			}
		})
	}
}

func notSelected(m v1alpha1.Machine) v1alpha1.Machine {
	m.Labels["pool"] = "b"
	return m
}
