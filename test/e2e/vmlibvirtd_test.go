package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestVMLibvirtdRestart proves that libvirtd restarted (SIGTERM, as a
// service manager's restart or a package upgrade does) in the middle of a
// rolling update loses nothing: the VMs keep running through it (QEMU is
// not libvirtd's child; the same QEMU processes run before and after),
// millwright-libvirt reconnects (/readyz ok again), the rollout completes
// with one domain per Machine, and no domain, volume or Node is lost or
// duplicated. The test needs the libvirtd TestMain started: it fails, saying
// so, when libvirtd was already running.
func TestVMLibvirtdRestart(t *testing.T) {
	const replicas = 2
	if err := daemons.CanRestartLibvirtd(); err != nil {
		t.Fatalf("FAIL: this test restarts libvirtd: %v", err)
	}
	s := newVMScenario(t, "vmlvrestart")
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t))
	s.createVMClass("small", smallVM)
	s.createVMClass("large", largeVM)
	s.createTokenBootstrapTemplate("join")
	rec := s.record()
	s.createDeploymentOf(replicas, vmMachineSpec("small", "join"), 1, 0)
	s.waitFleet(replicas, "small", 8*time.Minute)
	vols, err := s.vm.volumes()
	if err != nil {
		t.Fatal(err)
	}
	volsPerVM := len(vols) / replicas

	// Mid-rollout: the surge Machine's VM runs, the old ones too (maxUnavailable 0).
	stopCheck := rec.addCheck(withinRollingBounds(replicas, 1, 0))
	s.rollTo("large")
	var before map[string]qemuOf // by Machine
	s.eventually(3*time.Minute, "the surge Machine's VM running", func() (bool, error) {
		var err error
		before, err = s.runningQEMUs()
		if err != nil {
			return false, err
		}
		for _, q := range before {
			if q.class == "large" {
				return true, nil
			}
		}
		return false, fmt.Errorf("QEMUs %v", before)
	})
	t.Logf("QEMU per Machine before the restart: %v", before)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	if err := daemons.RestartLibvirtd(ctx); err != nil {
		t.Fatalf("FAIL: restarting libvirtd: %v", err)
	}
	t.Logf("libvirtd restarted in %s", time.Since(began).Round(time.Millisecond))

	// Each QEMU of before still runs, unless the rollout deleted its Machine.
	for machine, q := range before {
		if qemuRuns(q) {
			continue
		}
		m := &v1alpha1.Machine{}
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: machine}, m)
		if err == nil && m.DeletionTimestamp == nil {
			t.Errorf("the QEMU (pid %d) of Machine %s died with libvirtd, and the Machine was not being deleted", q.pid, machine)
		}
	}
	if err := s.vm.connect(); err != nil {
		t.Fatalf("reconnecting to the restarted libvirtd: %v", err)
	}
	s.eventually(2*time.Minute, "millwright-libvirt's /readyz ok again", func() (bool, error) {
		code, body, err := s.vm.driverReadyz()
		return err == nil && code == 200, fmt.Errorf("/readyz %d %q (%v)", code, body, err)
	})

	rolled := s.waitFleet(replicas, "large", 10*time.Minute)
	stopCheck()
	after, err := s.runningQEMUs()
	if err != nil {
		t.Fatal(err)
	}
	// The surge Machine of before stays, with the same QEMU; no Machine
	// failed on the way (the old ones were deleted by the rollout).
	for name, b := range before {
		if b.class != "large" {
			continue
		}
		if !slices.ContainsFunc(rolled, func(m v1alpha1.Machine) bool { return m.Name == name }) {
			t.Errorf("Machine %s, whose VM ran before the restart, was replaced: %v", name, rec.phasesOf()[name])
		} else if after[name].pid != b.pid {
			t.Errorf("Machine %s's QEMU was pid %d before the restart, %d after: its VM was remade", name, b.pid, after[name].pid)
		}
	}
	for name, seq := range rec.phasesOf() {
		if slices.Contains(seq, v1alpha1.PhaseFailed) || slices.Contains(seq, v1alpha1.PhaseUnknown) {
			t.Errorf("Machine %s went through %v across the libvirtd restart", name, seq)
		}
	}
	if len(after) != replicas {
		t.Errorf("%d QEMU processes after the rollout, want %d: %v", len(after), replicas, after)
	}
	s.eventually(time.Minute, "one volume set and one Node per VM", func() (bool, error) {
		vols, err := s.vm.volumes()
		if err != nil {
			return false, err
		}
		nodes, err := s.scenarioNodes()
		if err != nil {
			return false, err
		}
		return len(vols) == replicas*volsPerVM && len(nodes) == replicas, fmt.Errorf("volumes %v, Nodes %v", vols, nodes)
	})
	s.checkJoinedThroughCSR(rolled)
	s.scale(0)
	s.waitFleet(0, "large", 5*time.Minute)
	rec.verify()
}

// qemuOf is the QEMU process of a Machine's domain.
type qemuOf struct {
	domain, class string
	pid           int
}

func (q qemuOf) String() string { return fmt.Sprintf("%s(%s) pid %d", q.domain, q.class, q.pid) }

// runningQEMUs maps each Machine of the scenario whose domain runs to its
// QEMU process.
func (s *scenario) runningQEMUs() (map[string]qemuOf, error) {
	doms, err := s.vm.domains()
	if err != nil {
		return nil, err
	}
	out := map[string]qemuOf{}
	for _, d := range doms {
		if !d.active {
			continue
		}
		pid, err := qemuPID(d.name)
		if err != nil {
			return nil, err
		}
		out[d.meta.Name] = qemuOf{domain: d.name, class: d.meta.ClassName, pid: pid}
	}
	return out, nil
}

// qemuRuns reports whether q's process still runs the same domain.
func qemuRuns(q qemuOf) bool {
	if err := syscall.Kill(q.pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	cmd, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(q.pid), "cmdline"))
	return err == nil && strings.Contains(string(cmd), "guest="+q.domain+",")
}
