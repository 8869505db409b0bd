//go:build realkubelet

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/libvirt"
)

// realKubeletMemory is the kubelet image's VMs' memory: systemd,
// cloud-init, containerd and the kubelet (whose default hard eviction
// threshold alone is 100Mi available).
const realKubeletMemory = "1Gi"

// The workload image the kubelet image carries (hack/tools/cloudimage.sh).
const helloImage = "localhost/millwright/hello:v1"

// The taint the scenario's Node template asks for; the workload tolerates it.
var realKubeletTaint = corev1.Taint{Key: "example.com/dedicated", Value: "real-kubelet", Effect: corev1.TaintEffectNoSchedule}

// TestVMRealKubelet proves that the real kubelet joins with the user data
// TokenBootstrapConfig renders, unchanged (issue #34): a libvirt Machine
// boots the kubelet image hack/tools/cloudimage.sh builds (`make
// kubelet-image`: Debian, systemd, cloud-init, the kubelet of the pinned
// Kubernetes, containerd, runc, a bridge CNI network, and local pause and
// workload images).
//
//  1. One Machine of a MachineDeployment, with bootstrap data from a
//     TokenBootstrapConfigTemplate, reaches Running. Its Node joined
//     through the kubelet's own TLS bootstrap: a CSR made by
//     system:bootstrap:<the Machine's token ID> for system:node:<name>,
//     approved by kube-controller-manager and issued; the token is deleted
//     after the join; the Node carries the Machine's providerID.
//  2. The Node is the real kubelet's: kubeletVersion is the control
//     plane's (the same pinned module), the container runtime is
//     containerd, the OS Debian, Ready with reason KubeletReady; it has the
//     Node template's label and taint, and Millwright's uninitialized
//     taint, which the kubelet registered with, is gone. The console shows
//     the flags the user data took from the meta-data and the kubelet's
//     certificate manager scheduling the rotation of its client certificate.
//  3. A Deployment of the workload image, tolerating the taint, runs a pod
//     on the Node that becomes Ready through its readiness probe (HTTP, from
//     the kubelet to the pod's address on the bridge network): the pause
//     image, the runtime and the CNI work.
//  4. Scaling the MachineDeployment to 0 drains the Node (the pod is
//     evicted, and the kubelet stops it) before the VM is deleted; nothing
//     of the scenario is left.
//
// Built only with the realkubelet tag, by `make e2e-real-kubelet`
// (docs/providers/node-images.md): the image takes root, debootstrap and
// minutes to build, and the boot minutes under TCG.
func TestVMRealKubelet(t *testing.T) {
	s := newVMScenario(t, "realkubelet")
	// On failure, what the VMs said (the kubelet logs to the console):
	// registered after the scenario's cleanups, so it runs before them.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(s.vm.consoleDir, "*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			lines := strings.Split(string(data), "\n")
			t.Logf("console %s, last lines:\n%s", filepath.Base(l), strings.Join(lines[max(0, len(lines)-150):], "\n"))
		}
	})
	spec := s.vm.cloudImageSpec(t, filepath.Join(binDir, "kubeletimage"), realKubeletMemory)
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t), "--machine-creation-timeout", "20m")
	s.createVMClassSpec("kubelet", spec)
	s.createTokenBootstrapTemplate("join")
	rec := s.record()
	mspec := vmMachineSpec("kubelet", "join")
	mspec.NodeTemplate.Taints = []corev1.Taint{realKubeletTaint}
	s.createDeploymentOf(1, mspec, 1, 0)

	// 1. Boot and join through the kubelet's TLS bootstrap.
	fleet := s.waitFleet(1, "kubelet", 15*time.Minute)
	s.logCreateToRunning(rec, fleet)
	m := fleet[0]
	dom, err := s.vm.domainOf(m.Name)
	if err != nil {
		t.Fatal(err)
	}
	console := libvirt.ConsoleLog(s.vm.consoleDir, dom.name)
	s.checkJoinedThroughCSR(fleet)

	// 2. The real kubelet's Node.
	node := s.nodeNamed(nodeOf(&m))
	cs, err := discovery.NewDiscoveryClientForConfig(cluster.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	server, err := cs.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	info := node.Status.NodeInfo
	t.Logf("Node %s: kubeletVersion %s, containerRuntimeVersion %s, osImage %q, kernel %s, providerID %s",
		node.Name, info.KubeletVersion, info.ContainerRuntimeVersion, info.OSImage, info.KernelVersion, node.Spec.ProviderID)
	if info.KubeletVersion != server.GitVersion {
		t.Errorf("Node %s reports kubeletVersion %q; the kubelet is built from the control plane's module, %s", node.Name, info.KubeletVersion, server.GitVersion)
	}
	if !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") || !strings.Contains(info.OSImage, "Debian") {
		t.Errorf("Node %s: runtime %q, OS %q; want containerd on Debian", node.Name, info.ContainerRuntimeVersion, info.OSImage)
	}
	if c := nodeCondition(node, corev1.NodeReady); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Errorf("Node %s Ready condition %+v; want True, KubeletReady", node.Name, c)
	}
	if node.Labels["pool"] != s.ns {
		t.Errorf("Node %s labels %v lack the template's pool=%s", node.Name, node.Labels, s.ns)
	}
	if !slices.ContainsFunc(node.Spec.Taints, func(tt corev1.Taint) bool {
		return tt.MatchTaint(&realKubeletTaint) && tt.Value == realKubeletTaint.Value
	}) {
		t.Errorf("Node %s taints %v lack the template's %v", node.Name, node.Spec.Taints, realKubeletTaint)
	}
	s.eventually(time.Minute, "the uninitialized taint to be removed from "+node.Name, func() (bool, error) {
		n := s.nodeNamed(node.Name)
		has := slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == v1alpha1.UninitializedTaintKey })
		return !has, fmt.Errorf("taints %v", n.Spec.Taints)
	})
	data, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`millwright: kubelet flags from the meta-data: --provider-id=` + regexp.QuoteMeta(m.Spec.ProviderID) + ` --hostname-override=` + regexp.QuoteMeta(node.Name)),
		// The certificate manager logs its rotation deadline at V(2),
		// below the kubelet's default verbosity; this line is V(0).
		regexp.MustCompile(`Client rotation is on, will bootstrap in background`),
	} {
		if line := want.Find(data); line != nil {
			t.Logf("console: %s", line)
		} else {
			t.Errorf("the console of %s has no %q; tail:\n%s", dom.name, want, s.vm.consoleTail(dom.name, 60))
		}
	}

	// 3. A real pod, Ready through its readiness probe.
	s.create(helloDeployment(s.ns, node.Name))
	var pod corev1.Pod
	start := time.Now()
	s.eventually(10*time.Minute, "a Ready pod of the workload on "+node.Name, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := k8s.List(context.Background(), pods, client.InNamespace(s.ns), client.MatchingLabels{"app": "hello"}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if c := podCondition(&p, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
				pod = p
				return true, nil
			}
		}
		return false, fmt.Errorf("pods %s; console tail:\n%s", podSummary(pods.Items), s.vm.consoleTail(dom.name, 20))
	})
	t.Logf("pod %s Ready on %s at %s, %.1fs after its Deployment (phase %s, image %s)",
		pod.Name, pod.Spec.NodeName, pod.Status.PodIP, time.Since(start).Seconds(), pod.Status.Phase, pod.Spec.Containers[0].Image)
	if pod.Spec.NodeName != node.Name {
		t.Errorf("pod %s runs on %s, not %s", pod.Name, pod.Spec.NodeName, node.Name)
	}

	// 4. Drain by scaling to 0: the pod goes before the VM.
	s.scale(0)
	s.eventually(10*time.Minute, "pod "+pod.Name+" to be evicted and stopped", func() (bool, error) {
		p := &corev1.Pod{}
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: pod.Name}, p)
		if err == nil {
			return false, fmt.Errorf("pod %s phase %s, deleting %v", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
		}
		return client.IgnoreNotFound(err) == nil, err
	})
	gone := time.Now()
	if _, err := s.vm.domainOf(m.Name); err != nil {
		t.Errorf("the VM of %s was gone before its pod %s was (domain: %v)", m.Name, pod.Name, err)
	}
	// The guest powers off on the driver's ACPI shutdown (systemd), or is
	// destroyed after the class's 30s grace period.
	s.eventually(5*time.Minute, "the VM and the Node of "+m.Name+" to be deleted", func() (bool, error) {
		nodes, err := s.scenarioNodes()
		if err != nil {
			return false, err
		}
		_, derr := s.vm.domainOf(m.Name)
		return len(nodes) == 0 && derr != nil, fmt.Errorf("Nodes %v, domain lookup: %v", nodes, derr)
	})
	t.Logf("pod %s gone; the VM and Node %.1fs later", pod.Name, time.Since(gone).Seconds())
	s.waitNothingLeft()
	rec.verify()
}

// helloDeployment is one replica of the workload image, tolerating the
// scenario's taint and pinned to node, Ready once /healthz answers.
func helloDeployment(ns, node string) *appsv1.Deployment {
	labels := map[string]string{"app": "hello"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       helloPodSpec(map[string]string{corev1.LabelHostname: node}),
			},
		},
	}
}

// helloPodSpec runs the workload image on the Nodes nodeSelector selects,
// tolerating the scenario's taint, Ready once /healthz answers.
func helloPodSpec(nodeSelector map[string]string) corev1.PodSpec {
	env := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return corev1.PodSpec{
		NodeSelector:                  nodeSelector,
		Tolerations:                   []corev1.Toleration{{Key: realKubeletTaint.Key, Operator: corev1.TolerationOpEqual, Value: realKubeletTaint.Value, Effect: realKubeletTaint.Effect}},
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](10),
		Containers: []corev1.Container{{
			Name:            "hello",
			Image:           helloImage,
			ImagePullPolicy: corev1.PullNever,
			Ports:           []corev1.ContainerPort{{ContainerPort: 8080}},
			Env:             []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName")},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
				PeriodSeconds: 2,
			},
		}},
	}
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podSummary says where each pod is and why it is not Ready.
func podSummary(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		why := string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				why += " " + w.Reason + ": " + w.Message
			}
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				why += " " + string(c.Type) + ": " + c.Message
			}
		}
		out = append(out, p.Name+" on "+p.Spec.NodeName+" ("+why+")")
	}
	return "[" + strings.Join(out, "; ") + "]"
}
