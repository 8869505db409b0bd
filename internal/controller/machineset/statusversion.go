package machineset

import "sync"

// statusVersions remembers, per MachineSet, the resourceVersion its last
// status write was made on. A reconcile that reads the set at that same
// version reads a cache that has not seen the write yet: a status written
// from it would be refused (Conflict, the status lock) and cost an API
// write for nothing, so the reconcile waits for the cache instead (the
// write's watch event wakes it). Memory only: a restart forgets it, which
// costs one refused write at most.
type statusVersions struct {
	mu sync.Mutex
	m  map[string]string
}

// wrote records that key's status was written on version from.
func (v *statusVersions) wrote(key, from string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]string{}
	}
	v.m[key] = from
}

// behind reports whether version is the one key's last status write was
// made on: the cache has not caught up with that write.
func (v *statusVersions) behind(key, version string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	from, ok := v.m[key]
	return ok && from == version
}

func (v *statusVersions) forget(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, key)
}
