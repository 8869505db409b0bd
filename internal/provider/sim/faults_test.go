package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func withFaults(faults string) string {
	return `{"region":"local","zones":["local-a","local-b"],"faults":` + faults + `}`
}

// Count faults fail the first N calls of each Machine, then let calls through.
func TestCountFaultFailsTheFirstCallsPerMachine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults string
		call   func(s *Sim, mc string) error
		want   driver.Code
	}{
		{"create", `{"create":{"code":"Unavailable","count":2}}`, func(s *Sim, m string) error {
			_, err := create(s, machine(m, "c"), class("c", withFaults(`{"create":{"code":"Unavailable","count":2}}`)))
			return err
		}, driver.Unavailable},
		{"delete", `{"delete":{"code":"Aborted","count":2}}`, func(s *Sim, m string) error {
			return del(s, machine(m, "c"), class("c", withFaults(`{"delete":{"code":"Aborted","count":2}}`)))
		}, driver.Aborted},
		{"getStatus", `{"getStatus":{"code":"Internal","count":2}}`, func(s *Sim, m string) error {
			_, err := status(s, machine(m, "c"), class("c", withFaults(`{"getStatus":{"code":"Internal","count":2}}`)))
			if driver.CodeOf(err) == driver.NotFound {
				return nil // went through
			}
			return err
		}, driver.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestSim(t, Options{})
			for _, m := range []string{"m1", "m2"} {
				var codes []driver.Code
				for range 4 {
					codes = append(codes, driver.CodeOf(tc.call(s, m)))
				}
				want := []driver.Code{tc.want, tc.want, driver.OK, driver.OK}
				if fmt.Sprint(codes) != fmt.Sprint(want) {
					t.Fatalf("%s: codes %v; want %v", m, codes, want)
				}
			}
		})
	}
}

func TestInjectedErrorSaysWhereItComesFrom(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	_, err := create(s, machine("m1", "c"), class("c", withFaults(`{"create":{"code":"PermissionDenied"}}`)))
	wantCode(t, "always-failing create", err, driver.PermissionDenied)
	if msg := driver.MessageOf(err); !strings.Contains(msg, "providerSpec.faults.create") || !strings.Contains(msg, "default/m1") {
		t.Errorf("message %q does not say which fault and Machine", msg)
	}
	_, err = create(s, machine("m1", "c"), class("c", withFaults(`{"create":{"code":"Unauthenticated","message":"token expired"}}`)))
	if driver.MessageOf(err) != "token expired" {
		t.Errorf("custom message: %v", err)
	}
	if len(s.Cloud().History()) != 0 {
		t.Error("a failed create made a VM")
	}
}

// Probability faults are drawn from the seed: the same seed gives the same
// outcomes, another seed others, and about the right share fails.
func TestProbabilityFaultsAreDeterministic(t *testing.T) {
	outcomes := func(seed int) string {
		s, _ := newTestSim(t, Options{})
		mc := class("c", withFaults(fmt.Sprintf(`{"seed":%d,"getStatus":{"code":"Unavailable","probability":0.5}}`, seed)))
		var b strings.Builder
		for i := range 200 {
			_, err := status(s, machine(fmt.Sprintf("m%d", i%10), "c"), mc)
			if driver.CodeOf(err) == driver.Unavailable {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, again, other := outcomes(7), outcomes(7), outcomes(8)
	if a != again {
		t.Fatalf("seed 7 gave\n%s\nthen\n%s", a, again)
	}
	if a == other {
		t.Fatalf("seeds 7 and 8 gave the same outcomes")
	}
	if n := strings.Count(a, "x"); n < 70 || n > 130 {
		t.Fatalf("probability 0.5 failed %d of 200 calls", n)
	}
	for _, p := range []struct {
		prob string
		want string
	}{{"0", strings.Repeat(".", 20)}, {"1", strings.Repeat("x", 20)}} {
		s, _ := newTestSim(t, Options{})
		mc := class("c", withFaults(`{"getStatus":{"code":"Unavailable","probability":`+p.prob+`}}`))
		var b strings.Builder
		for range 20 {
			if _, err := status(s, machine("m", "c"), mc); driver.CodeOf(err) == driver.Unavailable {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		if b.String() != p.want {
			t.Errorf("probability %s: %s", p.prob, b.String())
		}
	}
}

// afterEffect: the create makes the VM but the caller sees an error, as
// with a lost response. The retry must find that VM, not make another.
func TestAfterEffectCreateStillMakesOneVM(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", withFaults(`{"create":{"code":"DeadlineExceeded","count":1,"afterEffect":true}}`))
	m := machine("m1", "c")
	_, err := create(s, m, mc)
	wantCode(t, "first create", err, driver.DeadlineExceeded)
	if vms := s.Cloud().MachineVMs("default", "m1"); len(vms) != 1 {
		t.Fatalf("the lost-response create made %d VMs; want 1", len(vms))
	}
	resp := mustCreate(t, s, m, mc)
	if resp.ProviderID != s.Cloud().MachineVMs("default", "m1")[0].ProviderID || len(s.Cloud().History()) != 1 {
		t.Fatalf("the retry did not return the VM the first call made: %+v, history %+v", resp, s.Cloud().History())
	}

	dmc := class("c", withFaults(`{"delete":{"code":"Unavailable","count":1,"afterEffect":true}}`))
	wantCode(t, "delete with a lost response", del(s, m, dmc), driver.Unavailable)
	if vms := s.Cloud().MachineVMs("default", "m1"); len(vms) != 0 {
		t.Fatalf("the lost-response delete left %d VMs", len(vms))
	}
}

func TestFaultsApplyOnlyToTheirOperation(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", withFaults(`{"list":{"code":"Unavailable"},"update":{"code":"Aborted"},"initialize":{"code":"Uninitialized"}}`))
	m := machine("m1", "c")
	resp := mustCreate(t, s, m, mc)
	if _, err := status(s, m, mc); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err := s.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: mc})
	wantCode(t, "list", err, driver.Unavailable)
	_, err = s.UpdateMachine(ctx, &driver.UpdateMachineRequest{Machine: m, ProviderID: resp.ProviderID, MachineClass: mc})
	wantCode(t, "update", err, driver.Aborted)
	_, err = s.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: m, MachineClass: mc})
	wantCode(t, "initialize", err, driver.Uninitialized)
	if err := del(s, m, mc); err != nil {
		t.Fatal(err)
	}
}

// Latency waits on the sim's clock, so a test steps through it instead of
// sleeping; jitter adds a deterministic share.
func TestLatencyWaitsOnTheClock(t *testing.T) {
	s, fc := newTestSim(t, Options{})
	mc := class("c", withFaults(`{"create":{"latency":"10s"}}`))
	done := make(chan error, 1)
	go func() {
		_, err := create(s, machine("m1", "c"), mc)
		done <- err
	}()
	testenv.Eventually(t, 30*time.Second, "the create to wait on the clock", func() (bool, error) { return s.waiting.Load() == 1, nil })
	fc.Step(9 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("create returned after 9s of 10s latency: %v", err)
	default:
	}
	fc.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Jitter adds a share of itself drawn from the seed: the call returns
// exactly when latency plus that share has passed on the clock.
func TestJitterIsDeterministicAndBounded(t *testing.T) {
	spec := withFaults(`{"seed":3,"create":{"latency":"1s","jitter":"1s"}}`)
	_, cs, err := parseProviderSpec([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	f := cs.faults.ops[opCreate]
	d1, d2 := f.delay(3, opCreate, "default/m1", 1), f.delay(3, opCreate, "default/m1", 2)
	if d1 != f.delay(3, opCreate, "default/m1", 1) || d1 == d2 || d1 < time.Second || d1 >= 2*time.Second || d2 < time.Second || d2 >= 2*time.Second {
		t.Fatalf("delays %v, %v", d1, d2)
	}
	s, fc := newTestSim(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := create(s, machine("m1", "c"), class("c", spec))
		done <- err
	}()
	testenv.Eventually(t, 30*time.Second, "the create to wait on the clock", func() (bool, error) { return s.waiting.Load() == 1, nil })
	fc.Step(d1 - time.Nanosecond)
	select {
	case err := <-done:
		t.Fatalf("create returned before its latency of %v: %v", d1, err)
	default:
	}
	fc.Step(time.Nanosecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A call whose context ends during the latency returns DeadlineExceeded or
// Canceled and has no effect.
func TestLatencyHonoursTheContext(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", withFaults(`{"create":{"latency":"1h"}}`))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := s.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: machine("m1", "c"), MachineClass: mc})
	wantCode(t, "create past its deadline", err, driver.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: machine("m2", "c"), MachineClass: mc})
		done <- err
	}()
	cancel()
	wantCode(t, "cancelled create", <-done, driver.Canceled)
	if len(s.Cloud().History()) != 0 {
		t.Fatal("a create that ran out of time made a VM")
	}
}

func TestOutageMakesEveryCallUnavailable(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", basicSpec)
	m := machine("m1", "c")
	resp := mustCreate(t, s, m, mc)
	ctx := context.Background()
	calls := map[string]func() error{
		"create": func() error { _, err := create(s, machine("m2", "c"), mc); return err },
		"initialize": func() error {
			_, err := s.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: m, MachineClass: mc})
			return err
		},
		"delete": func() error { return del(s, m, mc) },
		"status": func() error { _, err := status(s, m, mc); return err },
		"list": func() error {
			_, err := s.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: mc})
			return err
		},
		"volumes": func() error { _, err := s.GetVolumeIDs(ctx, &driver.GetVolumeIDsRequest{}); return err },
		"update": func() error {
			_, err := s.UpdateMachine(ctx, &driver.UpdateMachineRequest{Machine: m, ProviderID: resp.ProviderID, MachineClass: mc})
			return err
		},
	}
	s.Cloud().SetOutage(true)
	for name, call := range calls {
		wantCode(t, name+" during the outage", call(), driver.Unavailable)
	}
	if vms := s.Cloud().VMs(); len(vms) != 1 {
		t.Fatalf("calls during the outage changed the cloud: %+v", vms)
	}
	s.Cloud().SetOutage(false)
	for _, name := range []string{"status", "update", "initialize", "list", "volumes", "create", "delete"} {
		if err := calls[name](); err != nil {
			t.Errorf("%s after the outage: %v", name, err)
		}
	}
}

// A create placed in a zone out of capacity fails with ResourceExhausted
// and makes nothing; the other zone still works.
func TestOutOfCapacityZone(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", withFaults(`{"outOfCapacityZones":["local-b"]}`))
	var ok, exhausted int
	for i := range 10 {
		resp, err := create(s, machine(fmt.Sprintf("m%d", i), "c"), mc)
		switch driver.CodeOf(err) {
		case driver.OK:
			ok++
			if !strings.Contains(resp.ProviderID, "/local-a/") {
				t.Errorf("VM %s placed in the full zone", resp.ProviderID)
			}
		case driver.ResourceExhausted:
			exhausted++
			if !strings.Contains(driver.MessageOf(err), "local-b") {
				t.Errorf("message %q does not name the zone", driver.MessageOf(err))
			}
		default:
			t.Fatalf("create: %v", err)
		}
	}
	if ok == 0 || exhausted == 0 || len(s.Cloud().History()) != ok {
		t.Fatalf("%d created, %d exhausted, history %d", ok, exhausted, len(s.Cloud().History()))
	}
	only := class("full", `{"region":"local","zones":["local-a"],"faults":{"outOfCapacityZones":["local-a"]}}`)
	_, err := create(s, machine("x", "full"), only)
	wantCode(t, "create in the only, full zone", err, driver.ResourceExhausted)
}

func TestBootAndNodeFaultsSelectVMs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		faults        string
		neverJoins    string // per VM in creation order: x for selected
		goesNotReady  string
		notReadyAfter time.Duration
	}{
		{"boot failure, first one", `{"bootFailure":{"count":1}}`, "x...", "....", 0},
		{"boot failure, all", `{"bootFailure":{}}`, "xxxx", "....", 0},
		{"boot failure, none", `{"bootFailure":{"probability":0}}`, "....", "....", 0},
		{"not ready, first two", `{"nodeNotReady":{"after":"30s","count":2}}`, "....", "xx..", 30 * time.Second},
		{"not ready, all", `{"nodeNotReady":{"after":"1m"}}`, "....", "xxxx", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newTestSim(t, Options{})
			mc := class("c", withFaults(tc.faults))
			var joins, notReady strings.Builder
			for i := range 4 {
				mustCreate(t, s, machine(fmt.Sprintf("m%d", i), "c"), mc)
				vm := s.Cloud().MachineVMs("default", fmt.Sprintf("m%d", i))[0]
				joins.WriteString(map[bool]string{true: "x", false: "."}[vm.NeverJoins])
				notReady.WriteString(map[bool]string{true: "x", false: "."}[vm.NotReadyDelay != nil])
				if vm.NotReadyDelay != nil && *vm.NotReadyDelay != tc.notReadyAfter {
					t.Errorf("not ready after %v", *vm.NotReadyDelay)
				}
			}
			if joins.String() != tc.neverJoins || notReady.String() != tc.goesNotReady {
				t.Fatalf("never joins %s, goes NotReady %s; want %s, %s", joins.String(), notReady.String(), tc.neverJoins, tc.goesNotReady)
			}
		})
	}
}

func TestBootDelayAndJitter(t *testing.T) {
	s, _ := newTestSim(t, Options{})
	mc := class("c", `{"region":"local","zones":["local-a"],"bootDelay":"20s","bootJitter":"10s"}`)
	for i := range 20 {
		mustCreate(t, s, machine(fmt.Sprintf("m%d", i), "c"), mc)
	}
	distinct := map[time.Time]bool{}
	for _, vm := range s.Cloud().VMs() {
		d := vm.BootAt.Sub(vm.CreatedAt)
		if d < 20*time.Second || d >= 30*time.Second {
			t.Errorf("VM %s boots after %v", vm.ID, d)
		}
		if vm.Booted(epoch.Add(19*time.Second)) || !vm.Booted(epoch.Add(30*time.Second)) {
			t.Errorf("VM %s booted at the wrong time", vm.ID)
		}
		distinct[vm.BootAt] = true
	}
	if len(distinct) < 10 {
		t.Errorf("boot jitter gave only %d distinct boot times for 20 VMs", len(distinct))
	}
}
