package manager

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// groupMappers is a mapper as the dynamic one is made: one mapper per API
// group, asked in turn, the Machines' group last.
func groupMappers() meta.RESTMapper {
	var groups meta.MultiRESTMapper
	for _, g := range []string{"", "apps", "coordination.k8s.io", "storage.k8s.io", "policy", "events.k8s.io", "machine.millwright.dev"} {
		gv := schema.GroupVersion{Group: g, Version: "v1"}
		m := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
		m.Add(gv.WithKind("Kind"+g), meta.RESTScopeNamespace)
		groups = append(groups, m)
	}
	return meta.PriorityRESTMapper{Delegate: groups}
}

var machineKind = schema.GroupKind{Group: "machine.millwright.dev", Kind: "Kindmachine.millwright.dev"}

// countingMapper counts the RESTMapping calls that reach it, and fails
// them while missing is set, as a mapper does before a CRD is installed.
type countingMapper struct {
	meta.RESTMapper
	calls   int
	missing bool
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.calls++
	if c.missing {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return c.RESTMapper.RESTMapping(gk, versions...)
}

func TestKnownMappingsKeepWhatWasFoundOnly(t *testing.T) {
	under := &countingMapper{RESTMapper: groupMappers(), missing: true}
	k := &knownMappings{RESTMapper: under, found: map[mappingKey]meta.RESTMapping{}}

	if _, err := k.RESTMapping(machineKind, "v1"); !meta.IsNoMatchError(err) {
		t.Fatalf("before the kind exists: %v, want no match", err)
	}
	under.missing = false // the CRD is installed: the error was not kept
	first, err := k.RESTMapping(machineKind, "v1")
	if err != nil {
		t.Fatal(err)
	}
	first.Resource.Resource = "changed by a caller"
	again, err := k.RESTMapping(machineKind, "v1")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := groupMappers().RESTMapping(machineKind, "v1")
	if *again != *want {
		t.Errorf("kept mapping %+v, want %+v (a caller's change must not reach the next)", again, want)
	}
	if under.calls != 2 {
		t.Errorf("the mapper under it was asked %d times, want 2 (the error, then the mapping, once)", under.calls)
	}
	if _, err := k.RESTMapping(machineKind, "v2"); err == nil || !errors.As(err, new(*meta.NoKindMatchError)) {
		t.Errorf("another version: %v, want no match (the key holds the versions)", err)
	}
}

// BenchmarkRESTMapping asks for a Machine's mapping, as a cache of one
// namespace does at every Get and List: the dynamic mapper's group
// mappers, and the same with the mappings kept.
func BenchmarkRESTMapping(b *testing.B) {
	for _, bc := range []struct {
		name   string
		mapper meta.RESTMapper
	}{
		{"groups", groupMappers()},
		{"known", &knownMappings{RESTMapper: groupMappers(), found: map[mappingKey]meta.RESTMapping{}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.mapper.RESTMapping(machineKind, "v1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
