package machine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// TestEveryCreateCode injects each machine error code into CreateMachine
// and checks the Machine does what the retry table says: retryable codes
// end Running, terminal ones Failed, ResourceExhausted backs off longer.
func TestEveryCreateCode(t *testing.T) {
	cases := []struct {
		code  string
		final v1alpha1.MachinePhase
	}{
		{"Unknown", v1alpha1.PhaseRunning},
		{"DeadlineExceeded", v1alpha1.PhaseRunning},
		{"Aborted", v1alpha1.PhaseRunning},
		{"Unavailable", v1alpha1.PhaseRunning},
		{"Canceled", v1alpha1.PhaseRunning},
		{"ResourceExhausted", v1alpha1.PhaseRunning},
		{"InvalidArgument", v1alpha1.PhaseFailed},
		{"AlreadyExists", v1alpha1.PhaseFailed},
		{"PermissionDenied", v1alpha1.PhaseFailed},
		{"FailedPrecondition", v1alpha1.PhaseFailed},
		{"OutOfRange", v1alpha1.PhaseFailed},
		{"Unimplemented", v1alpha1.PhaseFailed},
		{"Internal", v1alpha1.PhaseFailed},
		{"Unauthenticated", v1alpha1.PhaseFailed},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.Class("c", fmt.Sprintf(`{"region":"local","zones":["local-a"],"faults":{"create":{"code":%q,"count":1}}}`, tc.code))
			h.Machine("m", "c", nil)
			h.ExpectEvent("CreateFailed", "m")
			m := h.WaitPhase("m", tc.final, 30*time.Second)
			switch tc.final {
			case v1alpha1.PhaseFailed:
				if m.Status.FailureReason != machine.FailureCreateError || m.Status.LastOperation.ErrorCode != tc.code {
					t.Errorf("failure %q, lastOperation %+v; want CreateError with errorCode %s", m.Status.FailureReason, m.Status.LastOperation, tc.code)
				}
				// Whatever the failed create left behind goes with the Machine.
				h.DeleteMachine("m")
				h.WaitGone("m")
				if len(h.VMs("m")) != 0 {
					t.Error("deleting the Failed Machine left its VM behind")
				}
			case v1alpha1.PhaseRunning:
				if n := len(h.Sim.Cloud().History()); n != 1 {
					t.Errorf("%d VMs were ever created; want 1", n)
				}
			}
		})
	}
}

// TestEveryDeleteCode injects each code into DeleteMachine once: every one
// is retried (terminal ones slowly), and the Machine is only gone once the
// VM is.
func TestEveryDeleteCode(t *testing.T) {
	for _, code := range []string{"Unknown", "DeadlineExceeded", "Aborted", "Unavailable", "PermissionDenied", "Internal", "Unauthenticated", "FailedPrecondition"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.Class("c", fmt.Sprintf(`{"region":"local","zones":["local-a"],"faults":{"delete":{"code":%q,"count":1}}}`, code))
			h.Machine("m", "c", nil)
			h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
			h.DeleteMachine("m")
			h.ExpectEvent("DeleteFailed", "m")
			h.WaitGone("m")
			if len(h.VMs("m")) != 0 {
				t.Error("the Machine is gone but its VM is not")
			}
		})
	}
}

func TestInitializeIsRetriedUntilItSucceeds(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c", `{"region":"local","zones":["local-a"],"requireInitialization":true,"faults":{"initialize":{"code":"Uninitialized","count":2}}}`)
	h.Machine("m", "c", nil)
	h.ExpectEvent("InitializeFailed", "m")
	m := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	if vms := h.VMs("m"); len(vms) != 1 || !vms[0].Initialized {
		t.Fatalf("want one initialized VM, got %+v", vms)
	}
	if m.Status.LastOperation.State != v1alpha1.OperationSucceeded {
		t.Errorf("lastOperation = %+v", m.Status.LastOperation)
	}
}
