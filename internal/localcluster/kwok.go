package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/millwright-dev/millwright/internal/kwok"
)

// The Node keys kwok and internal/provider/sim (kwok node mode) agree on.
const (
	KwokNodeAnnotation      = kwok.NodeAnnotation
	KwokNodeAnnotationValue = kwok.NodeAnnotationValue
	KwokNotReadyLabel       = kwok.NotReadyLabel
	// KwokNotReadyReasonAnnotation and KwokNotReadyMessageAnnotation set
	// the reason and message of the Ready=False condition.
	KwokNotReadyReasonAnnotation  = kwok.NotReadyReasonAnnotation
	KwokNotReadyMessageAnnotation = kwok.NotReadyMessageAnnotation
)

// kwok is kwok playing the kubelet of every Node annotated
// KwokNodeAnnotation=KwokNodeAnnotationValue.
func (c *Cluster) kwok() (*component, error) {
	dir := filepath.Join(c.dir, Kwok)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.apiURL, c.pki, Kwok); err != nil {
		return nil, err
	}
	return kwokComponent(dir, kubeconfig, podCIDR, c.opts.NodeHeartbeats.kwokNodes(), c.client, c.opts.Logf)
}

// kwokComponent is kwok reaching the API server through kubeconfig, its
// configuration (with the pod CIDR podCIDR, if not empty, and nodes)
// written in dir, and the probe that tells it works.
func kwokComponent(dir, kubeconfig, podCIDR string, nodes kwok.Nodes, client kubernetes.Interface, logf func(string, ...any)) (*component, error) {
	configPath := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(configPath, []byte(kwok.Config(podCIDR, nodes)), 0o600); err != nil {
		return nil, err
	}
	probe := &kwokProbe{client: client, logf: logf}
	return &component{
		name: Kwok,
		args: []string{
			"--kubeconfig=" + kubeconfig,
			"--config=" + configPath,
			"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
		},
		// kwok also reads ~/.kwok/kwok.yaml when it exists; a private HOME
		// keeps a developer's own kwok configuration out.
		env:     []string{"HOME=" + dir},
		probe:   probe.check,
		cleanup: probe.cleanup,
	}, nil
}

// StartKwok runs kwok (the binary at bin) outside a Cluster, against the
// API server kubeconfig reaches — an envtest control plane, for tests —
// managing the Nodes annotated KwokNodeAnnotation=KwokNodeAnnotationValue.
// dir (which must exist) receives its configuration and log (kwok.log);
// client is used for the probe. It returns once kwok has made a probe Node
// Ready (bounded by timeout and ctx), so a caller's first Node is not raced
// against kwok's start; on failure nothing is left running.
func StartKwok(ctx context.Context, bin, dir, kubeconfig string, client kubernetes.Interface, timeout time.Duration) (*Process, error) {
	comp, err := kwokComponent(dir, kubeconfig, "", kwok.Nodes{}, client, func(string, ...any) {})
	if err != nil {
		return nil, err
	}
	log := filepath.Join(dir, Kwok+".log")
	p, err := startProcess(Kwok, bin, comp.args, comp.env, log)
	if err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, comp, p, timeout, log); err != nil {
		_ = p.stop(10 * time.Second)
		return nil, err
	}
	return &Process{p: p}, nil
}

// kwokProbe tells kwok is working the only way that shows its Stages
// loaded and it can write: a fresh Node it must make Ready. kwok serves no
// health endpoint unless given a server address, and then only says that
// it is alive.
type kwokProbe struct {
	client kubernetes.Interface
	logf   func(string, ...any)
	node   string // the probe Node, once created
}

func (p *kwokProbe) check(ctx context.Context) error {
	nodes := p.client.CoreV1().Nodes()
	if p.node == "" {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        "localcluster-kwok-probe-" + rand.String(5),
				Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
			},
			// Nothing may be scheduled to a Node about to be deleted.
			Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "localcluster.millwright.dev/probe", Effect: corev1.TaintEffectNoSchedule}}},
		}
		if _, err := nodes.Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating probe Node: %w", err)
		}
		p.node = node.Name
	}
	node, err := nodes.Get(ctx, p.node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading probe Node: %w", err)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
			return nil
		}
	}
	return fmt.Errorf("probe Node %s is not Ready yet", p.node)
}

// cleanup deletes the probe Node, so the cluster starts with no Nodes.
func (p *kwokProbe) cleanup() {
	if p.node == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := p.client.CoreV1().Nodes().Delete(ctx, p.node, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		p.logf("localcluster: deleting kwok probe Node %s: %v", p.node, err)
	}
	p.node = ""
}
