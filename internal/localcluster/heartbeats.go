package localcluster

import (
	"fmt"
	"time"

	"github.com/millwright-dev/millwright/internal/kwok"
)

// NodeHeartbeats is how kwok keeps its Nodes alive and their status
// written, and how long kube-controller-manager waits before it calls one
// Unknown. The zero value is kwok's, a kubelet's and
// kube-controller-manager's defaults: 40 s Leases renewed every 10 s by 4
// kwok workers, 4 workers for the Node Stages, a 50 s grace period. That
// is about 100 Lease PUTs a second per 1000 Nodes; at 5000 Nodes on two
// shared cores the API server cannot take 500 a second, the renewals fall
// behind and Nodes go Unknown. HeartbeatsFor scales them with the fleet.
type NodeHeartbeats struct {
	// LeaseDuration is kwok's nodeLeaseDurationSeconds (whole seconds);
	// kwok renews each Lease every quarter of it, as a kubelet does.
	// Default 40 s.
	LeaseDuration time.Duration
	// LeaseParallelism is kwok's nodeLeaseParallelism: Lease writes in
	// flight at once. Default 4.
	LeaseParallelism int
	// StageParallelism is kwok's nodePlayStageParallelism: Node status
	// writes in flight at once (a new Node made Ready, the status refresh
	// every 10-20 minutes, the not-ready Stage). Default 4.
	StageParallelism int
	// MonitorGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period: how long a Node's Lease may go
	// unrenewed before its Ready condition becomes Unknown. It must exceed
	// the renewal interval (LeaseDuration/4). Default: the controller
	// manager's own (50 s).
	MonitorGracePeriod time.Duration
}

// defaultLeaseDuration is kwok's (and a kubelet's) usual Lease duration.
const defaultLeaseDuration = 40 * time.Second

// Node counts up to which HeartbeatsFor keeps the defaults, and the Lease
// write rate it holds above it.
const (
	heartbeatsDefaultUpTo = 1000
	// leasePUTsPerSecond above heartbeatsDefaultUpTo: half of what 1000
	// Nodes cost at the defaults, which the API server takes on two shared
	// cores beside a 1000-machine benchmark.
	leasePUTsPerSecond = 50
)

// HeartbeatsFor returns the settings for a cluster of n kwok Nodes. Up to
// 1000 Nodes they are the defaults (the zero value), so small clusters
// behave as real ones. Above, the Lease duration grows with n so that
// renewals cost leasePUTsPerSecond in all (n Leases every duration/4), the
// renewal workers and the Node Stages' workers grow with n (8 per 1000
// Nodes each) so that a write slowed to hundreds of milliseconds on a
// loaded API server still leaves them ahead, and the grace period is the
// Lease duration plus 10 s, as the defaults' 50 s is 40 s plus 10 s: four
// renewal intervals may be missed before a Node is called Unknown. With 4
// Stage workers at 5000 Nodes, new Nodes waited minutes for Ready
// (docs/benchmarks.md, "kwok's Node Stage workers").
func HeartbeatsFor(n int) NodeHeartbeats {
	if n <= heartbeatsDefaultUpTo {
		return NodeHeartbeats{}
	}
	seconds := (4*n + leasePUTsPerSecond - 1) / leasePUTsPerSecond // 4n/duration = leasePUTsPerSecond
	lease := time.Duration(seconds) * time.Second
	workers := 8 * ((n + 999) / 1000)
	return NodeHeartbeats{
		LeaseDuration:      lease,
		LeaseParallelism:   workers,
		StageParallelism:   workers,
		MonitorGracePeriod: lease + 10*time.Second,
	}
}

// LeasePUTsPerSecond is the Lease renewal rate n kwok Nodes cause with
// these settings: each Lease renewed every LeaseDuration/4.
func (h NodeHeartbeats) LeasePUTsPerSecond(n int) float64 {
	d := h.LeaseDuration
	if d <= 0 {
		d = defaultLeaseDuration
	}
	return float64(n) / (d.Seconds() / 4)
}

// check refuses settings under which every Node would flap: a grace
// period no longer than the renewal interval, or a Lease shorter than
// kwok's one-second granularity.
func (h NodeHeartbeats) check() error {
	if h.LeaseDuration < 0 || h.LeaseParallelism < 0 || h.StageParallelism < 0 || h.MonitorGracePeriod < 0 {
		return fmt.Errorf("localcluster: NodeHeartbeats %+v: negative setting", h)
	}
	if h.LeaseDuration > 0 && h.LeaseDuration < 4*time.Second {
		return fmt.Errorf("localcluster: NodeHeartbeats.LeaseDuration %s: kwok counts whole seconds and renews every quarter; use at least 4s", h.LeaseDuration)
	}
	lease := h.LeaseDuration
	if lease == 0 {
		lease = defaultLeaseDuration
	}
	if h.MonitorGracePeriod > 0 && h.MonitorGracePeriod <= lease/4 {
		return fmt.Errorf("localcluster: NodeHeartbeats.MonitorGracePeriod %s is not longer than the Lease renewal interval %s: every Node would go Unknown between renewals", h.MonitorGracePeriod, lease/4)
	}
	return nil
}

// kwokNodes is the kwok configuration of these settings.
func (h NodeHeartbeats) kwokNodes() kwok.Nodes {
	return kwok.Nodes{LeaseDurationSeconds: int(h.LeaseDuration / time.Second), LeaseParallelism: h.LeaseParallelism, StageParallelism: h.StageParallelism}
}

// controllerManagerArgs are kube-controller-manager's flags for these
// settings: none at the defaults.
func (h NodeHeartbeats) controllerManagerArgs() []string {
	if h.MonitorGracePeriod <= 0 {
		return nil
	}
	return []string{"--node-monitor-grace-period=" + h.MonitorGracePeriod.String()}
}
