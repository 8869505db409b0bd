package localcluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// TestCluster starts one cluster and runs the checks on it in order: the
// later ones build on the earlier ones' objects, and one start-up is most
// of the test's time.
func TestCluster(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	begin := time.Now()
	vmIP := net.IPv4(10, 0, 2, 100)
	c, err := Start(ctx, Options{Dir: dir, Logf: t.Logf, APIServerExtraIPs: []net.IP{vmIP}, APIServerBindAddress: "0.0.0.0", AuditReads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	t.Logf("cluster started in %s", time.Since(begin).Round(100*time.Millisecond))
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	const nodeName = "kwok-node-1"

	t.Run("reads are audited, writes are not", func(t *testing.T) {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "kube-public", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "audit-probe", Namespace: "default"}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, probe, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// audited lists the log's events as "verb resource name".
		audited := func() []string {
			log, _ := os.ReadFile(c.AuditLogPath())
			var events []string
			for _, line := range bytes.Split(bytes.TrimSpace(log), []byte("\n")) {
				var e struct {
					Verb      string `json:"verb"`
					ObjectRef struct{ Resource, Name string }
				}
				if json.Unmarshal(line, &e) == nil {
					events = append(events, e.Verb+" "+e.ObjectRef.Resource+" "+e.ObjectRef.Name)
				}
			}
			return events
		}
		var events []string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			events = audited()
			return slices.Contains(events, "get namespaces kube-public"), nil
		})
		if err != nil {
			t.Fatalf("the audit log %s lacks the namespace's GET: %v; it holds %d events", c.AuditLogPath(), err, len(events))
		}
		if slices.Contains(events, "create configmaps audit-probe") {
			t.Error("the audit log holds a create; want reads only")
		}
	})

	t.Run("healthy through the kubeconfig", func(t *testing.T) {
		if c.Kubeconfig() != filepath.Join(dir, "kubeconfig") || c.Dir() != dir {
			t.Errorf("Kubeconfig() = %s, Dir() = %s; want them in %s", c.Kubeconfig(), c.Dir(), dir)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != c.APIServerURL() || !strings.HasPrefix(cfg.Host, "https://127.0.0.1:") {
			t.Errorf("kubeconfig server %s, APIServerURL %s: want the same https://127.0.0.1 address", cfg.Host, c.APIServerURL())
		}
		readyz(t, kubernetes.NewForConfigOrDie(cfg))
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if v.GitVersion != "v1.36.3" {
			t.Errorf("server version %s, want v1.36.3", v.GitVersion)
		}
		pids := c.PIDs()
		for _, name := range Components() {
			if pids[name] <= 0 {
				t.Errorf("no PID for %s: %v", name, pids)
			}
			if fi, err := os.Stat(c.LogPath(name)); err != nil || fi.Size() == 0 {
				t.Errorf("log of %s missing or empty: %v", name, err)
			}
		}
	})

	t.Run("serving certificate carries the extra IP", func(t *testing.T) {
		conn, err := tls.Dial("tcp", strings.TrimPrefix(c.APIServerURL(), "https://"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		leaf := conn.ConnectionState().PeerCertificates[0]
		if err := leaf.VerifyHostname(vmIP.String()); err != nil {
			t.Errorf("serving certificate (IPs %v): %v", leaf.IPAddresses, err)
		}
	})

	t.Run("the API server listens on every address", func(t *testing.T) {
		// A socket bound to 127.0.0.1 refuses connections to 127.0.0.2;
		// one bound to 0.0.0.0 accepts them.
		_, port, _ := strings.Cut(strings.TrimPrefix(c.APIServerURL(), "https://"), ":")
		conn, err := tls.Dial("tcp", "127.0.0.2:"+port, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatalf("APIServerBindAddress 0.0.0.0: %v", err)
		}
		_ = conn.Close()
	})

	// The TLS bootstrap itself (a token's CSR approved and signed) is
	// tested with a real joining node in internal/nodeagent.
	t.Run("node bootstrap RBAC", func(t *testing.T) {
		for _, want := range nodeBootstrapRBAC {
			got, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.RoleRef != want.RoleRef || len(got.Subjects) != 1 || got.Subjects[0] != want.Subjects[0] {
				t.Errorf("ClusterRoleBinding %s: roleRef %v subjects %v, want %v %v", want.Name, got.RoleRef, got.Subjects, want.RoleRef, want.Subjects)
			}
		}
	})

	if !t.Run("kwok makes an annotated Node Ready and renews its Lease", func(t *testing.T) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name:        nodeName,
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
			Labels:      map[string]string{"type": "kwok"},
		}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Ready, and schedulable: kube-controller-manager's node
		// lifecycle controller removes the not-ready taint the API server
		// added at creation once it sees the Node Ready.
		poll(t, 30*time.Second, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return readyStatus(n) == corev1.ConditionTrue && len(n.Spec.Taints) == 0, nil
		})
		poll(t, 30*time.Second, func(ctx context.Context) (bool, error) {
			lease, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, nodeName, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && lease.Spec.RenewTime != nil, err
		})
	}) {
		t.FailNow() // everything below needs the Node
	}

	t.Run("a Deployment is scheduled onto the kwok Node and becomes available", func(t *testing.T) {
		labels := map[string]string{"app": "web"}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}},
				},
			},
		}
		if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deploymentAvailable(t, cs, "web", 2)
		rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rss.Items) != 1 || len(rss.Items[0].OwnerReferences) != 1 || rss.Items[0].OwnerReferences[0].Name != "web" {
			t.Fatalf("want one ReplicaSet owned by the Deployment, got %+v", rss.Items)
		}
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != nodeName || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				t.Errorf("pod %s: node %q phase %s IP %q; want Running with an IP on %s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, nodeName)
			}
		}
	})

	t.Run("the chaos label turns the Node NotReady until removed", func(t *testing.T) {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"},"annotations":{%q:"SimKilled",%q:"killed by the test"}}}`,
			KwokNotReadyLabel, KwokNotReadyReasonAnnotation, KwokNotReadyMessageAnnotation)
		patchNode(t, cs, nodeName, patch)
		poll(t, 30*time.Second, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					return cond.Status == corev1.ConditionFalse && cond.Reason == "SimKilled" && cond.Message == "killed by the test", nil
				}
			}
			return false, nil
		})
		patchNode(t, cs, nodeName, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, KwokNotReadyLabel))
		poll(t, 30*time.Second, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return readyStatus(n) == corev1.ConditionTrue, nil
		})
	})

	t.Run("kube-apiserver stops and restarts with its ports, certificates and data", func(t *testing.T) {
		old := c.PIDs()[APIServer]
		if err := c.StopComponent(APIServer); err != nil {
			t.Fatal(err)
		}
		if processAlive(old) {
			t.Errorf("kube-apiserver (pid %d) still running after StopComponent", old)
		}
		if _, ok := c.PIDs()[APIServer]; ok {
			t.Errorf("PIDs still lists kube-apiserver: %v", c.PIDs())
		}
		if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil {
			t.Error("/readyz answered with kube-apiserver stopped")
		}
		if err := c.StartComponent(ctx, APIServer); err != nil {
			t.Fatal(err)
		}
		if pid := c.PIDs()[APIServer]; pid == old || pid <= 0 {
			t.Errorf("kube-apiserver pid after restart = %d (before: %d)", pid, old)
		}
		if err := c.StartComponent(ctx, APIServer); err == nil {
			t.Error("StartComponent of a running component succeeded")
		}
		// The same client (port, CA, client certificate) works, the data
		// is there, and the rest of the control plane carries on.
		readyz(t, cs)
		deploymentAvailable(t, cs, "web", 2)
		poll(t, 30*time.Second, func(ctx context.Context) (bool, error) {
			n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, nil // the client may still be reconnecting
			}
			return readyStatus(n) == corev1.ConditionTrue, nil
		})
	})

	t.Run("extra processes run under the cluster's care", func(t *testing.T) {
		if err := c.StartProcess(ctx, "sleeper", "/bin/sleep", "300"); err != nil {
			t.Fatal(err)
		}
		if err := c.StartProcess(ctx, "sleeper", "/bin/sleep", "300"); err == nil {
			t.Error("a second process with the same name was started")
		}
		if exited, err := c.ProcessExited("sleeper"); exited {
			t.Fatalf("sleeper exited at once: %v", err)
		}
		if err := c.StartProcess(ctx, "napper", "/bin/sleep", "300"); err != nil {
			t.Fatal(err)
		}
		napper := c.PIDs()["napper"]
		if err := c.StopProcess("napper"); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(napper, 0); err != syscall.ESRCH {
			t.Errorf("StopProcess left pid %d running (%v)", napper, err)
		}
		if _, ok := c.PIDs()["sleeper"]; !ok {
			t.Error("PIDs does not list the extra process; Stop's check below would miss it")
		}
	})

	t.Run("Stop leaves no process behind", func(t *testing.T) {
		pids := c.PIDs()
		if len(pids) != len(Components())+1 {
			t.Fatalf("PIDs() = %v, want one per component and the extra sleeper", pids)
		}
		// The scan below must see the running control plane, or its
		// finding nothing after Stop would prove nothing.
		if running := processesUsing(t, dir); len(running) < len(Components()) {
			t.Fatalf("found %d processes using %s, want at least %d: %v", len(running), dir, len(Components()), running)
		}
		if err := c.Stop(); err != nil {
			t.Fatal(err)
		}
		for name, pid := range pids {
			if processAlive(pid) {
				t.Errorf("%s (pid %d) still exists after Stop", name, pid)
			}
		}
		if left := processesUsing(t, dir); len(left) > 0 {
			t.Errorf("processes left after Stop: %v", left)
		}
		if len(c.PIDs()) != 0 {
			t.Errorf("PIDs() after Stop = %v", c.PIDs())
		}
		if err := c.Stop(); err != nil {
			t.Errorf("second Stop: %v", err)
		}
	})
}

// TestStartFailureStopsWhatStarted: a scheduler that dies at start fails
// Start with its name and log, after etcd, kube-apiserver and
// kube-controller-manager have been started, and those are stopped.
func TestStartFailureStopsWhatStarted(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(t.TempDir(), "kube-scheduler")
	script := "#!/bin/sh\necho 'bogus kube-scheduler: refusing to start' >&2\nexit 3\n"
	if err := os.WriteFile(bogus, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := Start(t.Context(), Options{Dir: dir, Binaries: map[string]string{Scheduler: bogus}, Logf: t.Logf})
	if err == nil {
		t.Cleanup(func() { _ = c.Stop() })
		t.Fatal("Start succeeded with a bogus kube-scheduler")
	}
	t.Logf("Start failed as it should:\n%v", err)
	for _, want := range []string{"kube-scheduler exited", "exit status 3", "bogus kube-scheduler: refusing to start"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q", want)
		}
	}
	for _, name := range []string{Etcd, APIServer, ControllerManager} {
		if !logSays(t, filepath.Join(dir, "logs", name+".log"), "localcluster: starting "+name) {
			t.Errorf("%s was never started: the failure came too early to test the clean-up", name)
		}
	}
	if left := processesUsing(t, dir); len(left) > 0 {
		t.Errorf("processes left after a failed Start: %v", left)
	}
}

// TestStartInterrupted: cancelling Start's context (Ctrl-C) while
// kube-apiserver starts stops etcd too and removes the temporary Dir.
func TestStartInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var dir string
	_, err := Start(ctx, Options{Logf: func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		t.Log(msg)
		if strings.HasPrefix(msg, "localcluster: etcd healthy") {
			cancel()
		}
	}, StopGracePeriod: 5 * time.Second})
	if err == nil {
		t.Fatal("Start succeeded after its context was cancelled")
	}
	if !strings.Contains(err.Error(), "kube-apiserver start-up interrupted") {
		t.Errorf("error = %v, want kube-apiserver interrupted", err)
	}
	// The temporary Dir is named in the error's log path.
	if _, after, ok := strings.Cut(err.Error(), "--- last lines of "); ok {
		dir = filepath.Dir(filepath.Dir(strings.Fields(after)[0]))
	}
	if !strings.Contains(dir, "millwright-localcluster-") {
		t.Fatalf("no temporary Dir in the error: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary Dir %s not removed: %v", dir, err)
	}
	if left := processesUsing(t, dir); len(left) > 0 {
		t.Errorf("processes left after an interrupted Start: %v", left)
	}
}

func TestMissingBinaries(t *testing.T) {
	dir := t.TempDir()
	_, err := Start(t.Context(), Options{BinDir: filepath.Join(dir, "bin"), Dir: filepath.Join(dir, "cluster")})
	if err == nil || !strings.Contains(err.Error(), "make tools") || !strings.Contains(err.Error(), "kube-apiserver") {
		t.Fatalf("error = %v, want the missing binaries and `make tools`", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cluster")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start created its Dir before finding the binaries missing: %v", err)
	}
}

func TestBadBindAddress(t *testing.T) {
	o := Options{BinDir: t.TempDir(), APIServerBindAddress: "10.0.0.1"}
	if err := o.setDefaults(); err == nil || !strings.Contains(err.Error(), "APIServerBindAddress") {
		t.Errorf("setDefaults with bind address 10.0.0.1: %v, want it refused", err)
	}
}

func readyz(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	var body []byte
	poll(t, 30*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		body, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, nil
	})
	if string(body) != "ok" {
		t.Errorf("/readyz = %q", body)
	}
}

func deploymentAvailable(t *testing.T, cs kubernetes.Interface, name string, replicas int32) {
	t.Helper()
	poll(t, 60*time.Second, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil // also polled across an API server restart
		}
		for _, cond := range d.Status.Conditions {
			if cond.Type == appsv1.DeploymentAvailable && cond.Status == corev1.ConditionTrue {
				return d.Status.AvailableReplicas == replicas && d.Status.ReadyReplicas == replicas, nil
			}
		}
		return false, nil
	})
}

func patchNode(t *testing.T, cs kubernetes.Interface, name, patch string) {
	t.Helper()
	if _, err := cs.CoreV1().Nodes().Patch(t.Context(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status
		}
	}
	return corev1.ConditionUnknown
}

// poll fails the test unless done returns true within timeout.
func poll(t *testing.T, timeout time.Duration, done func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := done(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("condition not met within %s: %v (last error: %v)", timeout, err, last)
	}
}

// processAlive reports whether pid exists: kill(pid, 0) fails with ESRCH
// once it has exited and been reaped.
func processAlive(pid int) bool {
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func logSays(t *testing.T, path, want string) bool {
	t.Helper()
	data, err := os.ReadFile(path)
	return err == nil && bytes.Contains(data, []byte(want))
}

// processesUsing is ProcessesUsing, failing the test if /proc cannot be
// read.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	found, err := ProcessesUsing(dir)
	if err != nil {
		t.Fatal(err)
	}
	return found
}
