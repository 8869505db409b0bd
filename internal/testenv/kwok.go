package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/millwright-dev/millwright/internal/localcluster"
)

// KwokNodeAnnotation marks the Nodes the kwok started by StartKwok manages:
// it plays their kubelet (Ready Node, heartbeats, Running pods, deleting
// pods whose deletion started). Nodes without it are left alone.
const KwokNodeAnnotation = localcluster.KwokNodeAnnotation

// KwokNodeAnnotationValue is the value of KwokNodeAnnotation kwok selects.
const KwokNodeAnnotationValue = localcluster.KwokNodeAnnotationValue

// StartKwok runs bin/kwok against the control plane as a local cluster
// runs it (localcluster.StartKwok), managing the Nodes annotated
// KwokNodeAnnotation=KwokNodeAnnotationValue. dir (which must exist)
// receives its kubeconfig, configuration and log (kwok.log). It returns
// once kwok has made a probe Node Ready, so a test's first Node is not
// raced against kwok's start. Stop the process with Stop, e.g. in
// t.Cleanup.
func (e *Env) StartKwok(ctx context.Context, dir string) (*Process, error) {
	kubeconfig, err := e.WriteKubeconfig(dir)
	if err != nil {
		return nil, fmt.Errorf("writing kubeconfig for kwok: %w", err)
	}
	cs, err := kubernetes.NewForConfig(e.Config)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(e.Root, "bin", localcluster.Kwok)
	log := filepath.Join(dir, localcluster.Kwok+".log")
	p, err := localcluster.StartKwok(ctx, bin, dir, kubeconfig, cs, time.Minute)
	if err != nil {
		return nil, err
	}
	return &Process{Name: localcluster.Kwok, Log: log, p: p}, nil
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
