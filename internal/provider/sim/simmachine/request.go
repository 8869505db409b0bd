package simmachine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// The driver speaks in Machines and MachineClasses; these build the ones a
// SimMachine stands for.

// classNamePrefix starts the name of a SimMachine's synthetic class. The
// colon makes it an invalid object name, so it can never be the name of a
// real MachineClass, whose VMs the sim lists (and the orphan collection
// judges) by class.
const classNamePrefix = "simmachine:"

// deleteFallbackSpec lets a SimMachine whose providerSpec the sim refuses
// still be deleted: no VM was ever made from it, and the delete call only
// needs a spec to decode.
const deleteFallbackSpec = `{"region":"deleted","zones":["deleted"]}`

// machineFor is the Machine the sim keys the VM by: the owner Machine's
// namespace and name, with the SimMachine's providerID so that the sim
// acts on exactly that VM. Only identity is passed: the real Machine's
// other fields belong to the core, not to this VM.
func machineFor(s *scope) *v1alpha1.Machine {
	return &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.sm.Namespace, Name: s.Owner.Name, UID: s.Owner.UID},
		Spec: v1alpha1.MachineSpec{
			InfrastructureRef: &v1alpha1.ContractReference{APIGroup: infrav1.GroupName, Kind: "SimMachine", Name: s.sm.Name},
			ProviderID:        ptr.Deref(s.sm.Spec.ProviderID, ""),
		},
	}
}

// classFor is a MachineClass carrying the SimMachine's providerSpec, its
// zones narrowed to the failure domain when one is set, so the sim must
// place the VM there.
func classFor(s *scope) (*v1alpha1.MachineClass, error) {
	raw := s.sm.Spec.ProviderSpec.Raw
	ps, err := sim.DecodeProviderSpec(raw)
	if err != nil {
		return nil, err
	}
	zone, err := failureDomain(s)
	if err != nil {
		return nil, err
	}
	if zone != "" {
		if !slices.Contains(ps.Zones, zone) {
			return nil, driver.Errorf(driver.InvalidArgument, "failure domain %q is not one of providerSpec.zones (%s)", zone, strings.Join(ps.Zones, ", "))
		}
		ps.Zones = []string{zone}
		if ps.Faults != nil {
			ps.Faults.OutOfCapacityZones = slices.DeleteFunc(slices.Clone(ps.Faults.OutOfCapacityZones), func(z string) bool { return z != zone })
		}
		if raw, err = json.Marshal(ps); err != nil {
			return nil, driver.Errorf(driver.Internal, "encoding the providerSpec: %v", err)
		}
	}
	return class(s, raw), nil
}

// deleteClassFor is the class for DeleteMachine: the providerSpec as it
// is (its delete faults apply), or the fallback when it never decoded.
func deleteClassFor(s *scope) *v1alpha1.MachineClass {
	raw := s.sm.Spec.ProviderSpec.Raw
	if _, err := sim.DecodeProviderSpec(raw); err != nil {
		raw = []byte(deleteFallbackSpec)
	}
	return class(s, raw)
}

func class(s *scope, raw []byte) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.sm.Namespace, Name: classNamePrefix + s.sm.Name},
		Spec:       v1alpha1.MachineClassSpec{Provider: sim.DefaultName, ProviderSpec: runtime.RawExtension{Raw: raw}},
	}
}

// failureDomain is where the VM must go: the Machine's spec.failureDomain
// (the contract's rule) or else the SimMachine's own (the older, reverse
// direction). Two different values are a mistake nobody can fix by waiting.
func failureDomain(s *scope) (string, error) {
	own := ptr.Deref(s.sm.Spec.FailureDomain, "")
	var fromMachine string
	if s.Machine != nil {
		fromMachine = s.Machine.Spec.FailureDomain
	}
	switch {
	case fromMachine == "":
		return own, nil
	case own == "" || own == fromMachine:
		return fromMachine, nil
	}
	return "", driver.Errorf(driver.InvalidArgument, "the Machine's spec.failureDomain %q and the SimMachine's %q differ", fromMachine, own)
}

// secretFor carries the bootstrap data as the sim's user data.
func secretFor(userData []byte) *corev1.Secret {
	return &corev1.Secret{Data: map[string][]byte{"userData": userData}}
}

// zoneOf is the zone in a sim providerID, sim://region/zone/vm-id.
func zoneOf(providerID string) string {
	parts := strings.Split(strings.TrimPrefix(providerID, "sim://"), "/")
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

func describe(method driver.Method, err error) string {
	return fmt.Sprintf("%s failed with %s: %s", method, driver.CodeOf(err), driver.MessageOf(err))
}
