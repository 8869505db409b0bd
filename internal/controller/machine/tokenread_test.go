package machine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
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
