package e2e

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
	"github.com/millwright-dev/millwright/internal/relay"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// The memory of the VM scenario's two classes.
const smallVM, largeVM = "256Mi", "384Mi"

// TestVMLifecycle proves Millwright's lifecycle on real VMs: libvirt
// domains booting the node agent (docs/providers/node-agent.md) under TCG,
// joining through TLS bootstrap.
//
//  1. A MachineDeployment of 3 Machines of class small, with bootstrap
//     data from a TokenBootstrapConfigTemplate, reaches Running: each Node
//     registered with its Machine's providerID through a CSR made with its
//     Machine's bootstrap token (username system:bootstrap:<token ID>),
//     approved by kube-controller-manager (reason AutoApproved) and issued;
//     each bootstrap token Secret is deleted after the join.
//  2. A rolling update to class large (more memory) replaces every VM,
//     within maxSurge 1 / maxUnavailable 0 at every observed state, and the
//     new Nodes' memory capacity is the new size.
//  3. SIGKILL of one VM's QEMU, behind libvirt's back: the node lifecycle
//     controller makes its Node NotReady (its Lease is no longer renewed),
//     the Machine goes Unknown, then Failed after the health timeout, and
//     is replaced.
//     Their network is restricted to the one guest forward to the API
//     server, whose connections go through relays QEMU runs (no seccomp
//     sandbox).
//  4. Scaling to 0 leaves no domain, no volume in the pool, no QEMU
//     process, no relay and no Node of the scenario.
func TestVMLifecycle(t *testing.T) {
	const replicas = 3
	s := newVMScenario(t, "vm")
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t),
		"--machine-health-timeout", "20s", "--max-concurrent-replacements", "1",
		"--unreachable-force-drain-after", "5s")
	s.createVMClass("small", smallVM)
	s.createVMClass("large", largeVM)
	s.createTokenBootstrapTemplate("join")
	rec := s.record()
	s.createDeploymentOf(replicas, vmMachineSpec("small", "join"), 1, 0)

	// 1. Boot and join.
	fleet := s.waitFleet(replicas, "small", 10*time.Minute)
	s.logCreateToRunning(rec, fleet)
	s.checkJoinedThroughCSR(fleet)
	s.checkNodeMemory(fleet, smallVM)
	s.checkRestrictedNetwork(fleet)

	// 2. Rolling update to more memory.
	stopCheck := rec.addCheck(withinRollingBounds(replicas, 1, 0))
	s.rollTo("large")
	rolled := s.waitFleet(replicas, "large", 15*time.Minute)
	stopCheck()
	for _, m := range rolled {
		if slices.ContainsFunc(fleet, func(old v1alpha1.Machine) bool { return old.Name == m.Name }) {
			t.Errorf("Machine %s of the old fleet is in the new one", m.Name)
		}
	}
	s.logCreateToRunning(rec, rolled)
	s.checkJoinedThroughCSR(rolled)
	s.checkNodeMemory(rolled, largeVM)

	// 3. A VM dies behind libvirt's back.
	victim := rolled[0]
	dom, err := s.vm.domainOf(victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.vm.killQEMU(dom.name); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the QEMU of %s (Machine %s)", dom.name, victim.Name)
	s.eventually(3*time.Minute, "Node "+nodeOf(&victim)+" NotReady through the node lifecycle controller", func() (bool, error) {
		n := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(&victim)}, n); err != nil {
			return apierrors.IsNotFound(err) && slices.Contains(rec.phasesOf()[victim.Name], v1alpha1.PhaseUnknown), err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionUnknown && c.Reason == "NodeStatusUnknown", fmt.Errorf("Ready %s (%s)", c.Status, c.Reason)
			}
		}
		return false, fmt.Errorf("no Ready condition")
	})
	s.waitKilledReplaced(rec, victim.Name, replicas, "large", 10*time.Minute)

	// 4. Scale to 0.
	s.scale(0)
	s.waitFleet(0, "large", 5*time.Minute)
	s.waitNothingLeft()
	rec.verify()

	// Every VM deleted while running (the rolling update's and the scale
	// to 0's) answered the driver's ACPI shutdown: its agent stopped and
	// pid 1 powered it off before the grace period. A guest destroyed
	// after the grace period passes only if its console shows that pid 1
	// had got as far as powering off (its agent stopped, its disks
	// synced): then the guest kernel hung in its own power-off, which is
	// not Millwright's to fix and loses nothing (docs/providers/libvirt.md,
	// "End to end on real VMs").
	asked, repressed, shutDown, destroyed := s.vm.shutdowns(t, s.driver)
	t.Logf("deletions: %d ACPI shutdowns asked, %d presses repeated, %d guests powered off by themselves (seconds: %v), %d destroyed after the grace period", asked, repressed, len(shutDown), shutDown, len(destroyed))
	var ignoredPress []string
	for _, d := range destroyed {
		if strings.Contains(d, "millwright-node-agent: powering off") {
			t.Logf("destroyed after answering the press (its kernel hung powering off):\n%s", d)
			continue
		}
		ignoredPress = append(ignoredPress, d)
	}
	if asked < 2*replicas || len(shutDown)+len(destroyed) != asked || len(ignoredPress) != 0 {
		t.Errorf("%d ACPI shutdowns asked (want at least %d), %d guests powered off, %d destroyed, %d of them without powering off: every running VM deleted should answer the press and power itself off\n%s",
			asked, 2*replicas, len(shutDown), len(destroyed), len(ignoredPress), strings.Join(ignoredPress, "\n"))
	}
}

// checkRestrictedNetwork checks the network of the Machines' VMs: QEMU's
// command line has the restricted user-mode network with the one guest
// forward, whose connections run the relay, and no seccomp sandbox
// (which would forbid running it); and relays run (the agents are
// connected to the API server through them).
func (s *scenario) checkRestrictedNetwork(ms []v1alpha1.Machine) {
	s.t.Helper()
	port := apiServerPort()
	for _, m := range ms {
		dom, err := s.vm.domainOf(m.Name)
		if err != nil {
			s.t.Fatal(err)
		}
		want := fmt.Sprintf("\x00user,id=mwnet0,restrict=on,guestfwd=tcp:%s:%s-cmd:%s %s --vm %s --max-connections %d 127.0.0.1:%s\x00",
			vmAPIServerIP, port, filepath.Join(binDir, "millwright-libvirt"), libvirt.RelayCommand, dom.name, relay.DefaultMaxConnections, port)
		pid, err := qemuPID(dom.name)
		if err != nil {
			s.t.Fatal(err)
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		if err != nil {
			s.t.Fatal(err)
		}
		if !strings.Contains(string(cmd), want) || strings.Count(string(cmd), "guestfwd=") != 1 || strings.Contains(string(cmd), "-sandbox") {
			s.t.Errorf("QEMU of Machine %s: want the restricted network %q with that one guest forward and no -sandbox; its command line:\n%s",
				m.Name, want, strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	relays := relayProcesses()
	if len(relays) == 0 {
		s.t.Error("no relay runs, yet the VMs joined: their connections do not go through the guest forward")
	}
	s.t.Logf("%d relays run for %d VMs", len(relays), len(ms))
}

// vmMachineSpec is the spec of Machines of a libvirt class whose bootstrap
// data comes from a TokenBootstrapConfigTemplate.
func vmMachineSpec(class, template string) v1alpha1.MachineSpec {
	return v1alpha1.MachineSpec{
		Class: &v1alpha1.MachineClassReference{Name: class},
		Bootstrap: v1alpha1.Bootstrap{ConfigRef: &v1alpha1.ContractReference{
			APIGroup: bootstrapv1.GroupName, Kind: "TokenBootstrapConfigTemplate", Name: template}},
	}
}

// vmAPIServer is the API server's URL as the VMs reach it: through their
// network's one guest forward (vmSpec).
func vmAPIServer(testing.TB) string {
	return "https://" + vmAPIServerIP.String() + ":" + apiServerPort()
}

// createVMClass creates a libvirt MachineClass of the scenario's VMs with
// the given memory. It has no Node template: the node agent reports the
// Node's capacity.
func (s *scenario) createVMClass(name, memory string) {
	s.t.Helper()
	s.createVMClassSpec(name, s.vm.vmSpec(memory))
}

// createVMClassSpec creates a libvirt MachineClass with providerSpec spec.
func (s *scenario) createVMClassSpec(name, spec string) {
	s.t.Helper()
	s.create(&v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: v1alpha1.MachineClassSpec{
			Provider:     "libvirt",
			ProviderSpec: runtime.RawExtension{Raw: []byte(spec)},
		},
	})
}

// checkJoinedThroughCSR: each Machine's Node carries its providerID and
// joined through a CSR made with the Machine's own bootstrap token,
// approved by kube-controller-manager and issued, for the Node's name; the
// token's Secret is deleted after the join.
func (s *scenario) checkJoinedThroughCSR(ms []v1alpha1.Machine) {
	s.t.Helper()
	ctx := context.Background()
	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := k8s.List(ctx, csrs); err != nil {
		s.t.Fatal(err)
	}
	for _, m := range ms {
		node := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: nodeOf(&m)}, node); err != nil {
			s.t.Fatal(err)
		}
		if node.Spec.ProviderID == "" || node.Spec.ProviderID != m.Spec.ProviderID {
			s.t.Errorf("Node %s has providerID %q, its Machine %q", node.Name, node.Spec.ProviderID, m.Spec.ProviderID)
		}
		cfg := &bootstrapv1.TokenBootstrapConfig{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: m.Name}, cfg); err != nil {
			s.t.Fatalf("the TokenBootstrapConfig of %s: %v", m.Name, err)
		}
		id := cfg.Status.TokenID
		if id == "" {
			s.t.Fatalf("TokenBootstrapConfig %s has no token ID", m.Name)
		}
		user := "system:bootstrap:" + id
		i := slices.IndexFunc(csrs.Items, func(c certificatesv1.CertificateSigningRequest) bool { return c.Spec.Username == user })
		if i < 0 {
			s.t.Errorf("Machine %s: no CSR made by %s", m.Name, user)
			continue
		}
		csr := &csrs.Items[i]
		if cn := csrCommonName(csr); cn != "system:node:"+node.Name {
			s.t.Errorf("CSR %s of %s asks for %q, not system:node:%s", csr.Name, user, cn, node.Name)
		}
		approved := slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
			return c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue && c.Reason == "AutoApproved"
		})
		if !approved || len(csr.Status.Certificate) == 0 {
			s.t.Errorf("CSR %s of %s: approved by kube-controller-manager %t, certificate issued %t (conditions %+v)",
				csr.Name, user, approved, len(csr.Status.Certificate) > 0, csr.Status.Conditions)
		}
		s.eventually(time.Minute, "the bootstrap token Secret of "+m.Name+" to be deleted", func() (bool, error) {
			err := k8s.Get(ctx, bootstraptoken.Key(id), &corev1.Secret{})
			return apierrors.IsNotFound(err), fmt.Errorf("Secret %s: %v", bootstraptoken.Key(id), err)
		})
	}
}

// csrCommonName is the subject CN a CSR asks for.
func csrCommonName(csr *certificatesv1.CertificateSigningRequest) string {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		return ""
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return ""
	}
	return req.Subject.CommonName
}

// checkNodeMemory: each Machine's Node reports a memory capacity of the
// VM's memory less what the kernel and its initramfs keep (about 32Mi; at
// most a quarter here, so that the two classes' ranges do not overlap).
func (s *scenario) checkNodeMemory(ms []v1alpha1.Machine, memory string) {
	s.t.Helper()
	want := resource.MustParse(memory)
	for _, m := range ms {
		node := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(&m)}, node); err != nil {
			s.t.Fatal(err)
		}
		got := node.Status.Capacity[corev1.ResourceMemory]
		if got.Value() > want.Value() || got.Value() <= want.Value()*3/4 {
			s.t.Errorf("Node %s reports memory %s, want a little under %s", node.Name, got.String(), memory)
		}
	}
}

// logCreateToRunning logs, per Machine, the seconds from its creation to
// the first state the recorder saw it Running in.
func (s *scenario) logCreateToRunning(rec *recorder, ms []v1alpha1.Machine) {
	var secs []float64
	for _, m := range ms {
		for _, v := range rec.versionsOf(m.Name) {
			if v.phase == v1alpha1.PhaseRunning {
				secs = append(secs, v.seen.Sub(m.CreationTimestamp.Time).Seconds())
				break
			}
		}
	}
	sort.Float64s(secs)
	s.t.Logf("create → Running, seconds per VM: %.1f", secs)
}

// TestVMNeverJoins proves the fate of VMs that boot but never join: their
// bootstrap data names the API server at the host's loopback as an
// unrestricted user-mode network shows it (https://10.0.2.2:<its port>),
// which their restricted network does not reach (the certificate has the
// address: without restrict they would join), so the node agent retries
// forever. Each Machine is
// Failed at the creation timeout (reason CreationTimeout) with the VM's
// console tail (where the agent logs why it cannot join) in its failure
// message, its VM is deleted, and it is replaced — the first at once, the
// next after the MachineSet's backoff (10s after the second failure).
func TestVMNeverJoins(t *testing.T) {
	const creationTimeout = 40 * time.Second
	s := newVMScenario(t, "vmnojoin")
	s.startManager("--machine-creation-timeout", creationTimeout.String())
	s.createVMClass("small", smallVM)
	unreachable := vmHostIP.String() + ":" + apiServerPort()
	s.create(&bootstrapv1.TokenBootstrapConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "unreachable", Namespace: s.ns},
		Spec: bootstrapv1.TokenBootstrapConfigTemplateSpec{Template: bootstrapv1.TokenBootstrapConfigTemplateResource{
			Spec: bootstrapv1.TokenBootstrapConfigSpec{APIServer: "https://" + unreachable}}},
	})
	rec := s.record()
	s.createDeploymentOf(1, vmMachineSpec("small", "unreachable"), 1, 0)

	// Machines by creation time, as seen; the third is the one made after
	// the backoff.
	created := map[string]time.Time{}
	var order []string
	s.eventually(6*time.Minute, "three Machines, two of them Failed by the creation timeout", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		for _, m := range ms {
			if _, ok := created[m.Name]; !ok {
				created[m.Name] = m.CreationTimestamp.Time
				order = append(order, m.Name)
			}
		}
		return len(order) >= 3, fmt.Errorf("Machines so far %v:\n%s", order, s.describeMachines())
	})
	for _, name := range order[:2] {
		v, ok := failedVersion(rec, name)
		switch {
		case !ok:
			t.Errorf("Machine %s was replaced without being seen Failed: %v", name, rec.phasesOf()[name])
		case v.failureReason != "CreationTimeout":
			t.Errorf("Machine %s failed with reason %q, want CreationTimeout", name, v.failureReason)
		case !strings.Contains(v.failureMessage, unreachable):
			t.Errorf("Machine %s's failure message does not quote the VM's console (the agent's error about %s): %q", name, unreachable, v.failureMessage)
		}
	}
	// The creation time has whole seconds (up to 1s early) and the
	// recorder sees the Failed version a little late: 8s of the 10s.
	second, _ := failedVersion(rec, order[1])
	if wait := created[order[2]].Sub(second.seen); wait < 8*time.Second {
		t.Errorf("Machine %s was created %s after %s was seen Failed, want the MachineSet's backoff of 10s", order[2], wait, order[1])
	}
	s.eventually(2*time.Minute, "the Failed Machines' VMs to be deleted", func() (bool, error) {
		for _, name := range order[:2] {
			if _, err := s.vm.domainOf(name); err == nil {
				return false, fmt.Errorf("Machine %s still has a domain", name)
			}
		}
		return true, nil
	})
	s.scale(0)
	s.waitFleet(0, "small", 3*time.Minute)
	rec.verify()
}

// failedVersion is the first version of a Machine the recorder saw Failed.
func failedVersion(rec *recorder, name string) (machineVersion, bool) {
	for _, v := range rec.versionsOf(name) {
		if v.phase == v1alpha1.PhaseFailed {
			return v, true
		}
	}
	return machineVersion{}, false
}

// TestVMLibvirtUnreachable proves that Machines wait, and do not fail,
// while the driver cannot reach libvirt: millwright-libvirt starts with a
// libvirt URI whose socket does not exist, its /readyz answers 503 saying
// libvirt is unreachable, and the Machine stays Pending or
// CrashLoopBackOff with a last operation naming the unreachable libvirt,
// never Failed. Once the driver is restarted with the right URI, the VM is
// made and the Machine reaches Running.
func TestVMLibvirtUnreachable(t *testing.T) {
	s := newVMScenario(t, "vmnolibvirt", "--default-uri", "qemu:///system?socket=/nonexistent/libvirt-sock", "--reconnect", "1s")
	s.eventually(30*time.Second, "/readyz to say libvirt is unreachable", func() (bool, error) {
		code, body, err := s.vm.driverReadyz()
		return code == 503 && strings.Contains(body, "unreachable"), fmt.Errorf("/readyz %d %q (%v)", code, body, err)
	})
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t))
	s.createVMClass("small", smallVM)
	s.createTokenBootstrapTemplate("join")
	rec := s.record()
	s.createDeploymentOf(1, vmMachineSpec("small", "join"), 1, 0)
	waiting := func() (bool, error) {
		ms, err := s.machines()
		if err != nil || len(ms) != 1 {
			return false, fmt.Errorf("Machines: %d (%v)", len(ms), err)
		}
		m := ms[0]
		if (m.Status.Phase == v1alpha1.PhasePending || m.Status.Phase == v1alpha1.PhaseCrashLoopBackOff) &&
			m.Status.FailureReason == "" && strings.Contains(m.Status.LastOperation.Description, "unreachable") {
			return true, nil
		}
		return false, fmt.Errorf("Machine %s is %s (failure %q): %q", m.Name, m.Status.Phase, m.Status.FailureReason, m.Status.LastOperation.Description)
	}
	s.eventually(time.Minute, "the Machine waiting for libvirt", waiting)
	testenv.Consistently(t, 20*time.Second, "the Machine waiting for libvirt, not Failed", waiting)

	if err := cluster.StopProcess(s.driver); err != nil {
		t.Fatal(err)
	}
	s.vm.driverArgs = s.vm.driverArgs[:len(s.vm.driverArgs)-4] // without the two flags above: the default URI
	s.startLibvirtDriver()
	s.waitFleet(1, "small", 5*time.Minute)
	for name, seq := range rec.phasesOf() {
		if slices.Contains(seq, v1alpha1.PhaseFailed) {
			t.Errorf("Machine %s went through %v: Failed while libvirt was unreachable", name, seq)
		}
	}
	s.scale(0)
	s.waitFleet(0, "small", 3*time.Minute)
	rec.verify()
}

// TestVMDriverRestartAndOrphans proves, on real VMs, that millwright-libvirt
// killed mid-rollout and started again finds the VMs it made (the rollout
// ends with one domain per Machine, no VM lost), that the manager killed
// as a scale-up creates a Machine leaves exactly one VM for it, and that
// the orphan collection deletes a domain with Millwright's metadata that
// no Machine has, and never touches a domain without that metadata.
func TestVMDriverRestartAndOrphans(t *testing.T) {
	s := newVMScenario(t, "vmrestart")
	mgr := s.startManager("--token-bootstrap-api-server", vmAPIServer(t), "--machine-safety-orphan-vms-period", "5s")
	s.createVMClass("small", smallVM)
	s.createVMClass("large", largeVM)
	s.createTokenBootstrapTemplate("join")
	rec := s.record()
	s.createDeploymentOf(2, vmMachineSpec("small", "join"), 1, 0)
	s.waitFleet(2, "small", 8*time.Minute)

	orphan, foreign := "mw-orphan-"+s.ns, "mw-foreign-"+s.ns
	s.vm.defineDomain(t, orphan, &libvirt.Meta{Namespace: s.ns, Name: "gone", UID: "orphan-" + s.ns,
		ClassNamespace: s.ns, ClassName: "small", NodeName: "gone"})
	s.vm.defineDomain(t, foreign, nil)
	t.Cleanup(func() { s.vm.undefine(foreign) })
	s.eventually(2*time.Minute, "the orphan domain to be collected", func() (bool, error) {
		exists, err := s.vm.domainExists(orphan)
		return err == nil && !exists, err
	})
	if exists, err := s.vm.domainExists(foreign); err != nil || !exists {
		t.Errorf("the domain without Millwright's metadata is gone (%v): it must never be touched", err)
	}

	s.rollTo("large")
	s.eventually(3*time.Minute, "a Machine of class large", func() (bool, error) {
		ms, err := s.machines()
		return slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Spec.Class.Name == "large" }), err
	})
	if err := killProcess(s.driver); err != nil {
		t.Fatal(err)
	}
	s.startLibvirtDriver()
	rolled := s.waitFleet(2, "large", 10*time.Minute)
	s.checkJoinedThroughCSR(rolled)

	// The manager killed as soon as the scale-up's Machine exists, while
	// it is being created; waitFleet checks one domain per Machine.
	s.scale(3)
	s.eventually(time.Minute, "the scale-up's Machine", func() (bool, error) {
		ms, err := s.machines()
		return len(ms) == 3, err
	})
	s.killManager(mgr)
	s.restartManager(mgr)
	s.waitFleet(3, "large", 5*time.Minute)
	if exists, err := s.vm.domainExists(foreign); err != nil || !exists {
		t.Errorf("the domain without Millwright's metadata is gone (%v): it must never be touched", err)
	}
	s.scale(0)
	s.waitFleet(0, "large", 5*time.Minute)
	rec.verify()
}

// waitNothingLeft waits until no Node, volume, QEMU process or relay of
// the VM scenario is left (after a scale to 0).
func (s *scenario) waitNothingLeft() {
	s.t.Helper()
	s.eventually(time.Minute, "no Node, volume, QEMU process or relay of the scenario left", func() (bool, error) {
		nodes, err := s.scenarioNodes()
		if err != nil {
			return false, err
		}
		vols, err := s.vm.volumes()
		if err != nil {
			return false, err
		}
		qemus, relays := s.vm.qemuProcesses(), relayProcesses()
		return len(nodes)+len(vols)+len(qemus)+len(relays) == 0, fmt.Errorf("Nodes %v, volumes %v, QEMU pids %v, relay pids %v", nodes, vols, qemus, relays)
	})
}

// waitKilledReplaced waits until the Machine whose VM was killed is gone
// and the fleet is replicas Machines of class again, and checks that the
// recorder saw it go Unknown, then Failed.
func (s *scenario) waitKilledReplaced(rec *recorder, victim string, replicas int, class string, bound time.Duration) {
	s.t.Helper()
	s.eventually(bound, "the killed Machine to be replaced", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == victim }) {
			return false, fmt.Errorf("%s is still there:\n%s", victim, s.describeMachines())
		}
		return s.fleetIs(ms, replicas, class)
	})
	seq := rec.phasesOf()[victim]
	if u, f := slices.Index(seq, v1alpha1.PhaseUnknown), slices.Index(seq, v1alpha1.PhaseFailed); u < 0 || f < u {
		s.t.Errorf("killed Machine %s went through %v, want Unknown then Failed", victim, seq)
	}
}
