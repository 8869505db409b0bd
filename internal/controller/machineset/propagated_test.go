package machineset

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// A Machine found up to date is not compared again until it or its set's
// template changes; one found behind is compared every time, and a set
// that is gone or a memory grown past its Machines is dropped.
func TestPropagatedRemembers(t *testing.T) {
	var p propagated
	ms := &v1alpha1.MachineSet{}
	ms.Name, ms.Namespace, ms.UID, ms.Generation = "s", "ns", "set-1", 1
	ms.Spec.Template.Metadata.Labels = map[string]string{"tier": "a"}
	m := &v1alpha1.Machine{}
	m.UID, m.ResourceVersion = "m-1", "10"
	m.Labels = map[string]string{"tier": "a"}
	if !p.upToDate(m, ms) {
		t.Fatal("a Machine with the template's labels is not up to date")
	}
	// Changed behind the memory's back with the same version: only a
	// version or generation change makes it look again (the cache's
	// objects never change without a new resourceVersion).
	m.Labels = nil
	if !p.upToDate(m, ms) {
		t.Error("the same version was compared again")
	}
	m.ResourceVersion = "11"
	if p.upToDate(m, ms) {
		t.Error("a new version without the label is up to date")
	}
	m.Labels = map[string]string{"tier": "a"}
	if !p.upToDate(m, ms) {
		t.Fatal("the new version with the label is not up to date")
	}
	ms.Generation = 2
	ms.Spec.Template.Metadata.Labels = map[string]string{"tier": "b"}
	if p.upToDate(m, ms) {
		t.Error("a new template was not compared")
	}
	m.ResourceVersion = ""
	m.Labels = map[string]string{"tier": "b"}
	p.upToDate(m, ms)
	m.Labels = nil
	if p.upToDate(m, ms) {
		t.Error("a Machine without a version was remembered")
	}
	key := types.NamespacedName{Namespace: ms.Namespace, Name: ms.Name}
	for i := range 100 {
		o := &v1alpha1.Machine{}
		o.UID, o.ResourceVersion = types.UID(fmt.Sprint("x", i)), "1"
		o.Labels = map[string]string{"tier": "b"}
		p.upToDate(o, ms)
	}
	p.prune(key, map[string]*v1alpha1.Machine{})
	if n := len(p.bySet[key]); n != 0 {
		t.Errorf("%s remembers %d Machines after a prune to none", key, n)
	}
	p.upToDate(m, ms)
	p.forget(key)
	if _, ok := p.bySet[key]; ok {
		t.Error("a set forgotten is remembered")
	}
}
