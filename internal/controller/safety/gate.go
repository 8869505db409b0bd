package safety

import (
	"sort"
	"strings"
	"sync"
)

// Freeze is the manager-wide freeze the machine controller consults (it
// implements machine.Gate). Each reason is set and cleared by its owner;
// the manager is frozen while any is set.
type Freeze struct {
	mu      sync.RWMutex
	reasons map[string]string
}

// Frozen reports whether any reason is set, and all of them.
func (f *Freeze) Frozen() (bool, string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.reasons) == 0 {
		return false, ""
	}
	why := make([]string, 0, len(f.reasons))
	for _, r := range f.reasons {
		why = append(why, r)
	}
	sort.Strings(why)
	return true, strings.Join(why, "; ")
}

// set records (why non-empty) or clears (why empty) the reason of key and
// keeps the millwright_frozen gauge in step.
func (f *Freeze) set(key, why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reasons == nil {
		f.reasons = map[string]string{}
	}
	if why == "" {
		delete(f.reasons, key)
	} else {
		f.reasons[key] = why
	}
	if len(f.reasons) > 0 {
		frozenGauge.Set(1)
	} else {
		frozenGauge.Set(0)
	}
}
