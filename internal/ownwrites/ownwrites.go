// Package ownwrites remembers, per object, the resourceVersions a
// controller's own writes replaced, so that a reconcile reading the object
// from a cache that has not seen those writes yet can tell, and wait for
// the watch event instead of deciding from the old version.
//
// Such a reconcile is woken by another object's event (a Machine's Node
// registering, a budget's Machine turning unavailable) right after the
// controller's own write. What it computes from the old version loses to
// that write: a status write locked on the version read is refused
// (Conflict), costing the API server a request and the controller a
// requeue. Skipping the read instead costs nothing: the watch event of
// the controller's write is on its way and reconciles the object again
// (docs/architecture.md, "Writing objects").
package ownwrites

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Record holds, per object, the versions the controller's writes replaced.
// The zero Record is ready to use; it is safe for concurrent use.
type Record struct {
	mu sync.Mutex
	m  map[types.NamespacedName]versions
}

type versions struct {
	uid types.UID
	// replaced are versions our writes replaced; latest is the last one
	// we wrote.
	replaced map[string]bool
	latest   string
}

// Wrote notes that a reconcile's writes replaced the versions replaced
// (oldest first) and left the object at latest. gone: the writes removed
// the object's last finalizer, so it is going, and its last version is
// replaced too (nothing is left to reconcile at it). Otherwise latest is
// current, even after the removal of the controller's own finalizer: an
// object another controller's finalizer holds stays at that version until
// the other finalizer goes, and its next change is an event.
func (o *Record) Wrote(key types.NamespacedName, uid types.UID, replaced []string, latest string, gone bool) {
	if len(replaced) == 0 {
		return // it wrote nothing
	}
	if gone {
		replaced, latest = append(replaced, latest), ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[types.NamespacedName]versions{}
	}
	v := o.m[key]
	if v.uid != uid || v.latest != replaced[0] { // not a continuation of the writes recorded
		v = versions{uid: uid, replaced: map[string]bool{}}
	}
	for _, r := range replaced {
		v.replaced[r] = true
	}
	v.latest = latest
	o.m[key] = v
}

// Behind reports whether version of the object uid, as the cache shows
// it, is one our own writes have replaced. A version it does not know
// (ours or a newer one of someone else), or another object of the name,
// ends the record.
func (o *Record) Behind(key types.NamespacedName, uid types.UID, version string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.m[key]
	if !ok {
		return false
	}
	if v.uid == uid && v.replaced[version] {
		return true
	}
	delete(o.m, key)
	return false
}

// Forget drops the record of an object the cache no longer has.
func (o *Record) Forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, key)
}
