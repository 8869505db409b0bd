package machine

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ownWrites remembers, per Machine, the resourceVersions this controller's
// own writes replaced. A reconcile woken by another object's event (its
// Node registering, its Node deleted) right after our write often reads
// the Machine from a cache that does not show that write yet: the status
// it computes would lose to it (the status lock, see scope.writer), and
// after the finalizer's removal it would run the deletion again for a
// Machine that is gone; either costs refused writes and a requeue. Such a
// read is skipped instead: the watch event of our own write (or of the
// Machine's deletion) is on its way and reconciles the Machine again
// (docs/architecture.md, "Writing objects").
type ownWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName]writtenVersions
}

type writtenVersions struct {
	uid types.UID
	// replaced are versions our writes replaced; latest is the last one
	// we wrote.
	replaced map[string]bool
	latest   string
}

// record notes that a reconcile's writes replaced the versions replaced
// (oldest first) and left the Machine at latest. After the removal of our
// finalizer, latest is current too: a Machine another controller's
// finalizer holds stays at that version until the other finalizer goes,
// and its reconcile has nothing to do (see reconcileDelete). Counting it
// as behind requeued that Machine every ConflictRetry for as long as the
// other finalizer stayed; its next change is an event. deleted: the
// writes removed the last finalizer, so the Machine is going, and its
// last version is replaced too (nothing is left to reconcile at it).
func (o *ownWrites) record(key types.NamespacedName, uid types.UID, replaced []string, latest string, deleted bool) {
	if len(replaced) == 0 {
		return // it wrote nothing
	}
	if deleted {
		replaced, latest = append(replaced, latest), ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[types.NamespacedName]writtenVersions{}
	}
	v := o.m[key]
	if v.uid != uid || v.latest != replaced[0] { // not a continuation of the writes recorded
		v = writtenVersions{uid: uid, replaced: map[string]bool{}}
	}
	for _, r := range replaced {
		v.replaced[r] = true
	}
	v.latest = latest
	o.m[key] = v
}

// behind reports whether version of the Machine uid, as the cache shows
// it, is one our own writes have replaced. A version it does not know
// (ours or a newer one of someone else), or another Machine of the name,
// ends the record.
func (o *ownWrites) behind(key types.NamespacedName, uid types.UID, version string) bool {
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

// forget drops the record of a Machine the cache no longer has.
func (o *ownWrites) forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, key)
}
