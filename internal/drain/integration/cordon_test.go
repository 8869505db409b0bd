package integration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/drain"
)

func TestCordon(t *testing.T) {
	node := newNode(t, false)
	for i := range 2 { // the second call must find nothing to do and not fail
		if err := drain.Cordon(t.Context(), env.Client, node.Name); err != nil {
			t.Fatalf("Cordon call %d: %v", i+1, err)
		}
		got := &corev1.Node{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		if !got.Spec.Unschedulable {
			t.Fatalf("after Cordon call %d the node is schedulable", i+1)
		}
	}
}

func TestCordonMissingNode(t *testing.T) {
	if err := drain.Cordon(t.Context(), env.Client, "no-such-node"); err != nil {
		t.Fatalf("Cordon of a missing node: %v, want nil", err)
	}
}

// CordonNode works from the Node the caller read (the machine controller's
// cache): it cordons without reading, and writes nothing for a Node read
// unschedulable.
func TestCordonNodeAsRead(t *testing.T) {
	node := newNode(t, false)
	read := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), read); err != nil {
		t.Fatal(err)
	}
	if err := drain.CordonNode(t.Context(), env.Client, read); err != nil {
		t.Fatalf("CordonNode: %v", err)
	}
	if read.Spec.Unschedulable {
		t.Fatal("CordonNode changed the Node it was handed")
	}
	got := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	if !got.Spec.Unschedulable {
		t.Fatal("after CordonNode the node is schedulable")
	}
	if err := drain.CordonNode(t.Context(), env.Client, got); err != nil {
		t.Fatalf("CordonNode of a cordoned Node: %v", err)
	}
	again := &corev1.Node{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != got.ResourceVersion {
		t.Errorf("CordonNode of a Node read unschedulable wrote it (resourceVersion %s → %s)", got.ResourceVersion, again.ResourceVersion)
	}
	if err := env.Client.Delete(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	if err := drain.CordonNode(t.Context(), env.Client, read); err != nil {
		t.Fatalf("CordonNode of a Node deleted since it was read: %v, want nil", err)
	}
}
