// Package kwok holds what Millwright's processes agree on about kwok, the
// fake kubelet its demo and tests run: the keys of the Nodes it manages
// and its configuration, with kwok v0.8.0's own Stages (see
// stages/README.md), which every kwok run here uses.
package kwok

import (
	"embed"
	"fmt"
	"strings"
)

const (
	// NodeAnnotation, with the value NodeAnnotationValue, marks the Nodes kwok manages.
	NodeAnnotation = "kwok.x-k8s.io/node"
	// NodeAnnotationValue is the value of NodeAnnotation kwok selects.
	NodeAnnotationValue = "fake"
	// NotReadyLabel "true" on a managed Node makes kwok report it
	// Ready=False (the node-not-ready Stage) until the label is removed.
	NotReadyLabel = "node-not-ready.stage.kwok.x-k8s.io"
	// NotReadyReasonAnnotation and NotReadyMessageAnnotation set the reason
	// and message of that Ready=False condition.
	NotReadyReasonAnnotation  = "node-not-ready.stage.kwok.x-k8s.io/reason"
	NotReadyMessageAnnotation = "node-not-ready.stage.kwok.x-k8s.io/message"
)

// stages are kwok v0.8.0's own Stage manifests: kwok has none built in and
// exits with "no stages found" without them.
//
//go:embed stages/*.yaml
var stages embed.FS

// stageFiles is the order the Stages are written into kwok's config.
var stageFiles = []string{
	"node-initialize.yaml",
	"node-heartbeat-with-lease.yaml",
	"node-not-ready.yaml",
	"pod-ready.yaml",
	"pod-ready-again.yaml",
	"pod-complete.yaml",
	"pod-delete.yaml",
}

// Nodes is how kwok keeps its Nodes: their Leases, and how many Node
// writes it has in flight. The zero value is kwok's usual setting, a
// kubelet's: 40 s Leases, renewed every quarter of that (10 s) by 4
// workers, about 100 Lease PUTs a second per 1000 Nodes, and 4 workers
// playing the Node Stages.
type Nodes struct {
	// LeaseDurationSeconds is nodeLeaseDurationSeconds; kwok renews each
	// Lease every LeaseDurationSeconds/4. Default 40.
	LeaseDurationSeconds int
	// LeaseParallelism is nodeLeaseParallelism: Lease creates and
	// renewals in flight at once. Default 4.
	LeaseParallelism int
	// StageParallelism is nodePlayStageParallelism: Node Stages played at
	// once, each a status PATCH (a new Node made Ready, the 10-20 minute
	// status refresh, the not-ready Stage every 1-2 s). Default 4.
	StageParallelism int
}

// Config returns kwok's --config: Node Leases renewed as a kubelet does
// (kube-controller-manager judges a Node's liveness by its Lease) and the
// Node Stages' workers as nodes says, the pod IP range podCIDR (none if
// empty), then the Stages.
func Config(podCIDR string, nodes Nodes) string {
	if nodes.LeaseDurationSeconds <= 0 {
		nodes.LeaseDurationSeconds = 40
	}
	if nodes.LeaseParallelism <= 0 {
		nodes.LeaseParallelism = 4
	}
	if nodes.StageParallelism <= 0 {
		nodes.StageParallelism = 4
	}
	options := `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
`
	if podCIDR != "" {
		options += "  cidr: " + podCIDR + "\n"
	}
	options += fmt.Sprintf("  nodeLeaseDurationSeconds: %d\n  nodeLeaseParallelism: %d\n  nodePlayStageParallelism: %d\n",
		nodes.LeaseDurationSeconds, nodes.LeaseParallelism, nodes.StageParallelism)
	options += `  podPlayStageParallelism: 4
  podsOnNodeSyncParallelism: 2
`
	docs := []string{options}
	for _, name := range stageFiles {
		data, err := stages.ReadFile("stages/" + name)
		if err != nil {
			panic(err) // embedded at build time; cannot be missing
		}
		docs = append(docs, string(data))
	}
	return strings.Join(docs, "---\n")
}
