package sim

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// op names a driver method that faults can be injected into; the names
// are the providerSpec's faults fields.
type op string

const (
	opCreate     op = "create"
	opInitialize op = "initialize"
	opDelete     op = "delete"
	opGetStatus  op = "getStatus"
	opList       op = "list"
	opUpdate     op = "update"
)

// verdict is what the faults decided for one call.
type verdict struct {
	// err is the injected error, nil when the call goes through.
	err error
	// afterEffect: the call takes effect before err is returned.
	afterEffect bool
}

// fault waits the latency configured for the operation and decides
// whether the call fails. key is what "per machine" counts are kept by: the
// Machine's key, or the class's for List. The returned error is not nil
// only when ctx ended during the latency.
func (s *Sim) fault(ctx context.Context, cs *classSpec, o op, key string) (verdict, error) {
	f := cs.faults.ops[o]
	if f == nil {
		return verdict{}, nil
	}
	seed := cs.faults.seed
	n := 0
	if f.jitter > 0 || (f.fail && !f.sel.always()) {
		s.cloud.mu.Lock()
		n = s.cloud.nextCallLocked(o, key)
		s.cloud.mu.Unlock()
		s.cloud.dirty()
	}
	call := strconv.Itoa(n)
	if err := s.wait(ctx, f.delay(seed, o, key, n)); err != nil {
		return verdict{}, err
	}
	if !f.fail {
		return verdict{}, nil
	}
	hit := true
	switch {
	case f.sel.count >= 0:
		hit = n <= f.sel.count
	case f.sel.probability >= 0:
		hit = unit(seed, string(o), "fail", key, call) < f.sel.probability
	}
	if !hit {
		return verdict{}, nil
	}
	msg := f.message
	if msg == "" {
		msg = "injected by providerSpec.faults." + string(o) + ": " + string(o) + " of " + key + " fails with " + f.code.String()
		if f.sel.count >= 0 {
			msg += " (call " + call + " of the first " + strconv.Itoa(f.sel.count) + ")"
		}
	}
	return verdict{err: driver.Errorf(f.code, "%s", msg), afterEffect: f.afterEffect}, nil
}

// delay is the latency of call n of the operation for key: latency plus a
// share of jitter drawn from the seed.
func (f *opFault) delay(seed int64, o op, key string, n int) time.Duration {
	d := f.latency
	if f.jitter > 0 {
		d += time.Duration(unit(seed, string(o), "jitter", key, strconv.Itoa(n)) * float64(f.jitter))
	}
	return d
}

// wait waits d on the sim's clock, or until ctx ends.
func (s *Sim) wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	if d <= 0 {
		return nil
	}
	t := s.clock.NewTimer(d)
	defer t.Stop()
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctxError(ctx.Err())
	}
}

// ctxError gives a context's end its machine error code.
func ctxError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return driver.Errorf(driver.DeadlineExceeded, "the call's deadline passed before the sim cloud answered")
	}
	return driver.Errorf(driver.Canceled, "the call was canceled before the sim cloud answered")
}
