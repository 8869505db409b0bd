package machine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// tokenWatch is the holding driver noting, when a create is made, when
// the Machine's bootstrap token expires.
type tokenWatch struct {
	holdingDriver
	mu      sync.Mutex
	expires map[string]time.Time
}

func (d *tokenWatch) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	token := &corev1.Secret{}
	if err := controllertest.Env.Client.Get(ctx, bootstraptoken.Key(bootstraptoken.ID(req.Machine.UID)), token); err != nil {
		return nil, driver.Errorf(driver.Internal, "reading the bootstrap token: %v", err)
	}
	expires, _ := bootstraptoken.Expiration(token)
	d.mu.Lock()
	d.expires[req.Machine.Name] = expires
	d.mu.Unlock()
	return d.holdingDriver.CreateMachine(ctx, req)
}

func (d *tokenWatch) expiration(name string) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.expires[name]
}

// A Machine that waited in its class's create queue boots with a
// bootstrap token that lives as long as its creation timeout from the
// start of its create, not from its creation: the queue may be longer than
// the timeout. The controller's clock jumps two hours while it waits.
func TestQueuedMachineBootsWithALiveToken(t *testing.T) {
	d := &tokenWatch{holdingDriver: holdingDriver{creates: newHeldCalls(), deletes: newHeldCalls()}, expires: map[string]time.Time{}}
	var ahead atomic.Int64
	h := controllertest.New(t, controllertest.Options{
		Config: func(c *machine.Config) { c.DriverCallTimeout = 2 * time.Hour },
		Machine: func(r *machine.Reconciler) {
			d.Driver = r.Drivers["sim"]
			r.Drivers["sim"] = d
			r.Limits = classlimit.New()
			r.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		},
	})
	c := h.Class("limited", simSpec)
	patch := client.MergeFrom(c.DeepCopy())
	one := int32(1)
	c.Spec.MaxConcurrentCreates = &one
	if err := controllertest.Env.Client.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	const timeout = time.Hour
	long := func(m *v1alpha1.Machine) { m.Spec.Lifecycle.CreationTimeout = &metav1.Duration{Duration: timeout} }
	h.Machine("first", "limited", long)
	h.Eventually(30*time.Second, "the first Machine's create in flight", func() (bool, error) {
		inFlight, _ := d.creates.counts()
		return inFlight == 1, nil
	})
	h.Machine("waiting", "limited", long)
	h.Eventually(30*time.Second, "the second Machine to say it is queued", func() (bool, error) {
		return meta.IsStatusConditionTrue(h.Get("waiting").Status.Conditions, v1alpha1.CreateQueuedCondition), nil
	})
	ahead.Store(int64(2 * time.Hour))
	close(d.creates.released)
	m := h.WaitPhase("waiting", v1alpha1.PhaseRunning, 30*time.Second)
	started := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.CreateQueuedCondition)
	if started == nil || started.Status != metav1.ConditionFalse {
		t.Fatalf("CreateQueued %+v once the create started, want False", started)
	}
	// The token is deleted once the Node joined: its expiration was noted
	// when the create was made.
	want := started.LastTransitionTime.Add(timeout)
	if got := d.expiration(h.Prefix + "waiting"); got.Before(want) {
		t.Fatalf("the queued Machine's VM was made with a bootstrap token expiring at %s, before its creation deadline %s (its create started at %s)",
			got.Format(time.RFC3339), want.Format(time.RFC3339), started.LastTransitionTime.Format(time.RFC3339))
	}
}
