package drivertest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

func (s *suite) testPluginInfo(t *testing.T, info *driver.GetPluginInfoResponse) {
	if info.Name == "" {
		t.Error("GetPluginInfo returned no name")
	}
	for _, m := range info.Implements {
		if !slices.Contains(driver.OptionalMethods, m) {
			t.Errorf("GetPluginInfo lists %q, which is not an optional method", m)
		}
	}
}

func (s *suite) testCreateIsIdempotent(t *testing.T) {
	m := s.machine(t)
	first := s.create(t, m)
	second := s.create(t, m)
	if first.ProviderID != second.ProviderID {
		t.Fatalf("a second CreateMachine for %s returned providerID %q, the first %q: two VMs for one Machine",
			m.Name, second.ProviderID, first.ProviderID)
	}
	if first.NodeName != second.NodeName {
		t.Errorf("node name changed between creates: %q then %q", first.NodeName, second.NodeName)
	}
}

func (s *suite) testConcurrentCreates(t *testing.T, info *driver.GetPluginInfoResponse) {
	m := s.machine(t)
	const n = 8
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := s.ctx()
			defer cancel()
			resp, err := s.Driver.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: s.Class, Secret: s.Secret})
			errs[i] = err
			if err == nil {
				ids[i] = resp.ProviderID
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			// Aborted ("an operation is pending") is an allowed answer to a concurrent call.
			if driver.CodeOf(errs[i]) != driver.Aborted {
				t.Fatalf("concurrent CreateMachine: %v", errs[i])
			}
			continue
		}
		if ids[i] != ids[0] && ids[0] != "" {
			t.Fatalf("concurrent creates of %s returned different providerIDs %q and %q", m.Name, ids[0], ids[i])
		}
	}
	if implements(info, driver.MethodListMachines) {
		if vms := s.vmsOf(t, m); len(vms) != 1 {
			t.Fatalf("after %d concurrent creates ListMachines shows %d VMs for %s: %v", n, len(vms), m.Name, vms)
		}
	}
}

// testNamespaces creates Machines of one name in two namespaces (each with
// its class of the same name there): Machines are namespaced, so these are
// two Machines and must get two VMs, which register as two Nodes (Nodes are
// not namespaced). A driver keying its VMs by Machine name alone hands the
// second Machine the first one's VM, and deleting either deletes both.
func (s *suite) testNamespaces(t *testing.T, info *driver.GetPluginInfoResponse) {
	other := s.Class.DeepCopy()
	other.Namespace = s.Class.Namespace + "-other"
	first := s.machine(t)
	second := s.machineIn(t, other, first.Name)
	call := func(m *v1alpha1.Machine, class *v1alpha1.MachineClass) (*driver.CreateMachineResponse, error) {
		ctx, cancel := s.ctx()
		defer cancel()
		return s.Driver.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: class, Secret: s.Secret})
	}
	a, err := call(first, s.Class)
	if err != nil {
		t.Fatalf("CreateMachine(%s/%s): %v", first.Namespace, first.Name, err)
	}
	b, err := call(second, other)
	if err != nil {
		t.Fatalf("CreateMachine(%s/%s): %v", second.Namespace, second.Name, err)
	}
	if a.ProviderID == b.ProviderID {
		t.Fatalf("Machines %s/%s and %s/%s got one VM %q: two Machines share a VM (key VMs by namespace and name, or UID)",
			first.Namespace, first.Name, second.Namespace, second.Name, a.ProviderID)
	}
	if a.NodeName != "" && a.NodeName == b.NodeName {
		t.Fatalf("Machines %s/%s and %s/%s both get Node %q: two VMs would register as one Node",
			first.Namespace, first.Name, second.Namespace, second.Name, a.NodeName)
	}
	if err := s.delete(t, first); err != nil {
		t.Fatalf("DeleteMachine(%s/%s): %v", first.Namespace, first.Name, err)
	}
	again, err := call(second, other)
	if err != nil {
		t.Fatalf("CreateMachine(%s/%s) after deleting %s/%s: %v", second.Namespace, second.Name, first.Namespace, first.Name, err)
	}
	if again.ProviderID != b.ProviderID {
		t.Fatalf("deleting %s/%s took %s/%s's VM %q with it (a create now makes %q)",
			first.Namespace, first.Name, second.Namespace, second.Name, b.ProviderID, again.ProviderID)
	}
	if implements(info, driver.MethodGetMachineStatus) {
		ctx, cancel := s.ctx()
		defer cancel()
		got, err := s.Driver.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: second, MachineClass: other, Secret: s.Secret})
		if err != nil || got.ProviderID != b.ProviderID {
			t.Fatalf("GetMachineStatus(%s/%s) after deleting %s/%s: %v, %v; want providerID %q",
				second.Namespace, second.Name, first.Namespace, first.Name, got, err, b.ProviderID)
		}
	}
}

func (s *suite) testDeleteAbsent(t *testing.T) {
	m := s.machine(t)
	if err := s.delete(t, m); err != nil {
		t.Fatalf("DeleteMachine of a Machine that never had a VM: %v; want OK", err)
	}
	s.create(t, m)
	if err := s.delete(t, m); err != nil {
		t.Fatalf("DeleteMachine: %v", err)
	}
	if err := s.delete(t, m); err != nil {
		t.Fatalf("a second DeleteMachine: %v; want OK (deletion is idempotent)", err)
	}
}

func (s *suite) testDeleteRemoves(t *testing.T, info *driver.GetPluginInfoResponse) {
	m := s.machine(t)
	s.create(t, m)
	if err := s.delete(t, m); err != nil {
		t.Fatalf("DeleteMachine: %v", err)
	}
	if implements(info, driver.MethodGetMachineStatus) {
		if _, err := s.status(m); driver.CodeOf(err) != driver.NotFound {
			t.Fatalf("GetMachineStatus after delete: %v; want NotFound", err)
		}
	}
	if implements(info, driver.MethodListMachines) {
		if vms := s.vmsOf(t, m); len(vms) != 0 {
			t.Fatalf("ListMachines still shows %v after delete", vms)
		}
	}
}

func (s *suite) testUnknownNotFound(t *testing.T, info *driver.GetPluginInfoResponse) {
	if !implements(info, driver.MethodGetMachineStatus) {
		return // checked by UnimplementedMethodsSaySo
	}
	m := s.machine(t)
	if _, err := s.status(m); driver.CodeOf(err) != driver.NotFound {
		t.Fatalf("GetMachineStatus of a Machine without VM: %v; want NotFound", err)
	}
	created := s.create(t, m)
	got, err := s.status(m)
	if err != nil {
		t.Fatalf("GetMachineStatus after create: %v", err)
	}
	if got.ProviderID != created.ProviderID {
		t.Fatalf("GetMachineStatus says providerID %q, CreateMachine said %q", got.ProviderID, created.ProviderID)
	}
}

func (s *suite) testList(t *testing.T, info *driver.GetPluginInfoResponse) {
	if !implements(info, driver.MethodListMachines) {
		return
	}
	a, b, c := s.machine(t), s.machine(t), s.machine(t)
	ids := map[string]string{}
	for _, m := range []*v1alpha1.Machine{a, b, c} {
		ids[m.Name] = s.create(t, m).ProviderID
	}
	if err := s.delete(t, b); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*v1alpha1.Machine{a, c} {
		if vms := s.vmsOf(t, m); len(vms) != 1 || vms[0] != ids[m.Name] {
			t.Errorf("ListMachines shows %v for %s; want exactly [%s]", vms, m.Name, ids[m.Name])
		}
	}
	if vms := s.vmsOf(t, b); len(vms) != 0 {
		t.Errorf("ListMachines shows %v for deleted %s", vms, b.Name)
	}
}

func (s *suite) testUnimplemented(t *testing.T, info *driver.GetPluginInfoResponse) {
	m := s.machine(t)
	created := s.create(t, m)
	calls := map[driver.Method]func(ctx context.Context) error{
		driver.MethodInitializeMachine: func(ctx context.Context) error {
			_, err := s.Driver.InitializeMachine(ctx, &driver.InitializeMachineRequest{Machine: m, MachineClass: s.Class, Secret: s.Secret})
			return err
		},
		driver.MethodGetMachineStatus: func(ctx context.Context) error {
			_, err := s.Driver.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m, MachineClass: s.Class, Secret: s.Secret})
			return err
		},
		driver.MethodListMachines: func(ctx context.Context) error {
			_, err := s.Driver.ListMachines(ctx, &driver.ListMachinesRequest{MachineClass: s.Class, Secret: s.Secret})
			return err
		},
		driver.MethodGetVolumeIDs: func(ctx context.Context) error {
			_, err := s.Driver.GetVolumeIDs(ctx, &driver.GetVolumeIDsRequest{PVSpecs: []*corev1.PersistentVolumeSpec{}})
			return err
		},
		driver.MethodUpdateMachine: func(ctx context.Context) error {
			_, err := s.Driver.UpdateMachine(ctx, &driver.UpdateMachineRequest{
				Machine: m, ProviderID: created.ProviderID, MachineClass: s.Class, Secret: s.Secret,
				LastAppliedProviderSpec: s.Class.Spec.ProviderSpec,
			})
			return err
		},
		driver.MethodReceiveEvents: func(ctx context.Context) error {
			_, err := s.Driver.ReceiveEvents(ctx, &driver.ReceiveEventsRequest{})
			return err
		},
	}
	for _, method := range driver.OptionalMethods {
		ctx, cancel := s.ctx()
		err := calls[method](ctx)
		cancel()
		unimplemented := driver.CodeOf(err) == driver.Unimplemented
		if implements(info, method) && unimplemented {
			t.Errorf("%s returned Unimplemented but GetPluginInfo lists it as implemented", method)
		}
		if !implements(info, method) && !unimplemented {
			t.Errorf("%s is not listed by GetPluginInfo but returned %v; want Unimplemented", method, err)
		}
	}
}

func (s *suite) testInvalidSpec(t *testing.T) {
	m := s.machine(t)
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.Driver.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: s.InvalidClass, Secret: s.Secret})
	if driver.CodeOf(err) != driver.InvalidArgument {
		t.Fatalf("CreateMachine with an invalid providerSpec: %v; want InvalidArgument", err)
	}
	if len(driver.MessageOf(err)) < 10 {
		t.Fatalf("the InvalidArgument message %q does not tell a person what is wrong", driver.MessageOf(err))
	}
}

func (s *suite) testContexts(t *testing.T, info *driver.GetPluginInfoResponse) {
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want driver.Code
	}{
		{"expired deadline", expired, driver.DeadlineExceeded},
		{"cancelled", cancelled, driver.Canceled},
	} {
		m := s.machine(t)
		_, err := s.Driver.CreateMachine(tc.ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: s.Class, Secret: s.Secret})
		if got := driver.CodeOf(err); got != tc.want {
			t.Errorf("CreateMachine with a %s context: %v; want %s", tc.name, err, tc.want)
		}
		if implements(info, driver.MethodGetMachineStatus) {
			if _, err := s.status(m); driver.CodeOf(err) != driver.NotFound {
				t.Errorf("CreateMachine with a %s context still made a VM (GetMachineStatus: %v)", tc.name, err)
			}
		}
	}
}
