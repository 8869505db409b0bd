package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a broken watch missed is read back from etcd: a Node created,
// changed and deleted between two resourceVersions comes back as its
// three versions, in order, the deletion at its own revision.
func TestEtcdHistoryReadsWhatAWatchMissed(t *testing.T) {
	ctx := context.Background()
	h := newEtcdHistory(cluster.EtcdURL(), k8s.Scheme())
	before := &corev1.NodeList{}
	if err := k8s.List(ctx, before); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "etcd-history-node"}}
	if err := k8s.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	created := resourceVersion(node)
	base := node.DeepCopy()
	node.Labels = map[string]string{"changed": "yes"}
	if err := k8s.Patch(ctx, node, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	changed := resourceVersion(node)
	if err := k8s.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	after := &corev1.NodeList{}
	if err := k8s.List(ctx, after); err != nil {
		t.Fatal(err)
	}
	events, err := h.between(ctx, "/registry/minions/", resourceVersion(before), resourceVersion(after))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.obj.GetName() == node.Name {
			got = append(got, fmt.Sprintf("%s %d %s", e.typ, resourceVersion(e.obj), e.obj.GetLabels()["changed"]))
		}
	}
	want := []string{
		fmt.Sprintf("%s %d ", watch.Modified, created),
		fmt.Sprintf("%s %d yes", watch.Modified, changed),
	}
	// Other controllers (kube-controller-manager's) may write the Node in
	// between: the test's two versions in order, then the deletion.
	first, second := slices.Index(got, want[0]), slices.Index(got, want[1])
	if first != 0 || second <= first || !strings.HasPrefix(got[len(got)-1], string(watch.Deleted)+" ") {
		t.Fatalf("etcd's history of Node %s between rv %d and %d: %q, want %q among them in order, then its deletion",
			node.Name, resourceVersion(before), resourceVersion(after), got, want)
	}
}
