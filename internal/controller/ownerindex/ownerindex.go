// Package ownerindex holds the cache indexes several controllers share.
// The first is the one index of objects by their controller (the owner
// reference with controller=true): a MachineSet lists its own Machines
// and the orphans it may adopt, a MachineDeployment its MachineSets,
// without reading every object of the namespace. The others are by the
// MachineClass an object uses (ClassIndex) and by providerID
// (ProviderIDIndex).
//
// The index is by the controller's UID, not its name: an object belongs to
// the owner whose UID its reference holds, so the objects of a namesake
// deleted earlier never show up as another's.
package ownerindex

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Name is the index's name in the manager's cache.
const Name = "millwright.controller.uid"

// orphanKey is the index value of objects without a controller. No UID
// looks like it; callers check the owner of what they get anyway.
const orphanKey = "<no-controller>"

// registered remembers, per cache, kind and index name, that an index is
// there: several controllers of one manager need the same index, and a
// cache refuses a second index of the same name on a kind.
var (
	mu         sync.Mutex
	registered = map[client.FieldIndexer]map[indexOf]bool{}
)

type indexOf struct {
	kind reflect.Type
	name string
}

// Register adds the index on each kind of objs to mgr's cache, unless an
// earlier Register already did.
func Register(ctx context.Context, mgr ctrl.Manager, objs ...client.Object) error {
	return register(ctx, mgr, Name, "controller", key, objs)
}

// register adds the index name (of what, for errors), whose values fn
// gives, on each kind of objs to mgr's cache, unless it is there.
func register(ctx context.Context, mgr ctrl.Manager, name, what string, fn client.IndexerFunc, objs []client.Object) error {
	idx := mgr.GetFieldIndexer()
	mu.Lock()
	defer mu.Unlock()
	if registered[idx] == nil {
		registered[idx] = map[indexOf]bool{}
	}
	for _, obj := range objs {
		k := indexOf{reflect.TypeOf(obj), name}
		if registered[idx][k] {
			continue
		}
		if err := idx.IndexField(ctx, obj, name, fn); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", obj, what, err)
		}
		registered[idx][k] = true
	}
	return nil
}

// key is the index value of o: its controller's UID, else orphanKey.
func key(o client.Object) []string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{orphanKey}
}

// ControlledBy selects, in a List, the objects whose controller has UID
// uid.
func ControlledBy(uid types.UID) client.MatchingFields {
	return client.MatchingFields{Name: string(uid)}
}

// Orphans selects, in a List, the objects without a controller.
func Orphans() client.MatchingFields {
	return client.MatchingFields{Name: orphanKey}
}
