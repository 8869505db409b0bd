package machine

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// ownWrites remembers, per Machine, the resourceVersions this controller's
// own writes replaced. A reconcile woken by another object's event (its
// Node registering) right after our write often reads the Machine from a
// cache that does not show that write yet: the status it computes would
// lose to it (the status lock, see scope.writer) and cost a refused write
// and a requeue. Such a read is skipped instead: the watch event of our
// own write is on its way and reconciles the Machine again
// (docs/architecture.md, "Writing objects").
type ownWrites struct {
	mu sync.Mutex
	m  map[types.UID]writtenVersions
}

type writtenVersions struct {
	// replaced are versions our writes replaced; latest is the last one we wrote.
	replaced map[string]bool
	latest   string
}

// record notes that a reconcile's writes replaced the versions replaced
// (oldest first) and left the Machine at latest.
func (o *ownWrites) record(uid types.UID, replaced []string, latest string) {
	if len(replaced) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[types.UID]writtenVersions{}
	}
	v := o.m[uid]
	if v.latest != replaced[0] { // not a continuation of the writes recorded
		v = writtenVersions{replaced: map[string]bool{}}
	}
	for _, r := range replaced {
		v.replaced[r] = true
	}
	v.latest = latest
	o.m[uid] = v
}

// behind reports whether version, as the cache shows it, is one our own
// writes have replaced. A version it does not know (ours or a newer one
// of someone else) ends the record.
func (o *ownWrites) behind(uid types.UID, version string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.m[uid]
	if !ok {
		return false
	}
	if v.replaced[version] {
		return true
	}
	delete(o.m, uid)
	return false
}

// forget drops the Machine's record (it is gone).
func (o *ownWrites) forget(uid types.UID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, uid)
}
