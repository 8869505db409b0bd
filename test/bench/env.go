package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/localcluster"
)

// Names the benchmark's processes and namespaces go by.
const (
	managerName    = "millwright-manager"
	simName        = "millwright-sim"
	benchNamespace = "millwright-bench"
	// floorNamespace is outside the manager's --namespace, so the floor's
	// Machines cost the manager nothing.
	floorNamespace = "millwright-bench-floor"
)

// env is a running local cluster with the sim and the manager.
type env struct {
	root, bin  string
	cluster    *localcluster.Cluster
	scheme     *runtime.Scheme
	admin      client.Client // the benchmark's own reads and setup writes
	clientset  kubernetes.Interface
	metricsURL string
	pprofURL   string // the manager's /debug/pprof
	qps        float32
	burst      int
	// managerArgs are extra manager flags (-manager-args).
	managerArgs []string
	// guards: the fleet has a health check and a disruption budget (-guards).
	guards bool
	// simAdmin is the sim's admin API address (the spread scenario
	// makes a zone run out of capacity there).
	simAdmin string
}

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// startCluster starts the control plane, with kwok's Leases and
// kube-controller-manager's grace period as hb says and, with auditReads,
// an audit log of every read request, and installs the CRDs.
// Every binary it starts, then and later, is in bin.
func startCluster(ctx context.Context, root, bin, dir string, hb localcluster.NodeHeartbeats, auditReads bool, qps float32, burst int) (*env, error) {
	e := &env{root: root, bin: bin, scheme: newScheme(), qps: qps, burst: burst}
	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: e.bin, Dir: dir, Logf: logf, NodeHeartbeats: hb, AuditReads: auditReads})
	if err != nil {
		return nil, err
	}
	e.cluster = c
	// The benchmark's own client must not be the bottleneck of what it observes.
	e.admin, err = e.client(1000, 2000)
	if err != nil {
		return e, err
	}
	if e.clientset, err = kubernetes.NewForConfig(e.cluster.RESTConfig()); err != nil {
		return e, err
	}
	if err := e.installCRDs(ctx); err != nil {
		return e, err
	}
	for _, ns := range []string{benchNamespace, floorNamespace} {
		if err := e.ensureNamespace(ctx, ns); err != nil {
			return e, err
		}
	}
	return e, nil
}

func describeHeartbeats(h localcluster.NodeHeartbeats) string {
	if h == (localcluster.NodeHeartbeats{}) {
		return "defaults (kwok 40s Leases, 4 workers, 4 Node Stage workers; node-monitor-grace-period 50s)"
	}
	return fmt.Sprintf("kwok %s Leases, %d workers, %d Node Stage workers; node-monitor-grace-period %s", h.LeaseDuration, h.LeaseParallelism, h.StageParallelism, h.MonitorGracePeriod)
}

// client returns a client limited to qps and burst.
func (e *env) client(qps float32, burst int) (client.Client, error) {
	cfg := e.cluster.RESTConfig()
	cfg.QPS, cfg.Burst = qps, burst
	return client.New(cfg, client.Options{Scheme: e.scheme})
}

func (e *env) installCRDs(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(e.root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs under config/crd/bases (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(data, &u.Object); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := e.admin.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	// Served once a list of each kind succeeds.
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, l := range []client.ObjectList{&v1alpha1.MachineList{}, &v1alpha1.MachineSetList{}, &v1alpha1.MachineDeploymentList{}, &v1alpha1.MachineClassList{}} {
			if err := e.admin.List(ctx, l, client.Limit(1)); err != nil {
				if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
					return false, nil
				}
				return false, err
			}
		}
		return true, nil
	})
}

func (e *env) ensureNamespace(ctx context.Context, name string) error {
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(name)
	if err := e.admin.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// startMillwright starts the sim (kwok node mode) and the manager, both
// with the benchmark's QPS, and waits for the manager's /readyz.
func (e *env) startMillwright(ctx context.Context) error {
	socket := "unix://" + filepath.Join(e.cluster.Dir(), "sim.sock")
	simAdmin, err := freeAddr()
	if err != nil {
		return err
	}
	e.simAdmin = simAdmin
	qps, burst := strconv.FormatFloat(float64(e.qps), 'f', -1, 32), strconv.Itoa(e.burst)
	if err := e.cluster.StartProcess(ctx, simName, filepath.Join(e.bin, simName),
		"--endpoint", socket, "--admin-address", simAdmin, "--kubeconfig", e.cluster.Kubeconfig(),
		"--node-mode", "kwok", "--kube-api-qps", qps, "--kube-api-burst", burst); err != nil {
		return err
	}
	health, err := freeAddr()
	if err != nil {
		return err
	}
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	pprof, err := freeAddr()
	if err != nil {
		return err
	}
	e.metricsURL = "http://" + metrics + "/metrics"
	e.pprofURL = "http://" + pprof + "/debug/pprof"
	args := append([]string{
		"--kubeconfig", e.cluster.Kubeconfig(), "--driver", "sim=" + socket, "--namespace", benchNamespace,
		"--health-probe-bind-address", health, "--metrics-bind-address", metrics,
		"--pprof-bind-address", pprof,
		"--kube-api-qps", qps, "--kube-api-burst", burst}, e.managerArgs...)
	if err := e.cluster.StartProcess(ctx, managerName, filepath.Join(e.bin, managerName), args...); err != nil {
		return err
	}
	logf("manager: metrics %s, pprof %s, log %s", e.metricsURL, e.pprofURL, e.cluster.LogPath(managerName))
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := e.cluster.ProcessExited(managerName); exited {
			return false, fmt.Errorf("the manager exited (%v); log %s", err, e.cluster.LogPath(managerName))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+health+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// managerPID is the manager's process id, for /proc.
func (e *env) managerPID() int { return e.cluster.PIDs()[managerName] }

func (e *env) stop(keep bool) {
	if e == nil || e.cluster == nil {
		return
	}
	if keep {
		logf("keeping %s (-keep); its processes are stopped", e.cluster.Dir())
	}
	if err := e.cluster.Stop(); err != nil {
		logf("stopping the cluster: %v", err)
	}
}

// freeAddr returns a loopback address whose port is free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", errors.New("no free loopback port: " + err.Error())
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// auditLength is the audit log's length now (-audit-reads; 0 without it).
func (e *env) auditLength() (int64, error) {
	path := e.cluster.AuditLogPath()
	if path == "" {
		return 0, nil
	}
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("the audit log: %w", err)
	}
	return fi.Size(), nil
}
