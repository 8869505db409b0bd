package e2e

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// chaos kills a manager with SIGKILL at random moments and starts it
// again at once, until stopped — whatever the manager is doing, start-up
// included.
type chaos struct {
	s     *scenario
	m     *manager
	kills atomic.Int32
	stopc chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	err   error
}

// startChaos starts killing m at intervals drawn from rng between min and
// max.
func (s *scenario) startChaos(m *manager, rng *rand.Rand, min, max time.Duration) *chaos {
	c := &chaos{s: s, m: m, stopc: make(chan struct{})}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		for {
			select {
			case <-c.stopc:
				return
			case <-time.After(min + time.Duration(rng.Int64N(int64(max-min)))):
			}
			if err := s.crashAndRestart(m); err != nil {
				c.mu.Lock()
				c.err = err
				c.mu.Unlock()
				return
			}
			c.kills.Add(1)
		}
	}()
	return c
}

// stop stops the chaos, waits until the manager is ready, and returns how
// many kills there were.
func (c *chaos) stop() int {
	c.s.t.Helper()
	close(c.stopc)
	c.done.Wait()
	if c.err != nil {
		c.s.t.Fatalf("chaos: %v", c.err)
	}
	c.s.waitReady(c.m)
	return int(c.kills.Load())
}
