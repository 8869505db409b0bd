package machinedeployment

import (
	"sort"
	"strconv"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
)

// revisionOf reads an object's revision annotation; 0 when absent or bad.
func revisionOf(annotations map[string]string) int64 {
	v, err := strconv.ParseInt(annotations[v1alpha1.RevisionAnnotation], 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// setRevision writes revision into both revision annotations, Millwright's
// and the one the cluster-autoscaler reads; it reports whether it changed
// anything.
func setRevision(annotations *map[string]string, revision int64) bool {
	v := strconv.FormatInt(revision, 10)
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	a := *annotations
	if a[v1alpha1.RevisionAnnotation] == v && a[v1alpha1.AutoscalerRevisionAnnotation] == v {
		return false
	}
	a[v1alpha1.RevisionAnnotation] = v
	a[v1alpha1.AutoscalerRevisionAnnotation] = v
	return true
}

// maxRevision is the highest revision among sets; 0 for none.
func maxRevision(sets []plan.Set) int64 {
	var m int64
	for _, s := range sets {
		m = max(m, s.Revision)
	}
	return m
}

// newSetRevision is the revision the new set must carry: one above every
// old set's. A set that becomes new again (a rollback, or a template
// changed back) is renumbered, so the newest revision is always the
// current template, as in Kubernetes.
func newSetRevision(current int64, old []plan.Set) int64 {
	if next := maxRevision(old) + 1; current < next {
		return next
	}
	return current
}

// previousRevision is what rollbackTo revision 0 means: the highest revision
// among sets other than the current template's (which has, or is about to
// get, the highest revision of all). 0 when there is none.
func previousRevision(old []plan.Set) int64 { return maxRevision(old) }

// historyEntry is an old set as the revision history limit sees it.
type historyEntry struct {
	Name     string
	Revision int64
	// Empty: no Machines, none wanted, and its controller has seen that.
	Empty bool
}

// historyToDelete names the old sets to delete so that at most limit old
// sets remain: the lowest revisions first, and only empty ones, so a set
// still holding Machines is kept even beyond the limit.
func historyToDelete(old []historyEntry, limit int32) []string {
	excess := len(old) - int(max(limit, 0))
	if excess <= 0 {
		return nil
	}
	sorted := append([]historyEntry(nil), old...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Revision != sorted[j].Revision {
			return sorted[i].Revision < sorted[j].Revision
		}
		return sorted[i].Name < sorted[j].Name
	})
	var out []string
	for _, e := range sorted {
		if len(out) == excess {
			break
		}
		if e.Empty {
			out = append(out, e.Name)
		}
	}
	return out
}
