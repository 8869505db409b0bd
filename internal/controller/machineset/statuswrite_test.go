package machineset_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

// between is the set controller's client. Before each of its set status
// patches after the first that went through (the first after a start is
// locked on the version read: nothing is remembered yet), up to three,
// another writer annotates the set, as the deployment does between the
// reconcile's read and its write.
type between struct {
	client.Client
	wrote, injected, refused atomic.Int32
}

func (b *between) Status() client.SubResourceWriter { return &betweenStatus{b.Client.Status(), b} }

type betweenStatus struct {
	client.SubResourceWriter
	b *between
}

func (s *betweenStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	_, isSet := obj.(*v1alpha1.MachineSet)
	inject := isSet && s.b.wrote.Load() > 0 && s.b.injected.Load() < 3
	if inject {
		n := s.b.injected.Add(1)
		them := client.RawPatch("application/merge-patch+json",
			[]byte(`{"metadata":{"annotations":{"test/between":"`+strconv.Itoa(int(n))+`"}}}`))
		if err := controllertest.Env.Client.Patch(ctx, obj.DeepCopyObject().(client.Object), them); err != nil {
			return err
		}
	}
	err := s.SubResourceWriter.Patch(ctx, obj, p, opts...)
	if isSet && err == nil {
		s.b.wrote.Add(1)
	}
	if inject && apierrors.IsConflict(err) {
		s.b.refused.Add(1)
	}
	return err
}

// A write of another field of the set (an annotation) between a
// reconcile's read and its status write does not refuse the status write:
// only the set's controller writes its status, and the status was
// computed for the spec read (patch.OwnStatus; a spec change since still
// refuses it: internal/patch's tests).
func TestStatusWriteGoesThroughAnotherWriteSinceTheRead(t *testing.T) {
	c := &between{}
	h := controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			c.Client = mgr.GetClient()
			r := &machineset.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("machineset-controller")}
			return r.SetupWithManager(ctx, mgr, 2)
		},
	})
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 2, "small", nil)
	waitReady(h, "pool", 2, 60*time.Second)
	scaleTo(h, "pool", 4)
	waitReady(h, "pool", 4, 60*time.Second)
	if n := c.injected.Load(); n != 3 {
		t.Fatalf("%d writes between a read and its status write, want 3 (too few status writes to test)", n)
	}
	if n := c.refused.Load(); n != 0 {
		t.Fatalf("%d of 3 status writes refused by an annotation written since their read", n)
	}
	if got := getSet(h, "pool").Annotations["test/between"]; got != "3" {
		t.Fatalf("their annotation %q, want 3", got)
	}
}
