package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// A sim restarted from its snapshot is the same cloud: same VMs, history,
// fault counters, classes seen and outage switch, and creates stay
// idempotent across the restart.
func TestSnapshotRestoresTheCloud(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	a, _ := newTestSim(t, Options{SnapshotPath: path})
	mc := class("c", withFaults(`{"getStatus":{"code":"Unavailable","count":2}}`))
	m1 := mustCreate(t, a, machine("m1", "c"), mc)
	mustCreate(t, a, machine("m2", "c"), mc)
	if err := del(a, machine("m2", "c"), mc); err != nil {
		t.Fatal(err)
	}
	orphan, err := a.Cloud().CreateOrphan(OrphanRequest{Namespace: "default", ClassName: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Cloud().KillVM(idFromProviderID(m1.ProviderID)); err != nil {
		t.Fatal(err)
	}
	_, err = status(a, machine("m1", "c"), mc) // the first of two injected failures
	wantCode(t, "first status", err, driver.Unavailable)
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}

	b, _ := newTestSim(t, Options{SnapshotPath: path})
	if !reflect.DeepEqual(a.Cloud().VMs(), b.Cloud().VMs()) {
		t.Fatalf("VMs differ after restart:\n%+v\n%+v", a.Cloud().VMs(), b.Cloud().VMs())
	}
	if !reflect.DeepEqual(a.Cloud().History(), b.Cloud().History()) {
		t.Fatalf("history differs after restart")
	}
	if vm, _ := b.Cloud().VM(idFromProviderID(m1.ProviderID)); vm.State != VMStopped {
		t.Errorf("the killed VM came back %s", vm.State)
	}
	// The fault counter survived: one more failure, then through.
	_, err = status(b, machine("m1", "c"), mc)
	wantCode(t, "second status", err, driver.Unavailable)
	if _, err := status(b, machine("m1", "c"), mc); err != nil {
		t.Fatalf("third status: %v", err)
	}
	again := mustCreate(t, b, machine("m1", "c"), mc)
	if again.ProviderID != m1.ProviderID || len(b.Cloud().History()) != 3 {
		t.Fatalf("create after restart: %+v; history %d", again, len(b.Cloud().History()))
	}
	// m2's next VM does not reuse the deleted VM's ID, and the indexes
	// (IPs, zones, classes) were rebuilt.
	m2 := mustCreate(t, b, machine("m2", "c"), mc)
	if m2.ProviderID == a.Cloud().History()[1].ProviderID {
		t.Fatal("a deleted VM's ID was reused after restart")
	}
	list, err := b.ListMachines(context.Background(), &driver.ListMachinesRequest{MachineClass: mc})
	if err != nil || len(list.MachineNames()) != 3 || list.MachineNames()[orphan.ProviderID] != orphan.MachineName {
		t.Fatalf("ListMachines after restart: %v, %v", list, err)
	}
	// The class was remembered: an orphan of it needs no providerSpec.
	if _, err := b.Cloud().CreateOrphan(OrphanRequest{Namespace: "default", ClassName: "c"}); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotIsSavedWhenTheCloudChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	s, fc := newTestSim(t, Options{SnapshotPath: path, SnapshotInterval: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- s.Start(ctx) }()
	mustCreate(t, s, machine("m1", "c"), class("c", basicSpec))
	// Saves are at least SnapshotInterval apart on the sim's clock.
	testenv.Eventually(t, 30*time.Second, "the snapshot to hold m1", func() (bool, error) {
		fc.Step(time.Second)
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var snap Snapshot
		if err := json.Unmarshal(data, &snap); err != nil {
			return false, err
		}
		return len(snap.VMs) == 1 && snap.VMs[0].MachineName == "m1", nil
	})
	cancel()
	if err := <-stopped; err != nil {
		t.Fatalf("Start: %v", err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestBadSnapshotIsAnError(t *testing.T) {
	for name, content := range map[string]string{
		"not JSON":        `{"version":1,`,
		"other version":   `{"version":99}`,
		"VM without ID":   `{"version":1,"history":[{"id":"vm-1"}],"vms":[{"nodeName":"n"}]}`,
		"VM twice":        `{"version":1,"history":[{"id":"vm-1"}],"vms":[{"id":"vm-1","nodeName":"n"},{"id":"vm-1","nodeName":"n"}]}`,
		"VM not recorded": `{"version":1,"history":[],"vms":[{"id":"vm-1","nodeName":"n"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sim.json")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := New(Options{SnapshotPath: path}); err == nil {
				t.Fatal("New accepted a bad snapshot")
			}
		})
	}
	// A missing file is a new, empty cloud.
	s, err := New(Options{SnapshotPath: filepath.Join(t.TempDir(), "absent.json")})
	if err != nil || len(s.Cloud().VMs()) != 0 {
		t.Fatalf("New without a snapshot file: %v", err)
	}
}

// BenchmarkSaveSnapshot5000 saves a cloud of 5000 VMs, the size of the
// scale benchmark.
func BenchmarkSaveSnapshot5000(b *testing.B) {
	s, err := New(Options{SnapshotPath: filepath.Join(b.TempDir(), "sim.json")})
	if err != nil {
		b.Fatal(err)
	}
	mc := class("c", basicSpec)
	for i := range 5000 {
		m := machine(fmt.Sprintf("m-%d", i), "c")
		if _, err := s.CreateMachine(context.Background(), &driver.CreateMachineRequest{Machine: m, MachineClass: mc}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		if err := s.Save(); err != nil {
			b.Fatal(err)
		}
	}
}

// A create or delete is on disk before the call answers: a sim killed
// right after it (no periodic save, no save on exit: the sim is never
// started) knows the VM when it starts again, or knows it is gone, and
// many concurrent creates share saves yet all survive.
func TestCreateAndDeleteAreDurableBeforeTheyAnswer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sim.json")
	a, _ := newTestSim(t, Options{SnapshotPath: path, SnapshotInterval: time.Hour})
	mc := class("c", basicSpec)
	created := mustCreate(t, a, machine("m1", "c"), mc)

	b, _ := newTestSim(t, Options{SnapshotPath: path})
	if _, ok := b.Cloud().VM(idFromProviderID(created.ProviderID)); !ok {
		t.Fatalf("the VM %s created before the kill is gone after the restart", created.ProviderID)
	}
	if again := mustCreate(t, b, machine("m1", "c"), mc); again.ProviderID != created.ProviderID {
		t.Fatalf("after the restart the Machine got a second VM %s (first %s)", again.ProviderID, created.ProviderID)
	}
	if err := del(b, machine("m1", "c"), mc); err != nil {
		t.Fatal(err)
	}
	c, _ := newTestSim(t, Options{SnapshotPath: path})
	if vms := c.Cloud().VMs(); len(vms) != 0 {
		t.Fatalf("the VM deleted before the kill is back after the restart: %+v", vms)
	}

	const n = 20
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.CreateMachine(context.Background(), &driver.CreateMachineRequest{Machine: machine(fmt.Sprintf("p%d", i), "c"), MachineClass: mc})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	d, _ := newTestSim(t, Options{SnapshotPath: path})
	if got := len(d.Cloud().VMs()); got != n {
		t.Fatalf("%d of %d concurrently created VMs survived the restart", got, n)
	}
}
