package e2e

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestDriverErrors proves scenario 6(b): the manager follows the driver's
// retry table (pkg/driver, Classify) for error codes the out-of-process
// sim injects through its providerSpec faults, one MachineClass and one
// bare Machine per code:
//
//   - ResourceExhausted on the first 3 CreateMachine calls (RetryLong):
//     the Machine goes CrashLoopBackOff with lastOperation Create/Failed,
//     errorCode ResourceExhausted and a rising failureCount, is retried
//     until the fault's 3 calls are spent, then is Running with one VM.
//   - Unavailable on the first 3 CreateMachine calls (Retry): the same.
//   - Uninitialized from the first 2 InitializeMachine calls of a class
//     whose VMs require initialization: CrashLoopBackOff with
//     lastOperation Initialize/Failed and errorCode Uninitialized;
//     GetMachineStatus then answers Uninitialized, which leads to
//     InitializeMachine again (InitializeVM), and the Machine ends Running
//     with its VM initialized.
//   - InvalidArgument on every CreateMachine call (Terminal): the Machine
//     is Failed (failureReason CreateError) with lastOperation
//     Create/Failed, errorCode InvalidArgument and failureCount 1, and
//     stays so: no CrashLoopBackOff, no VM.
//
// Each failed call is counted once (failureCounts 1, 2, 3), and the calls
// are spaced by the retry table's backoff: from the first failure to the
// last at least the backoff floors (80% of the nominal waits, the rest is
// jitter), less the slack of the recorder seeing the first version later
// than it was written. A busy machine only makes the waits longer.
//
// Every Machine is then deleted, the Failed one included, leaving no VM.
func TestDriverErrors(t *testing.T) {
	s := newScenario(t, "drvfaults")
	s.startManager()
	rec := s.record()
	faults := []struct {
		name, spec string
		op         v1alpha1.MachineOperationType
		code       string
		failures   int32
		terminal   bool
		// minWait bounds from below the time from the first failure to
		// the last: the backoff floors (80% of 1s+2s long = 2.4s,
		// 200ms+400ms short = 480ms, 200ms = 160ms) less deliverySlack.
		minWait time.Duration
	}{
		{name: "exhausted", spec: faultSpec(`"create":{"code":"ResourceExhausted","count":3}`), op: v1alpha1.OperationCreate,
			code: "ResourceExhausted", failures: 3, minWait: 2400*time.Millisecond - deliverySlack},
		{name: "unavailable", spec: faultSpec(`"create":{"code":"Unavailable","count":3}`), op: v1alpha1.OperationCreate,
			code: "Unavailable", failures: 3, minWait: 480*time.Millisecond - deliverySlack},
		{name: "uninitialized", spec: `{"region":"local","zones":["local-a"],"bootDelay":"1s","requireInitialization":true,` +
			`"faults":{"initialize":{"code":"Uninitialized","count":2}}}`, op: v1alpha1.OperationInitialize,
			code: "Uninitialized", failures: 2, minWait: 160*time.Millisecond - deliverySlack},
		{name: "invalid", spec: faultSpec(`"create":{"code":"InvalidArgument"}`), op: v1alpha1.OperationCreate,
			code: "InvalidArgument", failures: 1, terminal: true},
	}
	machine := func(name string) string { return s.ns + "-" + name }
	for _, f := range faults {
		s.createClass(f.name, f.spec)
		s.create(&v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: machine(f.name), Namespace: s.ns},
			Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: f.name}},
		})
	}

	s.eventually(3*time.Minute, "every Machine Running, or Failed for InvalidArgument", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		for _, m := range ms {
			want := v1alpha1.PhaseRunning
			if m.Name == machine("invalid") {
				want = v1alpha1.PhaseFailed
			}
			if m.Status.Phase != want {
				return false, fmt.Errorf("%s is %s (%s)", m.Name, m.Status.Phase, m.Status.LastOperation.Description)
			}
		}
		return len(ms) == len(faults), nil
	})
	// A wrongly retried terminal failure would show within the long
	// backoff's cap (4s): the Machine must stay Failed after one call.
	s.consistently(5*time.Second, "the InvalidArgument Machine stays Failed after one call", func() error {
		ms, err := s.machines()
		if err != nil {
			return err
		}
		for _, m := range ms {
			if op := m.Status.LastOperation; m.Name == machine("invalid") &&
				(m.Status.Phase != v1alpha1.PhaseFailed || op.FailureCount != 1 || lastCall(rec.versionsOf(m.Name)) > 1) {
				return fmt.Errorf("%s is %s, lastOperation %+v", m.Name, m.Status.Phase, op)
			}
		}
		return nil
	})

	for _, f := range faults {
		name := machine(f.name)
		vs := rec.versionsOf(name)
		var counts []int32
		var first, last time.Time
		for _, v := range vs {
			op := v.op
			if op.Type != f.op || op.State != v1alpha1.OperationFailed {
				continue
			}
			if op.ErrorCode != f.code {
				t.Errorf("%s: lastOperation %s failed with %q, want %s: %s", name, op.Type, op.ErrorCode, f.code, op.Description)
			}
			if len(counts) == 0 || counts[len(counts)-1] != op.FailureCount {
				counts = append(counts, op.FailureCount)
				if first.IsZero() {
					first = v.seen
				}
				last = v.seen
			}
		}
		var want []int32
		for i := int32(1); i <= f.failures; i++ {
			want = append(want, i)
		}
		// The Machine failed exactly as often as the fault says, each
		// failure counted once.
		if !f.terminal {
			if calls := lastCall(vs); calls != int(f.failures) {
				t.Errorf("%s: the last failed call was number %d, want %d; versions:\n%s", name, calls, f.failures, describeVersions(vs))
			}
		}
		if !slices.Equal(counts, want) {
			t.Errorf("%s: observed failureCounts %v of %s/%s, want %v (one per failed call); versions:\n%s", name, counts, f.op, f.code, want, describeVersions(vs))
		}
		phases := phasesOfVersions(vs)
		if f.terminal {
			final := vs[len(vs)-1]
			if final.failureReason != "CreateError" || final.op.ErrorCode != f.code || final.op.FailureCount != 1 {
				t.Errorf("%s: ended with failureReason %q, lastOperation %+v; want CreateError after one %s", name, final.failureReason, final.op, f.code)
			}
			if slices.Contains(phases, v1alpha1.PhaseCrashLoopBackOff) || slices.Contains(phases, v1alpha1.PhaseRunning) {
				t.Errorf("%s: went through %v; a terminal code must fail the Machine at once", name, phases)
			}
			continue
		}
		if !slices.Contains(phases, v1alpha1.PhaseCrashLoopBackOff) {
			t.Errorf("%s: went through %v, never CrashLoopBackOff", name, phases)
		}
		if waited := last.Sub(first); waited < f.minWait {
			t.Errorf("%s: %d failures within %s, want the backoff to space them by at least %s in all; versions:\n%s", name, f.failures, waited, f.minWait, describeVersions(vs))
		} else {
			t.Logf("%s: failures 1..%d observed over %s", name, f.failures, waited.Round(10*time.Millisecond))
		}
	}

	vms, err := s.vms()
	if err != nil {
		t.Fatal(err)
	}
	for _, vm := range vms {
		if vm.MachineName == machine("uninitialized") && !vm.Initialized {
			t.Errorf("the VM of %s is not initialized: InitializeMachine never succeeded", vm.MachineName)
		}
	}
	hist := s.checkNoDuplicateVMs()
	for _, h := range hist {
		if h.MachineName == machine("invalid") {
			t.Errorf("the Machine failed with InvalidArgument got VM %s", h.ID)
		}
	}
	if len(hist) != len(faults)-1 {
		t.Errorf("the sim made %d VMs, want %d (one per Machine but the invalid one)", len(hist), len(faults)-1)
	}

	for _, f := range faults {
		s.deleteMachine(machine(f.name))
	}
	s.waitFleet(0, "", time.Minute)
	rec.verify()
}

// deliverySlack is how much later the recorder may see a Machine's first
// failure than its last, relative to when they were written: on a busy
// machine a watch event can wait that long for the recorder's goroutine.
const deliverySlack = 100 * time.Millisecond

// faultSpec is simSpec with the given faults.
func faultSpec(faults string) string {
	return `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","faults":{` + faults + `}}`
}

// phasesOfVersions is the sequence of distinct phases of a Machine's versions.
func phasesOfVersions(vs []machineVersion) []v1alpha1.MachinePhase {
	var out []v1alpha1.MachinePhase
	for _, v := range vs {
		if v.phase != "" && (len(out) == 0 || out[len(out)-1] != v.phase) {
			out = append(out, v.phase)
		}
	}
	return out
}

// describeVersions is a line per observed version of a Machine, for
// failure messages.
func describeVersions(vs []machineVersion) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s rv %d %s: %s/%s code=%s count=%d updated=%s %q\n", v.seen.Format("15:04:05.000"), v.rv, v.phase,
			v.op.Type, v.op.State, v.op.ErrorCode, v.op.FailureCount, v.op.LastUpdateTime.Format("15:04:05"), v.op.Description)
	}
	return b.String()
}

// lastCall is the highest call number the sim's fault messages ("call N
// of the first M") name in a Machine's observed lastOperations.
func lastCall(vs []machineVersion) int {
	n := 0
	for _, v := range vs {
		_, rest, ok := strings.Cut(v.op.Description, "(call ")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, " ")
		if c, err := strconv.Atoi(num); err == nil && c > n {
			n = c
		}
	}
	return n
}
