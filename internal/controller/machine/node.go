package machine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// findNode finds the Machine's Node by name, else by providerID. A Node of
// that name that belongs to another VM is stale: reported, never adopted.
func (r *Reconciler) findNode(ctx context.Context, s *scope) (reconcile.Result, error) {
	m := s.machine
	node, err := r.nodeOf(ctx, m)
	if err != nil || node == nil {
		return reconcile.Result{}, err
	}
	if owner, stale := staleNode(node, m); stale {
		msg := "Node " + node.Name + " belongs to " + owner + ", not to this Machine's VM " + m.Spec.ProviderID + "; it is not adopted"
		r.missing(s, v1alpha1.NodeReadyCondition, ReasonStaleNode, msg)
		return reconcile.Result{}, nil
	}
	s.node = node
	m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: node.Name}
	syncNodeVersion(s)
	if node.Annotations[v1alpha1.NodeTriggerDeletionAnnotation] == "true" && !machinefacts.Preserved(m) {
		// A preserved Machine is kept until its preservation ends (docs/preservation.md).
		s.event(corev1.EventTypeNormal, "TriggerDeletion", "Node "+node.Name+" asks for its Machine to be replaced; deleting the Machine")
		s.stop = true
		return reconcile.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, m))
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) nodeOf(ctx context.Context, m *v1alpha1.Machine) (*corev1.Node, error) {
	name := m.Status.NodeName
	if m.Status.NodeRef != nil {
		name = m.Status.NodeRef.Name
	}
	if name != "" {
		node := &corev1.Node{}
		err := r.Target.Get(ctx, types.NamespacedName{Name: name}, node)
		if err == nil {
			return node, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	if m.Spec.ProviderID == "" {
		return nil, nil
	}
	nodes, err := ownerindex.NodesWithProviderID(ctx, r.Target, m.Spec.ProviderID)
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	return &nodes[0], nil
}

// staleNode reports whether node, found by the Machine's node name, is in
// fact another VM's Node, and whose.
func staleNode(node *corev1.Node, m *v1alpha1.Machine) (string, bool) {
	if node.Spec.ProviderID != "" && m.Spec.ProviderID != "" && node.Spec.ProviderID != m.Spec.ProviderID {
		return "VM " + node.Spec.ProviderID, true
	}
	owner := node.Annotations[v1alpha1.NodeMachineAnnotation]
	ns := node.Annotations[v1alpha1.NodeClusterNamespaceAnnotation]
	if owner != "" && (owner != m.Name || (ns != "" && ns != m.Namespace)) {
		return "Machine " + ns + "/" + owner, true
	}
	return "", false
}

// syncNode keeps the Node's labels, annotations and taints in line with
// spec.nodeTemplate, and removes the uninitialized taint once they are.
func (r *Reconciler) syncNode(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.node == nil {
		return reconcile.Result{}, nil
	}
	node := s.node.DeepCopy()
	if !applyNodeTemplate(node, desiredNodeState(s.machine), backReferences(s.machine)) {
		return reconcile.Result{}, nil
	}
	warnZoneOverride(s, s.node, node)
	// Locked on the labels, annotations and taints it changes, not on the
	// whole Node: the kubelet's status writes (Ready, heartbeats) do not
	// refuse it. A quarter of these patches failed so in a rolling update
	// (docs/benchmarks.md).
	err := patch.New(r.Target, s.node).PatchObjectLocked(ctx, node)
	if apierrors.IsConflict(err) {
		// The Node's taints or one of our keys changed under us: redo from
		// a fresh copy once the cache has it (its watch event most likely
		// wakes us before).
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	if err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	s.node = node
	return reconcile.Result{}, nil
}

// warnZoneOverride emits a Warning Event when the Node's zone label, as
// the kubelet or the cloud reported it, is replaced by the Machine's
// spec.failureDomain: the spread believes the Machine is in another zone
// than its provider says (a class whose zones do not match the cloud's),
// which a user must hear about rather than find in the labels. Once
// replaced the label is ours, so the Event is sent once per Node.
func warnZoneOverride(s *scope, before, after *corev1.Node) {
	reported, ok := before.Labels[corev1.LabelTopologyZone]
	want := after.Labels[corev1.LabelTopologyZone]
	if !ok || reported == want || s.machine.Spec.FailureDomain == "" {
		return
	}
	s.event(corev1.EventTypeWarning, "ZoneOverridden", fmt.Sprintf(
		"Node %s reported zone %q; its %s label is set to the Machine's spec.failureDomain %q (docs/failure-domains.md)",
		before.Name, reported, corev1.LabelTopologyZone, want))
}

// nodeState is what Millwright applies to a Node; the last applied one is
// kept in an annotation on the Node for the three-way merge.
type nodeState struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Taints      []corev1.Taint    `json:"taints,omitempty"`
}

// backReferences are the Node annotations naming its Machine, which the
// cluster-autoscaler reads.
func backReferences(m *v1alpha1.Machine) map[string]string {
	refs := map[string]string{
		v1alpha1.NodeMachineAnnotation:          m.Name,
		v1alpha1.NodeClusterNamespaceAnnotation: m.Namespace,
	}
	if m.Spec.ClusterName != "" {
		refs[v1alpha1.NodeClusterNameAnnotation] = m.Spec.ClusterName
	}
	return refs
}

// desiredNodeState is the Machine's nodeTemplate, with the Machine's own
// labels under driver.NodeLabelPrefix (what its driver reported of the
// VM, e.g. the capacity type: see recordNodeLabels) and its zone
// (spec.failureDomain) as the Node's topology.kubernetes.io/zone: the
// scheduler's topology spread sees where the spread put the Machine
// (docs/failure-domains.md), whatever the kubelet or the cloud provider
// reported. A fact about the VM wins over a template that says otherwise.
func desiredNodeState(m *v1alpha1.Machine) nodeState {
	t := m.Spec.NodeTemplate
	labels := t.Metadata.Labels
	vm := map[string]string{}
	for k, v := range m.Labels {
		if strings.HasPrefix(k, driver.NodeLabelPrefix) {
			vm[k] = v
		}
	}
	if fd := m.Spec.FailureDomain; fd != "" || len(vm) > 0 {
		labels = maps.Clone(labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, vm)
		if fd != "" {
			labels[corev1.LabelTopologyZone] = fd
		}
	}
	return nodeState{Labels: labels, Annotations: t.Metadata.Annotations, Taints: t.Taints}
}

// applyNodeTemplate merges desired into node three ways: keys Millwright
// applied before and no longer wants are removed, keys others added are
// kept, desired keys are set. It also sets the Machine back-references and
// drops the uninitialized taint. It reports whether node changed.
func applyNodeTemplate(node *corev1.Node, desired nodeState, refs map[string]string) bool {
	var last nodeState
	if raw := node.Annotations[v1alpha1.NodeLastAppliedTemplateAnnotation]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &last) // a corrupt record only loses removals
	}
	before := node.DeepCopy()
	node.Labels = mergeMap(node.Labels, last.Labels, desired.Labels)
	node.Annotations = mergeMap(node.Annotations, last.Annotations, desired.Annotations)
	node.Spec.Taints = mergeTaints(node.Spec.Taints, last.Taints, desired.Taints)
	node.Spec.Taints = removeTaint(node.Spec.Taints, v1alpha1.UninitializedTaintKey)

	record, _ := json.Marshal(desired)
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[v1alpha1.NodeLastAppliedTemplateAnnotation] = string(record)
	for k, v := range refs {
		node.Annotations[k] = v
	}
	return !equalNode(before, node)
}

func mergeMap(current, last, desired map[string]string) map[string]string {
	out := make(map[string]string, len(current)+len(desired))
	for k, v := range current {
		if _, applied := last[k]; applied {
			if _, still := desired[k]; !still {
				continue
			}
		}
		out[k] = v
	}
	for k, v := range desired {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func taintKey(t corev1.Taint) string { return t.Key + ":" + string(t.Effect) }

func mergeTaints(current, last, desired []corev1.Taint) []corev1.Taint {
	lastKeys, desiredByKey := map[string]bool{}, map[string]corev1.Taint{}
	for _, t := range last {
		lastKeys[taintKey(t)] = true
	}
	for _, t := range desired {
		desiredByKey[taintKey(t)] = t
	}
	var out []corev1.Taint
	for _, t := range current {
		k := taintKey(t)
		if d, ok := desiredByKey[k]; ok {
			out = append(out, d)
			delete(desiredByKey, k)
			continue
		}
		if !lastKeys[k] {
			out = append(out, t)
		}
	}
	for _, t := range desired { // keep the template's order for new taints
		if _, pending := desiredByKey[taintKey(t)]; pending {
			out = append(out, t)
		}
	}
	return out
}

func removeTaint(taints []corev1.Taint, key string) []corev1.Taint {
	out := taints[:0:0]
	for _, t := range taints {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out
}

func equalNode(a, b *corev1.Node) bool {
	return equality.Semantic.DeepEqual(a.Labels, b.Labels) &&
		equality.Semantic.DeepEqual(a.Annotations, b.Annotations) &&
		equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints)
}

// nodeReady returns the Node's Ready condition, or nil.
func nodeReady(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
