package manager

import (
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// newRESTMapper is the manager's RESTMapper: controller-runtime's
// dynamic one, whose mappings found are kept (knownMappings).
func newRESTMapper(cfg *rest.Config, httpClient *http.Client) (meta.RESTMapper, error) {
	m, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return &knownMappings{RESTMapper: m, found: map[mappingKey]meta.RESTMapping{}}, nil
}

// knownMappings answers RESTMapping from the mappings it has found before.
// A cache of one namespace (--namespace) asks the mapper whether an
// object's kind is namespaced at every Get and List. The dynamic mapper
// asks each API group's mapper in turn, and each group without the kind
// answers with an error: over an N=5000 scale-up and its update's first
// minutes, these errors and the mappings were a quarter of the bytes the
// manager allocated (docs/benchmarks.md). What a kind maps to cannot
// change while its resource exists (a CRD's plural and scope are
// immutable), so a mapping once found is kept; an error is not, and the
// next call asks again (a CRD installed since is found).
type knownMappings struct {
	meta.RESTMapper
	mu    sync.RWMutex
	found map[mappingKey]meta.RESTMapping
}

type mappingKey struct {
	gk       schema.GroupKind
	versions string
}

// RESTMapping is the mapping of gk at the first of versions it has, as
// the mapper under it answers; each caller gets its own copy.
func (k *knownMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{gk, strings.Join(versions, ",")}
	k.mu.RLock()
	m, ok := k.found[key]
	k.mu.RUnlock()
	if ok {
		return &m, nil
	}
	found, err := k.RESTMapper.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.found[key] = *found
	k.mu.Unlock()
	return found, nil
}
