package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestContractProvider proves contract providers end to end (issue #8):
// the sim runs its SimMachine controller (--infra-controller), and a
// MachineDeployment whose template names a SimMachineTemplate
// (spec.infrastructureRef) and a TokenBootstrapConfigTemplate
// (spec.bootstrap.configRef, the manager's bootstrap provider) is scaled 0 → 5, rolled to a second
// SimMachineTemplate, and scaled to 0. After each step every Machine is
// Running with a Ready Node and is backed by a SimMachine of its own,
// cloned from the template of the step (the cloned-from annotations),
// controlled by the Machine, with the Machine's providerID, and the sim
// holds exactly the fleet's VMs. During the roll the fleet stays within
// maxSurge/maxUnavailable at every observed state. At the end no Machine,
// SimMachine, VM or Node of the scenario is left; every Machine went
// through its deletion steps, and the sim made one VM per Machine.
func TestContractProvider(t *testing.T) {
	const replicas = 5
	s := newScenario(t, "contract", "--infra-controller")
	s.startManager()
	s.createTokenBootstrapTemplate("join")
	s.createSimTemplate("sim-a", simSpec)
	s.createSimTemplate("sim-b", largeSpec)
	rec := s.record()
	spec := s.contractSpec("sim-a")
	// Bootstrap data from the manager's own bootstrap provider: a
	// TokenBootstrapConfig cloned per Machine makes a token and user data.
	spec.Bootstrap = v1alpha1.Bootstrap{ConfigRef: &v1alpha1.ContractReference{
		APIGroup: bootstrapv1.GroupName, Kind: "TokenBootstrapConfigTemplate", Name: "join"}}
	s.createDeploymentOf(0, spec, 1, 0)

	s.scale(replicas)
	s.waitFleetOf(replicas, s.fromSimTemplate("sim-a"), 3*time.Minute)
	s.checkTokenBootstrapped()
	stopCheck := rec.addCheck(withinRollingBounds(replicas, 1, 0))
	s.rollToSimTemplate("sim-b")
	s.waitFleetOf(replicas, s.fromSimTemplate("sim-b"), 5*time.Minute)
	stopCheck()
	s.scale(0)
	s.waitFleetOf(0, s.fromSimTemplate("sim-b"), 3*time.Minute)
	s.eventually(time.Minute, "no SimMachine and no Node of the scenario left", func() (bool, error) {
		sms := &infrav1.SimMachineList{}
		if err := k8s.List(context.Background(), sms, client.InNamespace(s.ns)); err != nil {
			return false, err
		}
		nodes, err := s.scenarioNodes()
		return len(sms.Items) == 0 && len(nodes) == 0, fmt.Errorf("%d SimMachines, Nodes %v (%v)", len(sms.Items), nodes, err)
	})

	rec.verify()
	if hist := s.checkNoDuplicateVMs(); len(hist) != 2*replicas {
		t.Errorf("the sim made %d VMs, want %d (one per Machine)", len(hist), 2*replicas)
	}
	if names := rec.machineNames(); len(names) != 2*replicas {
		t.Errorf("saw %d Machines, want %d: %v", len(names), 2*replicas, names)
	}
}

// TestContractProviderFailureAndPause proves two more rules of contract
// providers end to end. A SimMachine failing for good (its template's
// providerSpec makes every CreateMachine fail with InvalidArgument) sets
// its status.failureReason, which fails its Machine; the MachineSet
// replaces the Failed Machine by a new one. Rolled to a good template, the
// fleet is Running. Then the machine.millwright.dev/paused annotation on
// a Machine pauses it (Paused conditions on the Machine and its
// SimMachine) and stops it: deleted meanwhile, it keeps its VM, Node and
// SimMachine; removing the annotation resumes it, and its deletion runs to
// the end while its MachineSet replaces it.
func TestContractProviderFailureAndPause(t *testing.T) {
	s := newScenario(t, "contractfail", "--infra-controller")
	s.startManager()
	s.createBootstrapSecret()
	s.createSimTemplate("broken", faultSpec(`"create":{"code":"InvalidArgument"}`))
	s.createSimTemplate("sim-a", simSpec)
	rec := s.record()
	s.createDeploymentOf(1, s.contractSpec("broken"), 1, 0)

	// A Failed Machine is replaced within a moment, so it is looked for in
	// every state the recorder saw, not in the current list.
	var failed string
	s.eventually(2*time.Minute, "a Machine seen Failed with its SimMachine's failure reason", func() (bool, error) {
		for name := range rec.phasesOf() {
			for _, v := range rec.versionsOf(name) {
				if v.phase == v1alpha1.PhaseFailed && v.failureReason == infrav1.FailureReasonInvalidConfiguration {
					failed = name
					return true, nil
				}
			}
		}
		return false, fmt.Errorf("no Machine seen Failed:\n%s", s.describeMachines())
	})
	t.Logf("Machine %s was Failed by its SimMachine's terminal failure", failed)
	// Its replacement fails as fast (within a second, between two polls),
	// so it too is looked for among the Machines the recorder saw: one it
	// had not seen when the failure was found.
	seenBefore := rec.machineNames()
	s.eventually(2*time.Minute, "the Failed Machine to be replaced by its MachineSet", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		replaced := !slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == failed })
		successor := slices.ContainsFunc(rec.machineNames(), func(name string) bool { return !slices.Contains(seenBefore, name) })
		return replaced && successor, fmt.Errorf("failed Machine gone %t, a successor seen %t", replaced, successor)
	})

	s.rollToSimTemplate("sim-a")
	fleet := s.waitFleetOf(1, s.fromSimTemplate("sim-a"), 3*time.Minute)
	m := fleet[0]
	vm := s.vmOf(m.Name)
	s.setPaused(m.Name, true)
	s.eventually(time.Minute, "the Machine and its SimMachine to be paused", func() (bool, error) {
		mm, sm, err := s.machineAndSimMachine(m.Name)
		if err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(mm.Status.Conditions, v1alpha1.PausedCondition) &&
			meta.IsStatusConditionTrue(sm.Status.Conditions, infrav1.PausedCondition), nil
	})
	s.deleteMachine(m.Name)
	s.consistently(8*time.Second, "the paused Machine to keep its VM, Node and SimMachine", func() error {
		if _, _, err := s.machineAndSimMachine(m.Name); err != nil {
			return err
		}
		if got := s.vmOf(m.Name); got == nil || got.ID != vm.ID {
			return fmt.Errorf("the VM of %s is %+v, want %s", m.Name, got, vm.ID)
		}
		return k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(&m)}, &corev1.Node{})
	})
	s.setPaused(m.Name, false)
	s.eventually(2*time.Minute, "the resumed Machine's deletion to finish", func() (bool, error) {
		_, _, err := s.machineAndSimMachine(m.Name)
		return client.IgnoreNotFound(err) == nil && err != nil && s.vmOf(m.Name) == nil, err
	})
	s.waitFleetOf(1, s.fromSimTemplate("sim-a"), 2*time.Minute)
	rec.verify()
	s.checkNoDuplicateVMs()
}

// createBootstrapSecret creates the Secret "bootstrap" whose key "value"
// is the bootstrap data of the scenario's contract Machines.
func (s *scenario) createBootstrapSecret() {
	s.t.Helper()
	s.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap", Namespace: s.ns},
		Data:       map[string][]byte{"value": []byte("#!/bin/sh\necho joining " + s.ns + "\n")},
	})
}

// createTokenBootstrapTemplate creates a TokenBootstrapConfigTemplate; the
// manager fills in the API server and CA of its target cluster.
func (s *scenario) createTokenBootstrapTemplate(name string) {
	s.t.Helper()
	s.create(&bootstrapv1.TokenBootstrapConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}})
}

// checkTokenBootstrapped: every Machine got its bootstrap data from a
// TokenBootstrapConfig of its own, which made a user-data Secret and is
// done with its token once the Node joined.
func (s *scenario) checkTokenBootstrapped() {
	s.t.Helper()
	ms, err := s.machines()
	if err != nil {
		s.t.Fatal(err)
	}
	for _, m := range ms {
		ref := m.Spec.Bootstrap.ConfigRef
		if ref == nil || ref.Kind != "TokenBootstrapConfig" || ref.Name != m.Name || m.Spec.Bootstrap.DataSecretName == nil {
			s.t.Fatalf("Machine %s bootstrap %+v: want its own TokenBootstrapConfig and its data Secret", m.Name, m.Spec.Bootstrap)
		}
		secret := &corev1.Secret{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: *m.Spec.Bootstrap.DataSecretName}, secret); err != nil || len(secret.Data["value"]) == 0 {
			s.t.Fatalf("Machine %s: user data Secret %s: %v (%d bytes)", m.Name, *m.Spec.Bootstrap.DataSecretName, err, len(secret.Data["value"]))
		}
		cfg := &bootstrapv1.TokenBootstrapConfig{}
		s.eventually(30*time.Second, "TokenBootstrapConfig "+m.Name+" to see the join", func() (bool, error) {
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: m.Name}, cfg)
			return err == nil && cfg.Status.Joined, err
		})
	}
}

// createSimTemplate creates a SimMachineTemplate of the given providerSpec.
func (s *scenario) createSimTemplate(name, providerSpec string) {
	s.t.Helper()
	s.create(&infrav1.SimMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: infrav1.SimMachineTemplateSpec{Template: infrav1.SimMachineTemplateResource{
			Spec: infrav1.SimMachineSpec{ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)}},
		}},
	})
}

// contractSpec is a Machine spec made by the sim's contract provider from
// SimMachineTemplate template, with the bootstrap Secret.
func (s *scenario) contractSpec(template string) v1alpha1.MachineSpec {
	return v1alpha1.MachineSpec{
		InfrastructureRef: &v1alpha1.ContractReference{APIGroup: infrav1.GroupName, Kind: "SimMachineTemplate", Name: template},
		Bootstrap:         v1alpha1.Bootstrap{DataSecretName: ptr.To("bootstrap")},
	}
}

// rollToSimTemplate points the MachineDeployment's template at another
// SimMachineTemplate, which rolls the fleet to a new MachineSet.
func (s *scenario) rollToSimTemplate(template string) {
	s.t.Helper()
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) { md.Spec.Template.Spec.InfrastructureRef.Name = template })
}

// fromSimTemplate: Machines backed by a provisioned SimMachine of their
// own, cloned from SimMachineTemplate template, controlled by the Machine
// and with its providerID.
func (s *scenario) fromSimTemplate(template string) fleetTemplate {
	return fleetTemplate{desc: "from SimMachineTemplate " + template, of: func(m *v1alpha1.Machine) (bool, error) {
		ref := m.Spec.InfrastructureRef
		if ref == nil || ref.APIGroup != infrav1.GroupName || ref.Kind != "SimMachine" {
			return false, fmt.Errorf("spec.infrastructureRef %+v", ref)
		}
		sm := &infrav1.SimMachine{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: m.Namespace, Name: ref.Name}, sm); err != nil {
			return false, err
		}
		owner := metav1.GetControllerOf(sm)
		switch {
		case sm.Annotations[v1alpha1.ClonedFromNameAnnotation] != template:
			return false, fmt.Errorf("SimMachine %s cloned from %q", sm.Name, sm.Annotations[v1alpha1.ClonedFromNameAnnotation])
		case sm.Annotations[v1alpha1.ClonedFromGroupKindAnnotation] != "SimMachineTemplate."+infrav1.GroupName:
			return false, fmt.Errorf("SimMachine %s cloned from group-kind %q", sm.Name, sm.Annotations[v1alpha1.ClonedFromGroupKindAnnotation])
		case owner == nil || owner.Kind != "Machine" || owner.UID != m.UID:
			return false, fmt.Errorf("SimMachine %s is controlled by %+v, not by its Machine", sm.Name, owner)
		case !sm.Status.Ready || ptr.Deref(sm.Spec.ProviderID, "") != m.Spec.ProviderID:
			return false, fmt.Errorf("SimMachine %s ready %t, providerID %q; the Machine's is %q", sm.Name, sm.Status.Ready, ptr.Deref(sm.Spec.ProviderID, ""), m.Spec.ProviderID)
		}
		return true, nil
	}}
}

// machineAndSimMachine gets a Machine and the SimMachine it references.
func (s *scenario) machineAndSimMachine(name string) (*v1alpha1.Machine, *infrav1.SimMachine, error) {
	m := &v1alpha1.Machine{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, m); err != nil {
		return nil, nil, err
	}
	sm := &infrav1.SimMachine{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: m.Spec.InfrastructureRef.Name}, sm); err != nil {
		return nil, nil, err
	}
	return m, sm, nil
}

// setPaused sets or removes the paused annotation of a Machine.
func (s *scenario) setPaused(name string, paused bool) {
	s.t.Helper()
	s.eventually(30*time.Second, "the paused annotation of "+name, func() (bool, error) {
		m := &v1alpha1.Machine{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, m); err != nil {
			return false, err
		}
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		if paused {
			m.Annotations[v1alpha1.PausedAnnotation] = "true"
		} else {
			delete(m.Annotations, v1alpha1.PausedAnnotation)
		}
		err := k8s.Update(context.Background(), m)
		return err == nil, err
	})
}

// vmOf returns the sim's VM of a Machine, nil if it has none.
func (s *scenario) vmOf(machine string) *simVM {
	s.t.Helper()
	vms, err := s.vms()
	if err != nil {
		s.t.Fatal(err)
	}
	for i := range vms {
		if vms[i].MachineName == machine {
			return &vms[i]
		}
	}
	return nil
}
