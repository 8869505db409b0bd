package deploy_test

import (
	"context"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/testenv"
)

const (
	image          = "ghcr.io/millwright-dev/millwright:latest"
	systemNS       = "millwright-system"
	serviceAccount = "millwright-manager"
	// socket is the sim's driver socket in the Deployment.
	socket = "/run/millwright/sim.sock"
)

// defaultObjects is what config/default must render, as id prints them.
var defaultObjects = []string{
	"namespace/millwright-system",
	"customresourcedefinition.apiextensions.k8s.io/machineclasses.machine.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/machines.machine.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/machinesets.machine.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/machinedeployments.machine.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/machinedrainrules.machine.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/machinehealthchecks.machine.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/machinedisruptionbudgets.machine.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/simmachines.infrastructure.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/simmachinetemplates.infrastructure.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/tokenbootstrapconfigs.bootstrap.millwright.dev",
	"customresourcedefinition.apiextensions.k8s.io/tokenbootstrapconfigtemplates.bootstrap.millwright.dev",
	"millwright-system serviceaccount/millwright-manager",
	"clusterrole.rbac.authorization.k8s.io/millwright-manager",
	"clusterrole.rbac.authorization.k8s.io/millwright-sim",
	"clusterrolebinding.rbac.authorization.k8s.io/millwright-manager",
	"clusterrolebinding.rbac.authorization.k8s.io/millwright-sim",
	"kube-system role.rbac.authorization.k8s.io/millwright-manager-bootstrap-tokens",
	"kube-system rolebinding.rbac.authorization.k8s.io/millwright-manager-bootstrap-tokens",
	"millwright-system role.rbac.authorization.k8s.io/millwright-manager-leader-election",
	"millwright-system rolebinding.rbac.authorization.k8s.io/millwright-manager-leader-election",
	"millwright-system service/millwright-manager-metrics",
	"millwright-system deployment.apps/millwright-manager",
}

// config/default renders exactly the expected objects, and the API server
// accepts all of them in a server-side dry run: valid CRDs, RBAC and
// Deployment, and a pod template that the "restricted" Pod Security level
// its namespace enforces has nothing to warn about.
func TestDefaultBaseAppliesServerSide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	yaml, objs := render(t, "default")

	var got []string
	for _, u := range objs {
		got = append(got, testenv.ObjectID(u))
	}
	for _, want := range defaultObjects {
		if !slices.Contains(got, want) {
			t.Errorf("config/default does not render %s", want)
		}
	}
	for _, g := range got {
		if !slices.Contains(defaultObjects, g) {
			t.Errorf("config/default renders %s, which this test does not expect", g)
		}
	}

	// A dry run creates nothing, so the namespaced objects would find no
	// namespace: create the rendered Namespace for real first. Its Pod
	// Security labels then judge the Deployment in the dry run.
	ns := testenv.FindObject(t, objs, "Namespace", systemNS).DeepCopy()
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	stdout, stderr, err := runKubectl(ctx, yaml, "apply", "--server-side", "--dry-run=server", "-f", "-")
	if err != nil {
		t.Fatalf("server-side dry run of config/default: %v\n%s%s", err, stdout, stderr)
	}
	if strings.Contains(stderr, "Warning") {
		t.Errorf("the dry run warns (Pod Security or deprecations):\n%s", stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != len(objs) {
		t.Errorf("the dry run printed %d lines for %d objects:\n%s", len(lines), len(objs), stdout)
	}
	for _, u := range objs {
		// kubectl prints kind.group/name without the namespace.
		want := testenv.ObjectID(u)[strings.Index(testenv.ObjectID(u), " ")+1:] + " serverside-applied (server dry run)"
		if !slices.Contains(lines, want) {
			t.Errorf("the dry run did not print %q:\n%s", want, stdout)
		}
	}

	// And it was a dry run.
	err = env.Client.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: "millwright-manager"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the Deployment exists after a dry run (err %v)", err)
	}
}

// The Deployment runs both programs from the one image, with the flags and
// hardening the issue asks for, wired together consistently: the socket,
// the probe and metrics ports, the ServiceAccount.
func TestDeploymentIsConsistent(t *testing.T) {
	_, objs := render(t, "default")
	d := &appsv1.Deployment{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-manager"), d)
	spec := d.Spec.Template.Spec

	if spec.ServiceAccountName != serviceAccount {
		t.Errorf("serviceAccountName %q, want %q", spec.ServiceAccountName, serviceAccount)
	}
	if testenv.FindObject(t, objs, "ServiceAccount", serviceAccount).GetNamespace() != d.Namespace {
		t.Errorf("the ServiceAccount is not in the Deployment's namespace %s", d.Namespace)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("the pod does not set runAsNonRoot: true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("the pod's seccompProfile is not RuntimeDefault")
	}

	manager := testenv.Container(t, spec.Containers, "manager")
	sim := testenv.Container(t, spec.InitContainers, "sim")
	if sim.RestartPolicy == nil || *sim.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("the sim is not a native sidecar (an init container with restartPolicy: Always)")
	}
	if len(manager.Command) != 0 {
		t.Errorf("the manager overrides the image's entrypoint with %q", manager.Command)
	}
	if !slices.Equal(sim.Command, []string{"/millwright-sim"}) {
		t.Errorf("the sim's command is %q, want [/millwright-sim]", sim.Command)
	}
	for _, c := range []corev1.Container{manager, sim} {
		if c.Image != image {
			t.Errorf("%s: image %q, want %q", c.Name, c.Image, image)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: the root filesystem is not read-only", c.Name)
		}
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: privilege escalation is not off", c.Name)
		}
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities are not exactly drop [ALL]", c.Name)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; !ok {
				t.Errorf("%s: no %s request", c.Name, r)
			}
			if _, ok := c.Resources.Limits[r]; !ok {
				t.Errorf("%s: no %s limit", c.Name, r)
			}
		}
		// The socket's directory is the shared emptyDir in both.
		mounted := false
		for _, m := range c.VolumeMounts {
			if m.MountPath == path.Dir(socket) && volumeIsEmptyDir(spec.Volumes, m.Name) {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("%s: no emptyDir mounted at %s, the socket's directory", c.Name, path.Dir(socket))
		}
	}

	margs := flags(manager.Args)
	if _, ok := margs["--leader-elect"]; !ok {
		t.Errorf("the manager runs without --leader-elect: %q", manager.Args)
	}
	if got := margs["--driver"]; got != "sim=unix://"+socket {
		t.Errorf("manager --driver=%q, want sim=unix://%s", got, socket)
	}
	sargs := flags(sim.Args)
	if got := sargs["--endpoint"]; got != "unix://"+socket {
		t.Errorf("sim --endpoint=%q, want unix://%s", got, socket)
	}
	if got := sargs["--node-mode"]; got != "kwok" {
		t.Errorf("sim --node-mode=%q, want kwok", got)
	}

	// Probes and metrics on the ports the flags bind.
	healthPort := portOf(t, margs, "--health-probe-bind-address")
	metricsPort := portOf(t, margs, "--metrics-bind-address")
	for _, p := range []struct {
		what  string
		probe *corev1.Probe
		path  string
	}{{"startup", manager.StartupProbe, "/healthz"}, {"liveness", manager.LivenessProbe, "/healthz"}, {"readiness", manager.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("the manager has no HTTP %s probe", p.what)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s probe on %s, want %s", p.what, p.probe.HTTPGet.Path, p.path)
		}
		if got := containerPort(manager, p.probe.HTTPGet.Port.String()); got != healthPort {
			t.Errorf("%s probe on port %s (%d), but /healthz and /readyz are on %d", p.what, p.probe.HTTPGet.Port.String(), got, healthPort)
		}
	}
	svc := &corev1.Service{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Service", "millwright-manager-metrics"), svc)
	if len(svc.Spec.Ports) != 1 || containerPort(manager, svc.Spec.Ports[0].TargetPort.String()) != metricsPort {
		t.Errorf("the metrics Service does not target the manager's metrics port %d: %+v", metricsPort, svc.Spec.Ports)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the metrics Service selects %s=%s, which the pod does not have", k, v)
		}
	}
}

// config/prometheus renders a ServiceMonitor (whose CRD test clusters do
// not have, hence its own base) for the metrics Service of config/manager.
func TestPrometheusBaseRenders(t *testing.T) {
	_, objs := render(t, "prometheus")
	if len(objs) != 1 {
		t.Fatalf("config/prometheus renders %d objects, want 1 ServiceMonitor", len(objs))
	}
	sm := objs[0]
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetKind() != "ServiceMonitor" || sm.GetNamespace() != systemNS {
		t.Fatalf("config/prometheus renders %s %s in %q, want a monitoring.coreos.com/v1 ServiceMonitor in %s",
			sm.GetAPIVersion(), sm.GetKind(), sm.GetNamespace(), systemNS)
	}
	_, manager := render(t, "manager")
	svc := testenv.FindObject(t, manager, "Service", "millwright-manager-metrics")
	if svc.GetNamespace() != sm.GetNamespace() {
		t.Errorf("the ServiceMonitor is in %s, the Service in %s", sm.GetNamespace(), svc.GetNamespace())
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(selector) == 0 {
		t.Error("the ServiceMonitor selects no labels")
	}
	for k, v := range selector {
		if svc.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service does not have", k, v)
		}
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(endpoints) != 1 || len(ports) != 1 {
		t.Fatalf("want one endpoint and one Service port, have %d and %d", len(endpoints), len(ports))
	}
	if ep, port := endpoints[0].(map[string]any)["port"], ports[0].(map[string]any)["name"]; ep != port {
		t.Errorf("the ServiceMonitor scrapes port %v, the Service's port is named %v", ep, port)
	}
}

func volumeIsEmptyDir(vs []corev1.Volume, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return v.EmptyDir != nil
		}
	}
	return false
}

// flags maps --flag=value (or a bare --flag) arguments to their values.
func flags(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

// portOf returns the port of the address flag name.
func portOf(t *testing.T, args map[string]string, name string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(args[name])
	if err != nil {
		t.Fatalf("%s=%q: %v", name, args[name], err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, args[name], err)
	}
	return n
}

// containerPort resolves a probe's or Service's port (a name or a number)
// to the container's port number; 0 if the container has no such port.
func containerPort(c corev1.Container, port string) int {
	for _, p := range c.Ports {
		if p.Name == port || port == strconv.Itoa(int(p.ContainerPort)) {
			return int(p.ContainerPort)
		}
	}
	return 0
}
