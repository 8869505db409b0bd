package helm_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"google.golang.org/grpc"

	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// infoOnly is a driver answering GetPluginInfo; nothing else is called.
type infoOnly struct{ driver.Driver }

func (infoOnly) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return &driver.GetPluginInfoResponse{Name: "sim", Version: "v0.0.1"}, nil
}

// tlsFiles writes the files a container mounts from the Secret and
// returns where each path the container is given lands, mapping the
// mount path mountPath to a temporary directory.
func tlsFiles(t *testing.T, secret *corev1.Secret, mountPath string, paths [3]string) driver.TLSFiles {
	t.Helper()
	dir := t.TempDir()
	for k, v := range secret.Data {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	local := func(p string) string {
		rel, ok := strings.CutPrefix(p, mountPath+"/")
		if !ok {
			t.Fatalf("%s is not in the Secret's mount %s", p, mountPath)
		}
		return filepath.Join(dir, rel)
	}
	return driver.TLSFiles{CA: local(paths[0]), Cert: local(paths[1]), Key: local(paths[2])}
}

// mountOf is where container c mounts the Secret volume of spec, and its
// Secret's name.
func mountOf(t *testing.T, spec corev1.PodSpec, c corev1.Container) (path, secret string) {
	t.Helper()
	for _, m := range c.VolumeMounts {
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				if !m.ReadOnly {
					t.Errorf("container %s mounts Secret %s writable", c.Name, v.Secret.SecretName)
				}
				return m.MountPath, v.Secret.SecretName
			}
		}
	}
	t.Fatalf("container %s mounts no Secret", c.Name)
	return "", ""
}

// renderedTLS is what one render of a separate driver gives each side:
// the files each container is pointed at, from the Secret it mounts.
type renderedTLS struct {
	host            string // the host name the manager dials
	server, manager driver.TLSFiles
}

func renderTLS(t *testing.T, ns string) renderedTLS {
	t.Helper()
	objs := render(t, ns, map[string]any{"driver": map[string]any{"mode": "deployment"}}).objects
	secret := func(name string) *corev1.Secret {
		s := &corev1.Secret{}
		testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Secret", name), s)
		return s
	}
	dd, md := &appsv1.Deployment{}, &appsv1.Deployment{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-driver"), dd)
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-manager"), md)

	d := testenv.Container(t, dd.Spec.Template.Spec.Containers, "driver")
	env := map[string]string{}
	for _, e := range d.Env {
		env[e.Name] = e.Value
	}
	dPath, dSecret := mountOf(t, dd.Spec.Template.Spec, d)
	server := tlsFiles(t, secret(dSecret), dPath, [3]string{env[driver.TLSClientCAEnv], env[driver.TLSCertEnv], env[driver.TLSKeyEnv]})

	m := testenv.Container(t, md.Spec.Template.Spec.Containers, "manager")
	args := flags(m.Args)
	mPath, mSecret := mountOf(t, md.Spec.Template.Spec, m)
	manager := tlsFiles(t, secret(mSecret), mPath, [3]string{args["--driver-tls-ca"], args["--driver-tls-cert"], args["--driver-tls-key"]})

	endpoint := strings.TrimPrefix(args["--driver"], "sim=tcp://")
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		t.Fatalf("manager --driver=%s: %v", args["--driver"], err)
	}
	return renderedTLS{host: host, server: server, manager: manager}
}

// serveAt serves a driver with the files of f on the loopback until the
// test ends; the manager reaches it under host (the Service's name).
func serveAt(t *testing.T, f driver.TLSFiles) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "tcp://" + lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- driver.ServeEndpoint(ctx, endpoint, infoOnly{}, driver.WithServerTLS(f)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeEndpoint: %v", err)
		}
	})
	return endpoint
}

func dialAs(t *testing.T, endpoint, host string, f driver.TLSFiles) *driver.Client {
	t.Helper()
	// The Service's name as the authority: the name the driver's
	// certificate must carry, whatever address the test serves on.
	c, err := driver.Dial(endpoint, driver.WithTLS(f), driver.WithReadyWait(2*time.Second),
		driver.WithGRPCDialOptions(grpc.WithAuthority(host)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A separate driver and the manager, given the files the chart mounts and
// the flags and environment it sets, speak mutual TLS under the Service's
// name; a manager of another release (another CA) is refused, and so is
// the manager when the driver's certificate is another release's. Only the
// manager's pods may connect (NetworkPolicy).
func TestDriverDeploymentSpeaksMutualTLS(t *testing.T) {
	const ns = "mw-tls"
	a, b := renderTLS(t, ns), renderTLS(t, ns) // two renders: two CAs
	if a.host != "millwright-driver."+ns+".svc" {
		t.Errorf("the manager dials %s", a.host)
	}
	endpoint := serveAt(t, a.server)
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dialAs(t, endpoint, a.host, a.manager).GetPluginInfo(ctx, nil)
		return err == nil, nil
	})
	if err != nil {
		t.Fatal("the manager never reached the driver over mutual TLS with the chart's certificates")
	}
	if _, err := dialAs(t, endpoint, a.host, b.manager).GetPluginInfo(context.Background(), nil); err == nil {
		t.Error("the driver answered a manager whose certificate another release's CA signed")
	}
	other := serveAt(t, b.server)
	// b's manager reaches b's driver (so it is up)...
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dialAs(t, other, b.host, b.manager).GetPluginInfo(ctx, nil)
		return err == nil, nil
	})
	if err != nil {
		t.Fatal("the second release's manager never reached its driver")
	}
	// ...which a's manager refuses.
	if _, err := dialAs(t, other, a.host, a.manager).GetPluginInfo(context.Background(), nil); err == nil {
		t.Error("the manager accepted a driver whose certificate another release's CA signed")
	}

	objs := render(t, ns, map[string]any{"driver": map[string]any{"mode": "deployment"}}).objects
	checkDriverNetworkPolicy(t, objs)
}

// checkDriverNetworkPolicy: the policy selects the driver's pods, limits
// their ingress to one rule, from the manager's pods, on the gRPC port.
func checkDriverNetworkPolicy(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "NetworkPolicy", "millwright-driver"), np)
	dd, md := &appsv1.Deployment{}, &appsv1.Deployment{}
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-driver"), dd)
	testenv.FromUnstructured(t, testenv.FindObject(t, objs, "Deployment", "millwright-manager"), md)
	selects(t, "the NetworkPolicy", np.Spec.PodSelector.MatchLabels, dd.Spec.Template.Labels)
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != 1 {
		t.Fatalf("the NetworkPolicy: %+v", np.Spec)
	}
	in := np.Spec.Ingress[0]
	if len(in.From) != 1 || in.From[0].PodSelector == nil || in.From[0].NamespaceSelector != nil || in.From[0].IPBlock != nil {
		t.Fatalf("the NetworkPolicy admits %+v, want the manager's pods alone", in.From)
	}
	selects(t, "the NetworkPolicy's peer", in.From[0].PodSelector.MatchLabels, md.Spec.Template.Labels)
	selects(t, "the NetworkPolicy's peer", in.From[0].PodSelector.MatchLabels, dd.Spec.Template.Labels, true)
	d := testenv.Container(t, dd.Spec.Template.Spec.Containers, "driver")
	if len(in.Ports) != 1 || fmt.Sprint(containerPort(d, in.Ports[0].Port.String())) != fmt.Sprint(value(nil, "driver.port")) {
		t.Errorf("the NetworkPolicy admits ports %+v, want the driver's gRPC port", in.Ports)
	}
}

// Both of driver.tls's Secrets or neither: a half would leave one side
// with the chart's CA and the other with the user's.
func TestDriverTLSSecretsTogether(t *testing.T) {
	for _, tls := range []map[string]any{{"serverSecret": "s"}, {"clientSecret": "c"}} {
		_, err := tryRender("mw-tls", map[string]any{"driver": map[string]any{"mode": "deployment", "tls": tls}})
		if err == nil || !strings.Contains(err.Error(), "name both serverSecret and clientSecret") {
			t.Errorf("driver.tls %v: %v", tls, err)
		}
	}
	r := render(t, "mw-tls", map[string]any{"driver": map[string]any{"mode": "deployment", "tls": map[string]any{"serverSecret": "s", "clientSecret": "c"}}})
	for _, u := range r.objects {
		if u.GetKind() == "Secret" {
			t.Errorf("with driver.tls Secrets named, the chart still makes %s", u.GetName())
		}
	}
	dd, md := &appsv1.Deployment{}, &appsv1.Deployment{}
	testenv.FromUnstructured(t, testenv.FindObject(t, r.objects, "Deployment", "millwright-driver"), dd)
	testenv.FromUnstructured(t, testenv.FindObject(t, r.objects, "Deployment", "millwright-manager"), md)
	if _, s := mountOf(t, dd.Spec.Template.Spec, testenv.Container(t, dd.Spec.Template.Spec.Containers, "driver")); s != "s" {
		t.Errorf("the driver mounts Secret %s, want s", s)
	}
	if _, s := mountOf(t, md.Spec.Template.Spec, testenv.Container(t, md.Spec.Template.Spec.Containers, "manager")); s != "c" {
		t.Errorf("the manager mounts Secret %s, want c", s)
	}
}
