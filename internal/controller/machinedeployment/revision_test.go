package machinedeployment

import (
	"slices"
	"testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
)

func TestRevisionAnnotations(t *testing.T) {
	var a map[string]string
	if revisionOf(a) != 0 {
		t.Error("no annotation is revision 0")
	}
	if !setRevision(&a, 7) || a[v1alpha1.RevisionAnnotation] != "7" || a[v1alpha1.AutoscalerRevisionAnnotation] != "7" {
		t.Fatalf("setRevision wrote %v", a)
	}
	if setRevision(&a, 7) {
		t.Error("setting the same revision reports a change")
	}
	if revisionOf(a) != 7 {
		t.Errorf("revisionOf = %d", revisionOf(a))
	}
	if revisionOf(map[string]string{v1alpha1.RevisionAnnotation: "x"}) != 0 {
		t.Error("a bad annotation is revision 0")
	}
}

func rev(name string, r int64) plan.Set { return plan.Set{Name: name, Revision: r} }

func TestNewSetRevision(t *testing.T) {
	tests := []struct {
		name    string
		current int64
		old     []plan.Set
		want    int64
	}{
		{"first set", 0, nil, 1},
		{"a new template", 0, []plan.Set{rev("a", 1), rev("b", 2)}, 3},
		{"already the newest", 3, []plan.Set{rev("a", 1), rev("b", 2)}, 3},
		{"rolled back to revision 1: renumbered", 1, []plan.Set{rev("b", 2), rev("c", 3)}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := newSetRevision(tc.current, tc.old); got != tc.want {
				t.Errorf("newSetRevision = %d, want %d", got, tc.want)
			}
		})
	}
	if got := previousRevision([]plan.Set{rev("a", 1), rev("b", 2)}); got != 2 {
		t.Errorf("previousRevision = %d, want 2 (the newest old set)", got)
	}
	if got := previousRevision(nil); got != 0 {
		t.Errorf("previousRevision without old sets = %d, want 0", got)
	}
}

func TestHistoryToDelete(t *testing.T) {
	e := func(name string, r int64, empty bool) historyEntry {
		return historyEntry{Name: name, Revision: r, Empty: empty}
	}
	tests := []struct {
		name  string
		old   []historyEntry
		limit int32
		want  []string
	}{
		{"within the limit", []historyEntry{e("a", 1, true), e("b", 2, true)}, 2, nil},
		{"oldest revisions first", []historyEntry{e("c", 3, true), e("a", 1, true), e("b", 2, true)}, 1, []string{"a", "b"}},
		{"a set with Machines stays, newer empty ones go", []historyEntry{e("a", 1, false), e("b", 2, true), e("c", 3, true)}, 1, []string{"b", "c"}},
		{"limit 0 keeps no history", []historyEntry{e("a", 1, true), e("b", 2, false)}, 0, []string{"a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := historyToDelete(tc.old, tc.limit); !slices.Equal(got, tc.want) {
				t.Errorf("historyToDelete = %v, want %v", got, tc.want)
			}
		})
	}
}
