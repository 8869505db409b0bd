package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Cluster is a running local control plane. Its methods are safe for
// concurrent use; each holds the cluster while it works, so a
// StartComponent waiting for health delays a concurrent PIDs.
type Cluster struct {
	opts       Options
	dir        string
	ownDir     bool // Start created dir, so Stop removes it
	kubeconfig string
	pki        *pki
	ports      ports
	apiURL     string
	config     *rest.Config
	client     kubernetes.Interface

	mu         sync.Mutex
	components map[string]*component
	procs      map[string]*process // running components and extra processes
	extras     []string            // names of the processes StartProcess started, in order
}

// component is how to run one component and tell it is healthy.
type component struct {
	name string
	args []string
	env  []string
	// probe returns nil once the component is healthy; otherwise why not.
	probe func(ctx context.Context) error
	// cleanup runs after the wait for health, whatever its outcome.
	cleanup func()
}

// ports are the loopback ports the components listen on, fixed for the
// life of the Cluster so a restarted component is found where it was.
type ports struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler int
}

// Start starts the control plane: each component in the order of
// Components, each waited for until healthy before the next. ctx bounds
// only the start (cancel it, e.g. on Ctrl-C, to abort); the cluster runs
// until Stop. When Start fails it has already stopped whatever it started.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	if err := opts.checkBinaries(); err != nil {
		return nil, err
	}
	c := &Cluster{opts: opts, procs: map[string]*process{}}
	if err := c.prepare(); err != nil {
		c.removeOwnDir()
		return nil, fmt.Errorf("localcluster: preparing %s: %w", c.dir, err)
	}
	begin := time.Now()
	for _, name := range Components() {
		err := c.startComponent(ctx, name)
		if err == nil && name == APIServer {
			err = c.applyNodeBootstrapRBAC(ctx)
		}
		if err != nil {
			if stopErr := c.Stop(); stopErr != nil {
				err = fmt.Errorf("%w; stopping the components already started: %v", err, stopErr)
			}
			return nil, err
		}
	}
	opts.Logf("localcluster: control plane up in %s (%s)", time.Since(begin).Round(100*time.Millisecond), c.dir)
	return c, nil
}

// prepare creates the working directory and everything the components read
// from it, and defines the components.
func (c *Cluster) prepare() error {
	dir := c.opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "millwright-localcluster-")
		if err != nil {
			return err
		}
		dir, c.ownDir = d, true
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	c.dir = dir
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err == nil {
		// Its members, certificates and ports would not match this run's.
		return fmt.Errorf("%s holds a previous cluster's data: remove it or choose another directory", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o700); err != nil {
		return err
	}
	c.kubeconfig = c.opts.KubeconfigPath
	if c.kubeconfig == "" {
		c.kubeconfig = filepath.Join(dir, "kubeconfig")
	}
	if c.kubeconfig, err = filepath.Abs(c.kubeconfig); err != nil {
		return err
	}
	if c.ports, err = freePorts(); err != nil {
		return err
	}
	if c.pki, err = generatePKI(filepath.Join(dir, "pki"), c.opts.APIServerExtraIPs); err != nil {
		return err
	}
	c.apiURL = "https://127.0.0.1:" + strconv.Itoa(c.ports.apiServer)
	if err := writeKubeconfig(c.kubeconfig, c.apiURL, c.pki, adminUser); err != nil {
		return err
	}
	c.config = restConfig(c.apiURL, c.pki, adminUser)
	if c.client, err = kubernetes.NewForConfig(c.config); err != nil {
		return err
	}
	c.components = map[string]*component{}
	for _, def := range []func() (*component, error){c.etcd, c.apiServer, c.controllerManager, c.scheduler, c.kwok} {
		comp, err := def()
		if err != nil {
			return err
		}
		c.components[comp.name] = comp
	}
	return nil
}

// freePorts reserves five distinct loopback ports. They are free when
// returned, not held: a process elsewhere could take one before the
// component binds it, which then fails Start with the component's log
// saying so.
func freePorts() (ports, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var got []int
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports{}, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		got = append(got, l.Addr().(*net.TCPAddr).Port)
	}
	return ports{etcdClient: got[0], etcdPeer: got[1], apiServer: got[2], controllerManager: got[3], scheduler: got[4]}, nil
}

// Stop stops every running component in the reverse of the start order
// (SIGTERM, then SIGKILL after Options.StopGracePeriod) and waits for each
// to exit. It removes Dir if Start created it. Calling it again does
// nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := c.stopExtrasLocked()
	for _, name := range slices.Backward(Components()) {
		if err := c.stopLocked(name); err != nil {
			errs = append(errs, err)
		}
	}
	c.removeOwnDir()
	return errors.Join(errs...)
}

func (c *Cluster) removeOwnDir() {
	if c.ownDir && c.dir != "" {
		_ = os.RemoveAll(c.dir)
		c.ownDir = false
	}
}

// StopComponent stops one component, as Stop does. Stopping a component
// that is not running does nothing.
func (c *Cluster) StopComponent(name string) error {
	if _, ok := c.components[name]; !ok {
		return fmt.Errorf("localcluster: unknown component %q (components: %v)", name, Components())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopLocked(name)
}

func (c *Cluster) stopLocked(name string) error {
	p := c.procs[name]
	if p == nil {
		return nil
	}
	delete(c.procs, name)
	if exited, err := p.exited(); exited {
		// Nothing else reports a component that died while the cluster
		// ran; its log says why.
		c.opts.Logf("localcluster: %s had already exited (%v); see %s", name, err, p.log)
		return nil
	}
	begin := time.Now()
	err := p.stop(c.opts.StopGracePeriod)
	c.opts.Logf("localcluster: %s stopped in %s", name, time.Since(begin).Round(10*time.Millisecond))
	return err
}

// StartComponent starts a component stopped by StopComponent again, with
// the same ports, certificates, flags and data, and waits until it is
// healthy (bounded by Options.StartTimeout and ctx). On failure the
// component is left stopped.
func (c *Cluster) StartComponent(ctx context.Context, name string) error {
	if _, ok := c.components[name]; !ok {
		return fmt.Errorf("localcluster: unknown component %q (components: %v)", name, Components())
	}
	return c.startComponent(ctx, name)
}

func (c *Cluster) startComponent(ctx context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.procs[name] != nil {
		return fmt.Errorf("localcluster: %s is already running", name)
	}
	comp := c.components[name]
	begin := time.Now()
	p, err := startProcess(name, c.opts.binary(name), comp.args, comp.env, c.LogPath(name))
	if err != nil {
		return fmt.Errorf("localcluster: %w", err)
	}
	c.procs[name] = p
	if err := waitHealthy(ctx, comp, p, c.opts.StartTimeout, c.LogPath(name)); err != nil {
		_ = c.stopLocked(name)
		return err
	}
	c.opts.Logf("localcluster: %s healthy after %s (pid %d)", name, time.Since(begin).Round(100*time.Millisecond), p.pid())
	return nil
}

// waitHealthy polls comp's probe until it passes, the process exits, ctx
// ends or timeout passes. Its error names the component and quotes the end
// of its log, which is where the reason usually is.
func waitHealthy(ctx context.Context, comp *component, p *process, timeout time.Duration, log string) error {
	if comp.cleanup != nil {
		defer comp.cleanup()
	}
	var last error
	var exitErr error
	exited := false
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if exited, exitErr = p.exited(); exited {
			return false, errExited
		}
		probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		last = comp.probe(probeCtx)
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	var why string
	switch {
	case exited:
		why = fmt.Sprintf("exited during start-up (%v)", exitErr)
	case ctx.Err() != nil:
		why = fmt.Sprintf("start-up interrupted (%v)", ctx.Err())
	default:
		why = fmt.Sprintf("not healthy within %s", timeout)
	}
	if last != nil && !exited {
		why += fmt.Sprintf("; last check: %v", last)
	}
	return fmt.Errorf("localcluster: %s %s\n--- last lines of %s ---\n%s", comp.name, why, log, logTail(log, 30))
}

var errExited = errors.New("process exited")

// Kubeconfig is the path of the administrator's kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns a new client configuration reaching the API server as
// the administrator (group system:masters).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// APIServerURL is the API server's address, https://127.0.0.1:<port>.
func (c *Cluster) APIServerURL() string { return c.apiURL }

// EtcdURL is etcd's client address, http://127.0.0.1:<port>: a test may
// read the history the API server stored there.
func (c *Cluster) EtcdURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient) }

// Dir is the cluster's working directory.
func (c *Cluster) Dir() string { return c.dir }

// LogPath is the file receiving a component's stdout and stderr.
func (c *Cluster) LogPath(component string) string {
	return filepath.Join(c.dir, "logs", component+".log")
}

// PIDs returns the process id of each running component, by name.
func (c *Cluster) PIDs() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make(map[string]int, len(c.procs))
	for name, p := range c.procs {
		pids[name] = p.pid()
	}
	return pids
}
