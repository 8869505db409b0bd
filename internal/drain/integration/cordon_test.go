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
