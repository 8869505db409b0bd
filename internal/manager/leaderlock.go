package manager

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	crleaderelection "sigs.k8s.io/controller-runtime/pkg/leaderelection"

	"github.com/millwright-dev/millwright/internal/leaderfence"
)

// leaderLock builds the Lease lock controller-runtime would build for
// itself, wrapped in the fence the controllers consult before each VM
// create or delete (docs/reliability.md, "The leader fence"). Nil without
// leader election. The fence's window is the renew deadline: a leader
// that has not renewed within it stops leading anyway.
func (o *Options) leaderLock(ctx context.Context, cfg *rest.Config) (*leaderfence.Lock, error) {
	le := o.LeaderElection
	if !le.Enabled {
		return nil, nil
	}
	// NewResourceLock sets a user agent and a timeout on the config it is
	// given: the lock's own copy, not the manager's.
	cfg = rest.CopyConfig(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	// The Lease's own Events ("became leader"), as controller-runtime
	// records them.
	broadcaster := events.NewEventBroadcasterAdapter(cs)
	broadcaster.StartRecordingToSink(ctx.Done())
	inner, err := crleaderelection.NewResourceLock(cfg, leaseEvents{broadcaster}, crleaderelection.Options{
		LeaderElection:             true,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaderElectionNamespace:    o.leaseNamespace(),
		LeaderElectionID:           le.ID,
		RenewDeadline:              le.RenewDeadline,
	})
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	return leaderfence.Wrap(inner, le.RenewDeadline), nil
}

// leaseNamespace is where the Lease lives: --leader-elect-namespace, else
// --namespace, else (empty) the pod's namespace, which controller-runtime
// reads.
func (o *Options) leaseNamespace() string {
	if o.LeaderElection.Namespace != "" {
		return o.LeaderElection.Namespace
	}
	return o.Namespace
}

// leaseEvents is the recorder.Provider controller-runtime's lock asks for.
type leaseEvents struct{ events.EventBroadcasterAdapter }

func (p leaseEvents) GetEventRecorderFor(name string) record.EventRecorder {
	return p.DeprecatedNewLegacyRecorder(name)
}

func (p leaseEvents) GetEventRecorder(name string) events.EventRecorder { return p.NewRecorder(name) }
