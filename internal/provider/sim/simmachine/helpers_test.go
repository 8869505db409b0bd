package simmachine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func mustJSON(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

var nsSeq atomic.Int64

// owned is a SimMachine with its owner Machine and bootstrap Secret, as
// the Millwright machine controller would set them up.
type owned struct {
	t  *testing.T
	c  client.Client
	sm *infrav1.SimMachine
	m  *v1alpha1.Machine
}

// newOwned creates, in a namespace of the test's own, a SimMachine with
// the providerSpec, and its owner Machine, edited by editMachine if set.
func newOwned(t *testing.T, providerSpec string, editMachine func(*v1alpha1.Machine)) *owned {
	t.Helper()
	ctx := context.Background()
	c := testClient
	ns := fmt.Sprintf("sm%d-%s", nsSeq.Add(1), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	ns = strings.TrimRight(ns[:min(len(ns), 60)], "-")
	o := &owned{t: t, c: c}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}, Data: map[string][]byte{"value": []byte("boot")}}
	o.sm = &infrav1.SimMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"},
		Spec:       infrav1.SimMachineSpec{ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpec)}},
	}
	o.m = &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"},
		Spec: v1alpha1.MachineSpec{
			InfrastructureRef: &v1alpha1.ContractReference{APIGroup: infrav1.GroupName, Kind: "SimMachine", Name: "m1"},
			Bootstrap:         v1alpha1.Bootstrap{DataSecretName: ptr.To("data")},
		},
	}
	if editMachine != nil {
		editMachine(o.m)
	}
	for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, secret, o.sm, o.m} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	o.patch(func(sm *infrav1.SimMachine) {
		sm.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Name: o.m.Name, UID: o.m.UID, Controller: ptr.To(true),
		}}
	})
	return o
}

func (o *owned) patch(mutate func(*infrav1.SimMachine)) {
	o.t.Helper()
	o.get()
	base := o.sm.DeepCopy()
	mutate(o.sm)
	if err := o.c.Patch(context.Background(), o.sm, client.MergeFrom(base)); err != nil {
		o.t.Fatal(err)
	}
}

func (o *owned) get() *infrav1.SimMachine {
	o.t.Helper()
	if err := o.c.Get(context.Background(), client.ObjectKeyFromObject(o.sm), o.sm); err != nil {
		o.t.Fatal(err)
	}
	return o.sm
}

// eventually polls the SimMachine until cond holds (gone: until it is deleted).
func (o *owned) eventually(what string, cond func(*infrav1.SimMachine) bool) {
	o.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := o.c.Get(ctx, client.ObjectKeyFromObject(o.sm), o.sm)
		if apierrors.IsNotFound(err) {
			return cond(nil), nil
		}
		return err == nil && cond(o.sm), err
	})
	if err != nil {
		o.t.Fatalf("waiting for the SimMachine %s: %v\nstatus: %+v", what, err, o.sm.Status)
	}
}

func ready(sm *infrav1.SimMachine) bool { return sm != nil && sm.Status.Ready }

func failedWith(reason string) func(*infrav1.SimMachine) bool {
	return func(sm *infrav1.SimMachine) bool {
		return sm != nil && ptr.Deref(sm.Status.FailureReason, "") == reason
	}
}

func gone(sm *infrav1.SimMachine) bool { return sm == nil }
