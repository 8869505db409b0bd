package machine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// secretReads counts the Secret reads of the machine controller's
// uncached target client (bootstrap tokens only).
type secretReads struct {
	client.Client
	n atomic.Int32
}

func (c *secretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		c.n.Add(1)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A Machine whose user data this process rendered without a bootstrap
// token has none to delete once it joined: no read of the token Secret
// (one API round trip per created Machine in a machine worker). With a
// token, it is read and deleted (TestMachineBecomesRunning).
func TestNoTokenReadForUserDataWithoutOne(t *testing.T) {
	reads := &secretReads{}
	h := controllertest.New(t, controllertest.Options{Machine: func(r *machine.Reconciler) {
		reads.Client = r.TargetAPI
		r.TargetAPI = reads
	}})
	h.Class("small", simSpec)
	userData := &corev1.Secret{}
	key := client.ObjectKey{Namespace: h.NS, Name: "small-userdata"}
	if err := controllertest.Env.Client.Get(context.Background(), key, userData); err != nil {
		t.Fatal(err)
	}
	userData.Data = map[string][]byte{"userData": []byte("#!/bin/sh\njoin --name <<MACHINE_NAME>>\n")}
	if err := controllertest.Env.Client.Update(context.Background(), userData); err != nil {
		t.Fatal(err)
	}
	h.Machine("web-1", "small", nil)
	h.WaitPhase("web-1", v1alpha1.PhaseRunning, 30*time.Second)
	if got := reads.n.Load(); got != 0 {
		t.Fatalf("%d reads of a bootstrap token Secret for a Machine whose user data has no token", got)
	}
}

// failingDeletes fails the first n deletes of a Secret, as an API server
// that is briefly unavailable does.
type failingDeletes struct {
	client.Client
	left, failed atomic.Int32
}

func (c *failingDeletes) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*corev1.Secret); ok && c.left.Add(-1) >= 0 {
		c.failed.Add(1)
		return apierrors.NewServiceUnavailable("the API server is briefly unavailable")
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// A bootstrap token whose deletion failed when the Node joined is deleted
// by a later reconcile: the join happens once, and the token must not
// live on to its expiry for one failed call.
func TestTokenDeletionFailedAtTheJoinIsRetried(t *testing.T) {
	deletes := &failingDeletes{}
	deletes.left.Store(1)
	h := controllertest.New(t, controllertest.Options{Machine: func(r *machine.Reconciler) {
		deletes.Client = r.TargetAPI
		r.TargetAPI = deletes
	}})
	h.Class("small", simSpec)
	h.Machine("web-1", "small", nil)
	m := h.WaitPhase("web-1", v1alpha1.PhaseRunning, 30*time.Second)
	h.Eventually(30*time.Second, "the failed deletion of the token", func() (bool, error) { return deletes.failed.Load() == 1, nil })
	key := bootstraptoken.Key(bootstraptoken.ID(m.UID))
	h.Eventually(20*time.Second, "the bootstrap token to be deleted after its deletion failed at the join", func() (bool, error) {
		err := controllertest.Env.Client.Get(context.Background(), key, &corev1.Secret{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
