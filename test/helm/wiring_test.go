package helm_test

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// checkWiring checks that what the chart renders fits together for the
// values: the manager elects a leader in the release's namespace, dials
// the driver where the driver serves, is probed and scraped on the ports
// it binds, and the driver's identity holds driver.clusterRole.
func checkWiring(t *testing.T, ns string, values map[string]any, r rendered) {
	t.Helper()
	objs := r.objects
	d := &appsv1.Deployment{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-manager"), d)
	spec := d.Spec.Template.Spec
	manager := testenv.Container(t, spec.Containers, "manager")
	args := flags(manager.Args)
	wantImage := fmt.Sprintf("%s:%s", value(values, "image.repository"), millwright.Metadata.AppVersion)
	if manager.Image != wantImage {
		t.Errorf("manager image %q, want %q", manager.Image, wantImage)
	}
	if le, ok := args["--leader-elect"]; !ok || (le != "" && le != "true") || args["--leader-elect-namespace"] != ns {
		t.Errorf("the manager does not elect its leader in %s: %q", ns, manager.Args)
	}
	if spec.ServiceAccountName != "millwright-manager" {
		t.Errorf("manager ServiceAccount %q", spec.ServiceAccountName)
	}

	// Probes on the health port, metrics Service on the metrics port.
	health, metrics := fmt.Sprint(":", value(values, "manager.healthPort")), fmt.Sprint(":", value(values, "metrics.port"))
	if args["--health-probe-bind-address"] != health || args["--metrics-bind-address"] != metrics {
		t.Errorf("manager binds health %q and metrics %q, want %q and %q", args["--health-probe-bind-address"], args["--metrics-bind-address"], health, metrics)
	}
	for what, p := range map[string]*corev1.Probe{"startup": manager.StartupProbe, "liveness": manager.LivenessProbe, "readiness": manager.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || fmt.Sprint(":", containerPort(manager, p.HTTPGet.Port.String())) != health {
			t.Errorf("the %s probe is not an HTTP GET on the health port: %+v", what, p)
		}
	}
	svc := &corev1.Service{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Service", "millwright-manager-metrics"), svc)
	if len(svc.Spec.Ports) != 1 || fmt.Sprint(":", containerPort(manager, svc.Spec.Ports[0].TargetPort.String())) != metrics {
		t.Errorf("the metrics Service does not target the metrics port: %+v", svc.Spec.Ports)
	}
	selects(t, "the metrics Service", svc.Spec.Selector, d.Spec.Template.Labels)

	// The driver, where the manager dials it.
	mode := value(values, "driver.mode")
	name := fmt.Sprint(value(values, "driver.name"))
	driverSA := ""
	switch mode {
	case "sidecar":
		driver := testenv.Container(t, spec.InitContainers, "driver")
		if driver.RestartPolicy == nil || *driver.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			t.Error("the sidecar driver is not a native sidecar (restartPolicy: Always)")
		}
		endpoint := flags(driver.Args)["--endpoint"]
		if args["--driver"] != name+"="+endpoint || !strings.HasPrefix(endpoint, "unix:///run/millwright/") {
			t.Errorf("manager --driver=%q, sidecar --endpoint=%q", args["--driver"], endpoint)
		}
		driverSA = "millwright-manager"
	case "deployment":
		dd := &appsv1.Deployment{}
		testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-driver"), dd)
		driver := testenv.Container(t, dd.Spec.Template.Spec.Containers, "driver")
		port := value(values, "driver.port")
		if got := flags(driver.Args)["--endpoint"]; got != fmt.Sprint("tcp://:", port) {
			t.Errorf("driver --endpoint=%q, want tcp://:%v", got, port)
		}
		ds := &corev1.Service{}
		testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Service", "millwright-driver"), ds)
		selects(t, "the driver Service", ds.Spec.Selector, dd.Spec.Template.Labels)
		if len(ds.Spec.Ports) != 1 || fmt.Sprint(containerPort(driver, ds.Spec.Ports[0].TargetPort.String())) != fmt.Sprint(port) {
			t.Errorf("the driver Service does not target the driver's port %v: %+v", port, ds.Spec.Ports)
		}
		if want := fmt.Sprintf("%s=tcp://millwright-driver.%s.svc:%d", name, ns, ds.Spec.Ports[0].Port); args["--driver"] != want {
			t.Errorf("manager --driver=%q, want %q", args["--driver"], want)
		}
		selects(t, "the manager's metrics Service", svc.Spec.Selector, dd.Spec.Template.Labels, true)
		driverSA = dd.Spec.Template.Spec.ServiceAccountName
	case "none":
		if slices.ContainsFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == "driver" }) {
			t.Error("driver.mode none still runs a driver sidecar")
		}
	}
	hasBinding := slices.ContainsFunc(objs, func(u *unstructured.Unstructured) bool {
		return u.GetName() == "millwright-driver" && u.GetKind() == "ClusterRoleBinding"
	})
	// driver.clusterRole auto: the sim's ClusterRole for the sim, none for
	// another driver.
	wantRole := fmt.Sprint(value(values, "driver.clusterRole"))
	if wantRole == "auto" {
		wantRole = ""
		if cmd, _ := value(values, "driver.command").([]any); len(cmd) > 0 && path.Base(fmt.Sprint(cmd[0])) == "millwright-sim" {
			wantRole = "millwright-sim"
		}
	}
	if (driverSA == "" || wantRole == "") && hasBinding {
		t.Error("a driver ClusterRoleBinding without a driver or a role for it")
	}
	if driverSA != "" && wantRole != "" {
		b := &rbacv1.ClusterRoleBinding{}
		testenv.FromUnstructured(t, testenv.FindObject(t, objs, "ClusterRoleBinding", "millwright-driver"), b)
		want := rbacv1.Subject{Kind: "ServiceAccount", Name: driverSA, Namespace: ns}
		if b.RoleRef.Name != wantRole || !slices.Equal(b.Subjects, []rbacv1.Subject{want}) {
			t.Errorf("the driver's binding gives %s to %+v, want %v to %+v", b.RoleRef.Name, b.Subjects, wantRole, want)
		}
	}
	// A separate driver with no role gets no API token either.
	if mode == "deployment" {
		dd := &appsv1.Deployment{}
		testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-driver"), dd)
		mounts := dd.Spec.Template.Spec.AutomountServiceAccountToken == nil || *dd.Spec.Template.Spec.AutomountServiceAccountToken
		if mounts != (wantRole != "") {
			t.Errorf("the driver Deployment mounts an API token: %v, its ClusterRole is %q", mounts, wantRole)
		}
	}

	// The ServiceMonitor, when asked for, scrapes the metrics Service.
	var sm *unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == "ServiceMonitor" {
			sm = u
		}
	}
	if on := value(values, "metrics.serviceMonitor.enabled") == true; on != (sm != nil) {
		t.Fatalf("metrics.serviceMonitor.enabled is %v, a ServiceMonitor rendered: %v", on, sm != nil)
	}
	if sm != nil {
		sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
		selects(t, "the ServiceMonitor", sel, svc.Labels)
		eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
		if len(eps) != 1 || eps[0].(map[string]any)["port"] != svc.Spec.Ports[0].Name {
			t.Errorf("the ServiceMonitor scrapes %v, the Service's port is %s", eps, svc.Spec.Ports[0].Name)
		}
	}
}

// selects checks that selector matches labels, or, with not, that it does
// not.
func selects(t *testing.T, what string, selector, labels map[string]string, not ...bool) {
	t.Helper()
	match := len(selector) > 0
	for k, v := range selector {
		if labels[k] != v {
			match = false
		}
	}
	if want := len(not) == 0; match != want {
		t.Errorf("%s selects %v: matches labels %v is %v, want %v", what, selector, labels, match, want)
	}
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

// containerPort resolves a port (a name or a number) to the container's
// port number; 0 if the container has no such port.
func containerPort(c corev1.Container, port string) int32 {
	for _, p := range c.Ports {
		if p.Name == port || port == fmt.Sprint(p.ContainerPort) {
			return p.ContainerPort
		}
	}
	return 0
}

// Without leader election the manager's Deployment replaces its pod by
// stopping the old one first: a rolling update would run two managers,
// both creating VMs, for a while.
func TestNoLeaderElectionRecreates(t *testing.T) {
	for _, elect := range []bool{false, true} {
		r := render(t, "millwright-system", map[string]any{"manager": map[string]any{"leaderElection": map[string]any{"enabled": elect}}})
		d := &appsv1.Deployment{}
		testenv.FromUnstructured(t, testenv.FindObject(t, r.objects, "Deployment", "millwright-manager"), d)
		if recreate := d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType; recreate == elect {
			t.Errorf("leader election %v: strategy %q", elect, d.Spec.Strategy.Type)
		}
	}
}
