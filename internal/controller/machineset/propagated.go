package machineset

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// propagated remembers, per set and Machine, the version of the Machine
// found up to date with the set's template, and the set's generation it
// was checked against: a reconcile of a set checks each of its Machines
// at each Machine event, and upToDate's semantic comparisons were the
// largest part of a set's reconcile at 5000 Machines
// (docs/benchmarks.md). A Machine whose resourceVersion and whose set's
// uid and generation are those remembered has not changed since it was
// found up to date, nor has the template: it is up to date still. Any
// change of either checks it again.
type propagated struct {
	mu    sync.Mutex
	bySet map[types.NamespacedName]map[types.UID]propagatedAt
}

type propagatedAt struct {
	version    string
	set        types.UID
	generation int64
}

// upToDate is upToDate of m and ms's template, remembered.
func (p *propagated) upToDate(m *v1alpha1.Machine, ms *v1alpha1.MachineSet) bool {
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	at := propagatedAt{version: m.ResourceVersion, set: ms.UID, generation: ms.Generation}
	p.mu.Lock()
	known := at.version != "" && p.bySet[key][m.UID] == at
	p.mu.Unlock()
	if known {
		return true
	}
	if !upToDate(m, &ms.Spec.Template) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bySet == nil {
		p.bySet = map[types.NamespacedName]map[types.UID]propagatedAt{}
	}
	if p.bySet[key] == nil {
		p.bySet[key] = map[types.UID]propagatedAt{}
	}
	p.bySet[key][m.UID] = at
	return true
}

// prune keeps only the Machines the set owns now, when it remembers many
// more (Machines deleted or gone to another set).
func (p *propagated) prune(key types.NamespacedName, owned map[string]*v1alpha1.Machine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.bySet[key]
	if len(seen) <= len(owned)+64 {
		return
	}
	kept := make(map[types.UID]propagatedAt, len(owned))
	for _, m := range owned {
		if at, ok := seen[m.UID]; ok {
			kept[m.UID] = at
		}
	}
	p.bySet[key] = kept
}

// forget drops a set that is gone.
func (p *propagated) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.bySet, key)
}
