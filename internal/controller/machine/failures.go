package machine

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// failureMemory remembers each Machine's last failed driver operation in
// memory, next to the record in its status. The status alone is not
// enough to pace retries: the cache may not show the status write of the
// failure yet when the next reconcile reads the Machine, which would retry
// at once and count from one again; and the status keeps whole seconds,
// which would cut a short backoff. After a restart the status is all
// there is, and it is enough at the backoffs that matter by then.
type failureMemory struct {
	mu sync.Mutex
	m  map[types.UID]failureRecord
}

// failureRecord is one Machine's last failed operation.
type failureRecord struct {
	op       v1alpha1.MachineOperationType
	failures int32
	retryAt  time.Time
}

func (f *failureMemory) get(uid types.UID) (failureRecord, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec, ok := f.m[uid]
	return rec, ok
}

func (f *failureMemory) put(uid types.UID, rec failureRecord) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[types.UID]failureRecord{}
	}
	f.m[uid] = rec
}

func (f *failureMemory) forget(uid types.UID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, uid)
}

// catchUp makes s's last operation at least as far along as the memory
// says, so that the failure about to be recorded counts on from there.
func (f *failureMemory) catchUp(s *scope, op v1alpha1.MachineOperationType) {
	rec, ok := f.get(s.machine.UID)
	last := &s.machine.Status.LastOperation
	if !ok || rec.op != op {
		return
	}
	if last.Type != op || last.State != v1alpha1.OperationFailed || last.FailureCount < rec.failures {
		last.Type, last.State, last.FailureCount = op, v1alpha1.OperationFailed, rec.failures
	}
}
