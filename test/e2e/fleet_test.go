package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// simSpec is a sim providerSpec: VMs boot in a second or two.
const simSpec = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","bootJitter":"1s"}`

// createClass creates a sim MachineClass with the given providerSpec.
func (s *scenario) createClass(name, providerSpec string) {
	s.t.Helper()
	s.createClassWith(name, providerSpec, nil)
}

// createClassWith is createClass with the class edited before it is made.
func (s *scenario) createClassWith(name, providerSpec string, edit func(*v1alpha1.MachineClass)) {
	s.t.Helper()
	class := &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: v1alpha1.MachineClassSpec{
			Provider:     "sim",
			ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)},
			NodeTemplate: &v1alpha1.NodeTemplate{Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
			}},
		},
	}
	if edit != nil {
		edit(class)
	}
	s.create(class)
}

// createDeployment creates the scenario's MachineDeployment (named after
// the namespace) of class, rolling out with maxSurge and maxUnavailable.
// Its Machines and Nodes carry the label pool=<namespace>.
func (s *scenario) createDeployment(replicas int32, class string, maxSurge, maxUnavailable int) {
	s.t.Helper()
	s.createDeploymentOf(replicas, v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class}}, maxSurge, maxUnavailable)
}

// createDeploymentOf is createDeployment with any Machine spec (a class,
// or a provider's template and bootstrap data); the pool label is added to
// its Node template.
func (s *scenario) createDeploymentOf(replicas int32, spec v1alpha1.MachineSpec, maxSurge, maxUnavailable int) {
	s.t.Helper()
	pool := map[string]string{"pool": s.ns}
	spec.NodeTemplate.Metadata.Labels = pool
	s.create(&v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: s.ns, Namespace: s.ns},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: pool},
			Strategy: rollingStrategy(maxSurge, maxUnavailable),
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: pool},
				Spec:     spec,
			},
		},
	})
}

func (s *scenario) create(obj client.Object) {
	s.t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		s.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// updateDeployment changes the MachineDeployment with edit, retrying on
// conflicts.
func (s *scenario) updateDeployment(edit func(*v1alpha1.MachineDeployment)) {
	s.t.Helper()
	s.eventually(30*time.Second, "an update of the MachineDeployment", func() (bool, error) {
		md := &v1alpha1.MachineDeployment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: s.ns}, md); err != nil {
			return false, err
		}
		edit(md)
		err := k8s.Update(context.Background(), md)
		return err == nil, err
	})
}

// scale sets the MachineDeployment's replicas.
// rollingStrategy is strategy RollingUpdate with the given bounds.
func rollingStrategy(maxSurge, maxUnavailable int) v1alpha1.MachineDeploymentStrategy {
	surge, unavailable := intstr.FromInt(maxSurge), intstr.FromInt(maxUnavailable)
	return v1alpha1.MachineDeploymentStrategy{
		Type:          v1alpha1.RollingUpdateStrategy,
		RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
}

func (s *scenario) scale(replicas int32) {
	s.t.Helper()
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = replicas })
}

func (s *scenario) machines() ([]v1alpha1.Machine, error) {
	list := &v1alpha1.MachineList{}
	err := k8s.List(context.Background(), list, client.InNamespace(s.ns))
	return list.Items, err
}

// waitFleet waits until the fleet is exactly replicas Machines of class,
// every one Running with its Node Ready, and the sim holds exactly their
// VMs; it returns the Machines.
func (s *scenario) waitFleet(replicas int, class string, bound time.Duration) []v1alpha1.Machine {
	s.t.Helper()
	return s.waitFleetOf(replicas, ofClass(class), bound)
}

// waitFleetOf is waitFleet for Machines made as tmpl says.
func (s *scenario) waitFleetOf(replicas int, tmpl fleetTemplate, bound time.Duration) []v1alpha1.Machine {
	s.t.Helper()
	var ms []v1alpha1.Machine
	s.eventually(bound, fmt.Sprintf("fleet of %d Running Machines %s", replicas, tmpl.desc), func() (bool, error) {
		var err error
		if ms, err = s.machines(); err != nil {
			return false, err
		}
		return s.fleetMatches(ms, replicas, tmpl)
	})
	return ms
}

// fleetTemplate says whether a Machine was made from the template a fleet
// is waited for.
type fleetTemplate struct {
	desc string
	of   func(*v1alpha1.Machine) (bool, error)
}

// ofClass: Machines of a MachineClass.
func ofClass(class string) fleetTemplate {
	return fleetTemplate{desc: "of class " + class, of: func(m *v1alpha1.Machine) (bool, error) {
		return m.Spec.Class != nil && m.Spec.Class.Name == class, nil
	}}
}

func (s *scenario) fleetIs(ms []v1alpha1.Machine, replicas int, class string) (bool, error) {
	return s.fleetMatches(ms, replicas, ofClass(class))
}

func (s *scenario) fleetMatches(ms []v1alpha1.Machine, replicas int, tmpl fleetTemplate) (bool, error) {
	if len(ms) != replicas {
		return false, fmt.Errorf("%d Machines", len(ms))
	}
	var names []string
	for i := range ms {
		m := &ms[i]
		switch {
		case m.DeletionTimestamp != nil:
			return false, fmt.Errorf("Machine %s is being deleted", m.Name)
		case m.Status.Phase != v1alpha1.PhaseRunning:
			return false, fmt.Errorf("Machine %s is %s: %s", m.Name, m.Status.Phase, m.Status.LastOperation.Description)
		}
		if ok, err := tmpl.of(m); !ok {
			return false, fmt.Errorf("Machine %s is not %s (%v)", m.Name, tmpl.desc, err)
		}
		node := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(m)}, node); err != nil {
			return false, fmt.Errorf("Node of %s: %w", m.Name, err)
		}
		if !nodeReady(node) {
			return false, fmt.Errorf("Node %s is not Ready", node.Name)
		}
		names = append(names, m.Name)
	}
	vms, err := s.vms()
	if err != nil {
		return false, err
	}
	var vmMachines []string
	for _, vm := range vms {
		vmMachines = append(vmMachines, vm.MachineName)
	}
	slices.Sort(names)
	slices.Sort(vmMachines)
	if !slices.Equal(names, vmMachines) {
		return false, fmt.Errorf("the sim's VMs are for %v, the Machines are %v", vmMachines, names)
	}
	return true, nil
}

// scenarioNodes lists the names of the Nodes named after the scenario's
// namespace, as its Machines' Nodes are.
func (s *scenario) scenarioNodes() ([]string, error) {
	list := &corev1.NodeList{}
	if err := k8s.List(context.Background(), list); err != nil {
		return nil, err
	}
	var names []string
	for _, n := range list.Items {
		if s.ownsNode(n.Name) {
			names = append(names, n.Name)
		}
	}
	return names, nil
}

// ownsNode reports whether a Node is named like the scenario's Machines.
func (s *scenario) ownsNode(name string) bool { return strings.HasPrefix(name, s.ns+"-") }

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rollTo makes the MachineDeployment's template use another class, which
// rolls the fleet to a new MachineSet.
func (s *scenario) rollTo(class string) {
	s.t.Helper()
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) { md.Spec.Template.Spec.Class.Name = class })
}

// machineAvailable reports whether a Machine counts as available, by the
// definition the planner and the disruption budgets use
// (machinefacts.Available; no scenario sets minReadySeconds).
func machineAvailable(m *v1alpha1.Machine) bool {
	return machinefacts.Available(m, 0, time.Now())
}

// deleteMachine deletes a Machine of the scenario (its deletion then
// runs its course).
func (s *scenario) deleteMachine(name string) {
	s.t.Helper()
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}}
	if err := k8s.Delete(context.Background(), m); client.IgnoreNotFound(err) != nil {
		s.t.Fatalf("deleting Machine %s: %v", name, err)
	}
}

// nodeOf is the name of a Machine's Node: status.nodeRef once it
// registered, else the name its driver announced (contract providers
// announce none).
func nodeOf(m *v1alpha1.Machine) string {
	if m.Status.NodeRef != nil {
		return m.Status.NodeRef.Name
	}
	return m.Status.NodeName
}
