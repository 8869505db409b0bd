// Package drivertest is a conformance suite any Driver can run against
// itself, in-process or through the gRPC client:
//
//	func TestConformance(t *testing.T) {
//		drivertest.Run(t, drivertest.Config{
//			Driver:       myDriver,
//			Class:        validClass,   // a class the driver creates VMs from quickly
//			Secret:       secret,
//			InvalidClass: badClass,     // a class whose providerSpec must be refused
//		})
//	}
//
// To run it through the wire as Millwright calls a plugin, pass
// OverGRPC(t, myDriver) as the Driver.
//
// It checks the promises Millwright relies on: create is idempotent per
// Machine (never a second VM), two Machines of one name in two namespaces
// are two VMs with two Nodes, deleting an absent VM is OK, an unknown
// Machine is NotFound, ListMachines agrees with create and delete and
// reports each VM's Machine UID, unimplemented optional methods say
// Unimplemented, a bad providerSpec is InvalidArgument with a message, and
// expired or cancelled contexts are honoured. A driver whose providerIDs
// embed a host's name passes RenameHost, and the suite checks that a
// renamed host loses no VM (docs/writing-a-driver.md, "Orphan VMs").
package drivertest

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Config is the driver under test and the classes to test it with.
type Config struct {
	// Driver under test.
	Driver driver.Driver
	// Class is a valid MachineClass the driver creates VMs from.
	Class *v1alpha1.MachineClass
	// Secret is passed with Class (it may be nil if the driver needs none).
	Secret *corev1.Secret
	// InvalidClass has a providerSpec the driver must refuse with InvalidArgument.
	InvalidClass *v1alpha1.MachineClass
	// CallTimeout bounds every call the suite makes; default 30s.
	CallTimeout time.Duration
	// RenameHost, when set, changes the name of the host the driver's VMs
	// run on, as a renamed machine or a DNS answer that moved from the
	// fully qualified name to the short one would. The suite then checks
	// that the driver still knows every VM: ListMachines reports it with
	// its Machine's UID, GetMachineStatus answers the providerID
	// ListMachines does, and DeleteMachine by the providerID recorded
	// before the rename deletes it. Leave it nil when providerIDs name no
	// host.
	RenameHost func(t *testing.T)
}

// Run runs the conformance suite as subtests of t.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.Driver == nil || cfg.Class == nil || cfg.InvalidClass == nil {
		t.Fatal("drivertest.Config needs Driver, Class and InvalidClass")
	}
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	s := &suite{Config: cfg, prefix: fmt.Sprintf("conformance-%06d", rand.IntN(1_000_000))}
	info := s.pluginInfo(t)

	t.Run("PluginInfo", func(t *testing.T) { s.testPluginInfo(t, info) })
	t.Run("CreateIsIdempotent", s.testCreateIsIdempotent)
	t.Run("ConcurrentCreatesMakeOneVM", func(t *testing.T) { s.testConcurrentCreates(t, info) })
	t.Run("OneNameInTwoNamespacesIsTwoMachines", func(t *testing.T) { s.testNamespaces(t, info) })
	t.Run("DeleteOfAbsentVMIsOK", s.testDeleteAbsent)
	t.Run("DeleteRemovesTheVM", func(t *testing.T) { s.testDeleteRemoves(t, info) })
	t.Run("UnknownMachineIsNotFound", func(t *testing.T) { s.testUnknownNotFound(t, info) })
	t.Run("ListMachinesAgreesWithCreateAndDelete", func(t *testing.T) { s.testList(t, info) })
	t.Run("ListMachinesReportsMachineUIDs", func(t *testing.T) { s.testListUIDs(t, info) })
	t.Run("UnimplementedMethodsSaySo", func(t *testing.T) { s.testUnimplemented(t, info) })
	t.Run("InvalidProviderSpecIsInvalidArgument", s.testInvalidSpec)
	t.Run("ExpiredAndCancelledContextsAreHonoured", func(t *testing.T) { s.testContexts(t, info) })
	if cfg.RenameHost != nil {
		t.Run("RenamedHostLosesNoVM", func(t *testing.T) { s.testRenamedHost(t, info) })
	}
}

type suite struct {
	Config
	prefix string
	seq    int
	mu     sync.Mutex
}

// machine returns a new Machine of the valid class with a name unique to
// this run, and deletes its VM when the test ends.
func (s *suite) machine(t *testing.T) *v1alpha1.Machine {
	s.mu.Lock()
	s.seq++
	name := fmt.Sprintf("%s-%d", s.prefix, s.seq)
	s.mu.Unlock()
	return s.machineIn(t, s.Class, name)
}

// machineIn returns a Machine of the given name in class's namespace, with a
// UID of its own, and deletes its VM when the test ends.
func (s *suite) machineIn(t *testing.T, class *v1alpha1.MachineClass, name string) *v1alpha1.Machine {
	m := &v1alpha1.Machine{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: class.Namespace,
			UID: types.UID("uid-" + class.Namespace + "-" + name)},
		Spec: v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class.Name}},
	}
	t.Cleanup(func() {
		ctx, cancel := s.ctx()
		defer cancel()
		_, _ = s.Driver.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: m, MachineClass: class, Secret: s.Secret})
	})
	return m
}

func (s *suite) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.CallTimeout)
}

func (s *suite) pluginInfo(t *testing.T) *driver.GetPluginInfoResponse {
	ctx, cancel := s.ctx()
	defer cancel()
	info, err := s.Driver.GetPluginInfo(ctx, &driver.GetPluginInfoRequest{})
	if err != nil {
		t.Fatalf("GetPluginInfo: %v", err)
	}
	return info
}

func (s *suite) create(t *testing.T, m *v1alpha1.Machine) *driver.CreateMachineResponse {
	t.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	resp, err := s.Driver.CreateMachine(ctx, &driver.CreateMachineRequest{Machine: m, MachineClass: s.Class, Secret: s.Secret})
	if err != nil {
		t.Fatalf("CreateMachine(%s): %v", m.Name, err)
	}
	if resp.ProviderID == "" {
		t.Fatalf("CreateMachine(%s) returned no providerID", m.Name)
	}
	if _, refused := driver.AllowedNodeLabels(resp.NodeLabels); len(refused) > 0 {
		t.Errorf("CreateMachine(%s) reports Node labels the manager drops (only valid labels under %s are taken): %s",
			m.Name, driver.NodeLabelPrefix, strings.Join(refused, ", "))
	}
	return resp
}

func (s *suite) delete(t *testing.T, m *v1alpha1.Machine) error {
	t.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	_, err := s.Driver.DeleteMachine(ctx, &driver.DeleteMachineRequest{Machine: m, MachineClass: s.Class, Secret: s.Secret})
	return err
}

func (s *suite) status(m *v1alpha1.Machine) (*driver.GetMachineStatusResponse, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.Driver.GetMachineStatus(ctx, &driver.GetMachineStatusRequest{Machine: m, MachineClass: s.Class, Secret: s.Secret})
}

// list returns what ListMachines reports for the valid class, and checks
// that its pages agree: asked one VM at a time (PageSize 1), page after
// page, the driver lists the same VMs, each once, and its tokens end.
func (s *suite) list(t *testing.T) []driver.ListedVM {
	t.Helper()
	ctx, cancel := s.ctx()
	defer cancel()
	req := &driver.ListMachinesRequest{MachineClass: s.Class, Secret: s.Secret}
	resp, err := s.Driver.ListMachines(ctx, req)
	if err != nil {
		t.Fatalf("ListMachines: %v", err)
	}
	if resp.NextPageToken != "" {
		t.Fatalf("ListMachines without a page size answered a next page token %q; want every VM at once", resp.NextPageToken)
	}
	paged := map[string]bool{}
	req.PageSize = 1
	for pages := 1; ; pages++ {
		page, err := s.Driver.ListMachines(ctx, req)
		if err != nil {
			t.Fatalf("ListMachines, page %d (token %q): %v", pages, req.PageToken, err)
		}
		for _, vm := range page.VMs {
			if paged[vm.ProviderID] {
				t.Fatalf("ListMachines lists %s on two pages", vm.ProviderID)
			}
			paged[vm.ProviderID] = true
		}
		if page.NextPageToken == "" {
			break
		}
		if pages > len(resp.VMs)+1 {
			t.Fatalf("ListMachines pages do not end: page %d for %d VMs, next token %q", pages, len(resp.VMs), page.NextPageToken)
		}
		req.PageToken = page.NextPageToken
	}
	whole := map[string]bool{}
	for _, vm := range resp.VMs {
		whole[vm.ProviderID] = true
	}
	if !maps.Equal(paged, whole) {
		t.Fatalf("ListMachines lists %v page by page and %v at once; want the same VMs", slices.Sorted(maps.Keys(paged)), slices.Sorted(maps.Keys(whole)))
	}
	return resp.VMs
}

// vmsOf returns the providerIDs ListMachines reports for the Machine m,
// known by its UID.
func (s *suite) vmsOf(t *testing.T, m *v1alpha1.Machine) []string {
	t.Helper()
	var ids []string
	for _, vm := range s.list(t) {
		if vm.MachineUID == string(m.UID) {
			ids = append(ids, vm.ProviderID)
		}
	}
	return ids
}

func implements(info *driver.GetPluginInfoResponse, m driver.Method) bool {
	return slices.Contains(info.Implements, m)
}
