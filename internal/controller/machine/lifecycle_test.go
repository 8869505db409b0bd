package machine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

func TestMachineBecomesRunning(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("web-1", "small", func(m *v1alpha1.Machine) {
		m.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "web"}
		m.Spec.NodeTemplate.Taints = []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	})
	m := h.WaitPhase("web-1", v1alpha1.PhaseRunning, 30*time.Second)

	if !strings.HasPrefix(m.Spec.ProviderID, "sim://local/") {
		t.Errorf("providerID = %q", m.Spec.ProviderID)
	}
	if m.Status.NodeRef == nil || m.Status.NodeRef.Kind != "Node" {
		t.Fatalf("nodeRef = %+v", m.Status.NodeRef)
	}
	if len(m.Status.Addresses) == 0 {
		t.Error("no addresses recorded")
	}
	for _, c := range []string{v1alpha1.BootstrapReadyCondition, v1alpha1.InfrastructureReadyCondition,
		v1alpha1.NodeReadyCondition, v1alpha1.NodeHealthyCondition, v1alpha1.ReadyCondition} {
		if !meta.IsStatusConditionTrue(m.Status.Conditions, c) {
			t.Errorf("condition %s is not True: %+v", c, meta.FindStatusCondition(m.Status.Conditions, c))
		}
	}
	if len(m.Finalizers) != 1 || m.Finalizers[0] != v1alpha1.MachineFinalizer {
		t.Errorf("finalizers = %v", m.Finalizers)
	}
	if vms := h.VMs("web-1"); len(vms) != 1 {
		t.Fatalf("the sim has %d VMs for the Machine", len(vms))
	}

	node, err := h.Node(m.Status.NodeRef.Name)
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels["role"] != "web" || node.Labels["kubernetes.io/hostname"] == "" {
		t.Errorf("node labels = %v: want the template's role=web and the kubelet's own", node.Labels)
	}
	if node.Annotations[v1alpha1.NodeMachineAnnotation] != h.Prefix+"web-1" || node.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] != h.NS {
		t.Errorf("node back-references = %v", node.Annotations)
	}
	var dedicated, uninitialized bool
	for _, taint := range node.Spec.Taints {
		dedicated = dedicated || taint.Key == "dedicated"
		uninitialized = uninitialized || taint.Key == v1alpha1.UninitializedTaintKey
	}
	if !dedicated || uninitialized {
		t.Errorf("node taints = %v: want dedicated and not %s", node.Spec.Taints, v1alpha1.UninitializedTaintKey)
	}

	// The bootstrap token is a credential: gone once the Node joined.
	secrets := &corev1.SecretList{}
	if err := controllertest.Env.Client.List(context.Background(), secrets, client.InNamespace("kube-system")); err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if s.Annotations[v1alpha1.NodeMachineAnnotation] == h.Prefix+"web-1" && s.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] == h.NS {
			t.Errorf("bootstrap token %s still exists after the Node joined", s.Name)
		}
	}
}

func TestMissingPrerequisitesKeepTheMachinePending(t *testing.T) {
	h := newHarness(t, nil)
	h.Machine("m", "later", nil)
	m := h.WaitPhase("m", v1alpha1.PhasePending, 10*time.Second)
	h.Eventually(10*time.Second, "a ClassNotFound condition", func() (bool, error) {
		m = h.Get("m")
		c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InfrastructureReadyCondition)
		return c != nil && c.Reason == machine.ReasonClassNotFound && strings.Contains(c.Message, "later"), nil
	})

	// The class arrives, but its Secret does not.
	h.Create(&v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: h.NS},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", SecretRef: &corev1.SecretReference{Name: "missing"}},
	})
	h.Eventually(10*time.Second, "a SecretNotFound condition", func() (bool, error) {
		m = h.Get("m")
		c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.BootstrapReadyCondition)
		return c != nil && c.Reason == machine.ReasonSecretNotFound && m.Status.Phase == v1alpha1.PhasePending, nil
	})
	if len(h.VMs("m")) != 0 {
		t.Fatal("a VM was created although the Secret is missing")
	}
	h.ExpectEvent(machine.ReasonSecretNotFound, "m")
}

// A class naming a Secret of another namespace is refused: the manager
// reads Secrets with its own identity, and would hand that Secret to the
// driver and the VM. The Machine waits, saying why, and no VM is made.
func TestClassSecretOfAnotherNamespaceIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	// A Secret that exists, in another namespace than the class's.
	elsewhere := h.NS + "-elsewhere"
	h.Create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: elsewhere, Namespace: "default"}, Data: map[string][]byte{"userData": []byte("boot")}})
	h.Create(&v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "reach", Namespace: h.NS},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", SecretRef: &corev1.SecretReference{Name: elsewhere, Namespace: "default"}},
	})
	h.Machine("m", "reach", nil)
	h.Eventually(30*time.Second, "a SecretRefused condition", func() (bool, error) {
		m := h.Get("m")
		c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.BootstrapReadyCondition)
		return c != nil && c.Reason == machine.ReasonSecretRefused && strings.Contains(c.Message, "default/"+elsewhere) && m.Status.Phase == v1alpha1.PhasePending, nil
	})
	if len(h.VMs("m")) != 0 {
		t.Fatal("a VM was created with a Secret of another namespace")
	}
}

func TestRetryableCreateErrorsBackOffThenSucceed(t *testing.T) {
	// A backoff long enough to watch the Machine in CrashLoopBackOff.
	h := newHarness(t, func(c *machine.Config) { c.BackoffBase = 2 * time.Second })
	h.Class("flaky", `{"region":"local","zones":["local-a"],"faults":{"create":{"code":"Unavailable","count":2}}}`)
	h.Machine("m", "flaky", nil)
	m := h.WaitPhase("m", v1alpha1.PhaseCrashLoopBackOff, 15*time.Second)
	if m.Status.LastOperation.ErrorCode != "Unavailable" || m.Status.LastOperation.State != v1alpha1.OperationFailed {
		t.Errorf("lastOperation = %+v; want a failed Create with errorCode Unavailable", m.Status.LastOperation)
	}
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	if vms := h.Sim.Cloud().History(); len(vms) != 1 {
		t.Fatalf("%d VMs were ever created; want exactly 1", len(vms))
	}
}

func TestTerminalCreateErrorFailsTheMachine(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("denied", `{"region":"local","zones":["local-a"],"faults":{"create":{"code":"PermissionDenied"}}}`)
	h.Machine("m", "denied", nil)
	m := h.WaitPhase("m", v1alpha1.PhaseFailed, 15*time.Second)
	if m.Status.FailureReason != machine.FailureCreateError || !strings.Contains(m.Status.FailureMessage, "PermissionDenied") {
		t.Errorf("failure = %q: %q", m.Status.FailureReason, m.Status.FailureMessage)
	}
}

func TestInvalidProviderSpecFailsWithAMessageNamingTheField(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("bad", `{"region":"local","zones":[]}`)
	h.Machine("m", "bad", nil)
	m := h.WaitPhase("m", v1alpha1.PhaseFailed, 15*time.Second)
	if !strings.Contains(m.Status.FailureMessage, "InvalidArgument") || !strings.Contains(m.Status.FailureMessage, "zones") {
		t.Errorf("failureMessage = %q; want InvalidArgument naming the zones field", m.Status.FailureMessage)
	}
	h.ExpectEvent(machine.FailureCreateError, "m")
}

func TestCreationTimeoutFiresOnTime(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("noboot", `{"region":"local","zones":["local-a"],"faults":{"bootFailure":{}}}`)
	start := time.Now()
	h.Machine("m", "noboot", func(m *v1alpha1.Machine) {
		m.Spec.Lifecycle.CreationTimeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	h.WaitPhase("m", v1alpha1.PhaseProvisioned, 10*time.Second)
	m := h.WaitPhase("m", v1alpha1.PhaseFailed, 15*time.Second)
	if m.Status.FailureReason != machine.FailureCreationTimeout {
		t.Fatalf("failureReason = %q", m.Status.FailureReason)
	}
	t.Logf("creation timeout of 3s fired after %s", time.Since(start).Round(100*time.Millisecond))
}

func TestUnhealthyMachineFailsAfterHealthTimeoutAndRecoveryCancelsIt(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", func(m *v1alpha1.Machine) {
		m.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	m := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)

	// A Node that recovers within the timeout brings the Machine back.
	if _, err := h.Sim.Cloud().SetNodeReady(m.Status.NodeRef.Name, false); err != nil {
		t.Fatal(err)
	}
	h.WaitPhase("m", v1alpha1.PhaseUnknown, 10*time.Second)
	if _, err := h.Sim.Cloud().SetNodeReady(m.Status.NodeRef.Name, true); err != nil {
		t.Fatal(err)
	}
	m = h.WaitPhase("m", v1alpha1.PhaseRunning, 10*time.Second)
	if m.Status.UnhealthySince != nil {
		t.Error("unhealthySince not cleared on recovery")
	}

	// A killed VM's Node stays NotReady: Failed once the health timeout passes.
	vm := h.VMs("m")[0]
	if _, err := h.Sim.Cloud().KillVM(vm.ID); err != nil {
		t.Fatal(err)
	}
	m = h.WaitPhase("m", v1alpha1.PhaseUnknown, 10*time.Second)
	unhealthy := m.Status.UnhealthySince.Time
	m = h.WaitPhase("m", v1alpha1.PhaseFailed, 15*time.Second)
	if m.Status.FailureReason != machine.FailureHealthTimeout {
		t.Fatalf("failureReason = %q", m.Status.FailureReason)
	}
	t.Logf("health timeout of 3s fired %s after the Machine went Unknown", time.Since(unhealthy).Round(100*time.Millisecond))
}

func TestMeltdownProtectionReplacesOneMachineAtATime(t *testing.T) {
	h := newHarness(t, func(c *machine.Config) { c.MaxConcurrentReplacements = 1 })
	h.Class("small", simSpec)
	names := []string{"m-0", "m-1", "m-2", "m-3", "m-4"}
	for _, name := range names {
		h.Machine(name, "small", func(m *v1alpha1.Machine) {
			m.Labels = map[string]string{v1alpha1.MachineSetNameLabel: "pool"}
			m.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: 2 * time.Second}
		})
	}
	for _, name := range names {
		h.WaitPhase(name, v1alpha1.PhaseRunning, 30*time.Second)
	}
	for _, name := range names { // a partition: every Node goes NotReady at once
		if _, err := h.Sim.Cloud().SetNodeReady(h.Get(name).Status.NodeRef.Name, false); err != nil {
			t.Fatal(err)
		}
	}
	countFailed := func() int {
		n := 0
		for _, name := range names {
			if h.Get(name).Status.FailureReason != "" {
				n++
			}
		}
		return n
	}
	h.Eventually(20*time.Second, "one Machine to be Failed", func() (bool, error) { return countFailed() == 1, nil })
	// Well past the health timeout, still only one: the others wait their turn.
	h.Consistently(4*time.Second, "at most one Machine Failed", func() (bool, error) {
		if n := countFailed(); n > 1 {
			return false, fmt.Errorf("%d Machines are Failed at once; the limit is 1", n)
		}
		return true, nil
	})
	h.ExpectEvent("ReplacementDeferred", "m-0", "m-1", "m-2", "m-3", "m-4")
}

// A replaced Machine that is gone before the next check of its group no
// longer counts against the limit: the next one fails on time, not after
// the ledger's expiry.
func TestMeltdownForgetsMachinesGoneFast(t *testing.T) {
	h := newHarness(t, func(c *machine.Config) { c.MaxConcurrentReplacements = 1 })
	h.Class("small", simSpec)
	for _, name := range []string{"a", "b"} {
		h.Machine(name, "small", func(m *v1alpha1.Machine) {
			m.Labels = map[string]string{v1alpha1.MachineSetNameLabel: "pool"}
			m.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: 2 * time.Second}
		})
		h.WaitPhase(name, v1alpha1.PhaseRunning, 30*time.Second)
	}
	if _, err := h.Sim.Cloud().SetNodeReady(h.Get("a").Status.NodeRef.Name, false); err != nil {
		t.Fatal(err)
	}
	h.WaitPhase("a", v1alpha1.PhaseFailed, 15*time.Second)
	h.DeleteMachine("a")
	h.WaitGone("a")

	if _, err := h.Sim.Cloud().SetNodeReady(h.Get("b").Status.NodeRef.Name, false); err != nil {
		t.Fatal(err)
	}
	h.WaitPhase("b", v1alpha1.PhaseFailed, 15*time.Second)
}

// A VM that vanishes while its Machine waits for its Node is noticed at
// the next check (HealthResync), not at the creation timeout: the Machine
// fails, to be replaced, and no second VM is made for it.
func TestVMLostBeforeTheNodeJoinedFailsTheMachine(t *testing.T) {
	h := newHarness(t, func(c *machine.Config) { c.HealthResync = time.Second })
	h.Class("slowboot", `{"region":"local","zones":["local-a"],"bootDelay":"1h"}`)
	h.Machine("m", "slowboot", nil)
	h.WaitPhase("m", v1alpha1.PhaseProvisioned, 30*time.Second)
	vms := h.VMs("m")
	if len(vms) != 1 {
		t.Fatalf("%d VMs for the Machine", len(vms))
	}
	if _, err := h.Sim.Cloud().DeleteVM(vms[0].ID); err != nil {
		t.Fatal(err)
	}
	m := h.WaitPhase("m", v1alpha1.PhaseFailed, 20*time.Second)
	if m.Status.FailureReason != machine.FailureVMLost {
		t.Errorf("failureReason = %q; want %s", m.Status.FailureReason, machine.FailureVMLost)
	}
	if n := len(h.Sim.Cloud().History()); n != 1 {
		t.Fatalf("%d VMs were ever created for the Machine; want 1", n)
	}
}
