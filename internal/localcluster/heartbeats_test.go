package localcluster

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/kwok"
)

func TestHeartbeatsForKeepsDefaultsUpTo1000(t *testing.T) {
	for _, n := range []int{0, 1, 1000} {
		if h := HeartbeatsFor(n); h != (NodeHeartbeats{}) {
			t.Errorf("HeartbeatsFor(%d) = %+v, want the defaults (zero value)", n, h)
		}
	}
	if got := (NodeHeartbeats{}).LeasePUTsPerSecond(1000); got != 100 {
		t.Errorf("defaults at 1000 Nodes: %g Lease PUTs/s, want 100", got)
	}
	if (NodeHeartbeats{}).controllerManagerArgs() != nil {
		t.Error("the defaults must leave kube-controller-manager's flags alone")
	}
	if got := (NodeHeartbeats{}).kwokNodes(); got != (kwok.Nodes{}) {
		t.Errorf("the defaults give kwok %+v, want its defaults", got)
	}
}

func TestHeartbeatsFor5000(t *testing.T) {
	h := HeartbeatsFor(5000)
	want := NodeHeartbeats{LeaseDuration: 400 * time.Second, LeaseParallelism: 40, StageParallelism: 40, MonitorGracePeriod: 410 * time.Second}
	if h != want {
		t.Fatalf("HeartbeatsFor(5000) = %+v, want %+v", h, want)
	}
	if got := h.LeasePUTsPerSecond(5000); got != 50 {
		t.Errorf("%g Lease PUTs/s at 5000 Nodes, want 50", got)
	}
	if err := h.check(); err != nil {
		t.Error(err)
	}
	if got := h.kwokNodes(); got != (kwok.Nodes{LeaseDurationSeconds: 400, LeaseParallelism: 40, StageParallelism: 40}) {
		t.Errorf("kwok gets %+v", got)
	}
	if args := h.controllerManagerArgs(); !slices.Equal(args, []string{"--node-monitor-grace-period=6m50s"}) {
		t.Errorf("kube-controller-manager gets %v", args)
	}
	// Every size above 1000 keeps the rate at or under the target and the
	// grace period above four renewal intervals.
	for n := 1001; n <= 20000; n += 997 {
		h := HeartbeatsFor(n)
		if r := h.LeasePUTsPerSecond(n); r > leasePUTsPerSecond {
			t.Errorf("HeartbeatsFor(%d): %g Lease PUTs/s", n, r)
		}
		if h.MonitorGracePeriod <= h.LeaseDuration {
			t.Errorf("HeartbeatsFor(%d): grace %s within the Lease %s", n, h.MonitorGracePeriod, h.LeaseDuration)
		}
	}
}

func TestHeartbeatsCheckRefusesFlapping(t *testing.T) {
	for _, h := range []NodeHeartbeats{
		{MonitorGracePeriod: 10 * time.Second},                                    // the default 40 s Lease renews every 10 s
		{LeaseDuration: 400 * time.Second, MonitorGracePeriod: 100 * time.Second}, // renewed every 100 s
		{LeaseDuration: 2 * time.Second},                                          // under kwok's granularity
		{LeaseParallelism: -1},
		{StageParallelism: -1},
	} {
		if err := h.check(); err == nil {
			t.Errorf("%+v accepted", h)
		}
	}
	ok := NodeHeartbeats{LeaseDuration: 400 * time.Second, MonitorGracePeriod: 101 * time.Second}
	if err := ok.check(); err != nil {
		t.Errorf("%+v refused: %v", ok, err)
	}
	o := Options{BinDir: "/nonexistent", NodeHeartbeats: NodeHeartbeats{MonitorGracePeriod: time.Second}}
	if err := o.setDefaults(); err == nil || !strings.Contains(err.Error(), "MonitorGracePeriod") {
		t.Errorf("setDefaults with a 1s grace period: %v, want a refusal", err)
	}
}

// The settings reach the components: kwok's configuration file and
// kube-controller-manager's command line.
func TestHeartbeatsReachTheComponents(t *testing.T) {
	opts := Options{BinDir: t.TempDir(), Dir: t.TempDir(), NodeHeartbeats: HeartbeatsFor(5000)}
	if err := opts.setDefaults(); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{opts: opts, procs: map[string]*process{}}
	if err := c.prepare(); err != nil {
		t.Fatal(err)
	}
	if args := c.components[ControllerManager].args; !slices.Contains(args, "--node-monitor-grace-period=6m50s") {
		t.Errorf("kube-controller-manager args %v lack the grace period", args)
	}
	cfg, err := os.ReadFile(filepath.Join(c.dir, Kwok, "kwok.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nodeLeaseDurationSeconds: 400\n", "nodeLeaseParallelism: 40\n"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("kwok.yaml lacks %q", want)
		}
	}
}
