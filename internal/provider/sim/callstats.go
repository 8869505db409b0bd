package sim

import (
	"net/http"
	"sync"
)

// CallStats is how many CreateMachine and DeleteMachine calls of one
// class the sim has in flight now, and the most it had at once since it
// started: what a test of a class's spec.maxConcurrentCreates and
// spec.maxConcurrentDeletes watches (docs/concepts.md). A call is in
// flight from its start, through its injected latency, to its answer.
// Kept in memory only: a restarted sim starts from 0.
type CallStats struct {
	Creates    int `json:"creates"`
	MaxCreates int `json:"maxCreates"`
	Deletes    int `json:"deletes"`
	MaxDeletes int `json:"maxDeletes"`
}

// callCounter holds the CallStats of every class, by "namespace/name".
type callCounter struct {
	mu      sync.Mutex
	classes map[string]*CallStats
}

// enter counts a call of o for class in flight until the returned func
// is called.
func (c *callCounter) enter(class string, o op) (leave func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.classes == nil {
		c.classes = map[string]*CallStats{}
	}
	st := c.classes[class]
	if st == nil {
		st = &CallStats{}
		c.classes[class] = st
	}
	now, most := &st.Creates, &st.MaxCreates
	if o == opDelete {
		now, most = &st.Deletes, &st.MaxDeletes
	}
	*now++
	*most = max(*most, *now)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		*now--
	}
}

// stats returns the class's CallStats.
func (c *callCounter) stats(class string) CallStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.classes[class]; st != nil {
		return *st
	}
	return CallStats{}
}

// CallStats returns the calls of the class namespace/name in flight, and
// the most at once.
func (s *Sim) CallStats(namespace, name string) CallStats {
	return s.calls.stats(namespace + "/" + name)
}

// callStats serves GET /calls?namespace=&class=.
func (a *admin) callStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("namespace") == "" || q.Get("class") == "" {
		writeError(w, http.StatusBadRequest, "namespace and class are required")
		return
	}
	writeJSON(w, http.StatusOK, a.calls.stats(q.Get("namespace")+"/"+q.Get("class")))
}
