package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/kwok"
)

// KwokNodeAnnotation marks the Nodes the kwok started by StartKwok manages:
// it plays their kubelet (Ready Node, heartbeats, Running pods, deleting
// pods whose deletion started). Nodes without it are left alone.
const KwokNodeAnnotation = kwok.NodeAnnotation

// KwokNodeAnnotationValue is the value of KwokNodeAnnotation kwok selects.
const KwokNodeAnnotationValue = kwok.NodeAnnotationValue

// StartKwok runs bin/kwok against the control plane, managing the Nodes
// annotated KwokNodeAnnotation=KwokNodeAnnotationValue. dir (which must
// exist) receives its kubeconfig, configuration and log (kwok.log).
//
// kwok v0.8.0 has no stages built in (it exits with "no stages found"), so
// it is given the upstream "fast" Node and pod stages in its --config.
// StartKwok returns once kwok has made a probe Node Ready, so a test's
// first Node is not raced against kwok's start. Stop the process with Stop,
// e.g. in t.Cleanup.
func (e *Env) StartKwok(ctx context.Context, dir string) (*Process, error) {
	kubeconfig, err := e.WriteKubeconfig(dir)
	if err != nil {
		return nil, fmt.Errorf("writing kubeconfig for kwok: %w", err)
	}
	config := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(config, []byte(kwok.Config("")), 0o600); err != nil {
		return nil, err
	}
	p, err := startProcess(filepath.Join(e.Root, "bin", "kwok"), filepath.Join(dir, "kwok.log"), []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + config,
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
	},
		// kwok also reads ~/.kwok/kwok.yaml when it exists; a private HOME
		// keeps a developer's own kwok configuration out of the tests.
		"HOME="+dir)
	if err != nil {
		return nil, err
	}
	if err := e.probeKwok(ctx, p); err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// probeKwok waits until kwok makes a fresh Node Ready, then deletes it.
func (e *Env) probeKwok(ctx context.Context, p *Process) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "kwok-probe-" + rand.String(6),
		Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
	}}
	if err := e.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("creating kwok probe node: %w", err)
	}
	defer func() { _ = client.IgnoreNotFound(e.Client.Delete(context.Background(), node)) }()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := p.Exited(); exited {
			return false, fmt.Errorf("kwok exited: %v", err)
		}
		got := &corev1.Node{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return NodeReady(got), nil
	})
	if err != nil {
		return fmt.Errorf("kwok did not make node %s Ready: %w\nkwok log:\n%s", node.Name, err, p.LogTail(20))
	}
	return nil
}

// NodeReady reports whether the Node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
