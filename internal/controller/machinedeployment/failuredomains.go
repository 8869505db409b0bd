package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
)

// spreadState is what one reconcile resolved of spec.failureDomains
// (docs/failure-domains.md): the zones with their weights, or why they
// cannot be resolved, and each zone's capacity as the deployment's status
// records it.
type spreadState struct {
	// zones are the resolved zones in spec order (or the class's), with
	// weights; OutOfCapacity set for a zone whose next probe is still to
	// come. Nil: no spread (spec.failureDomains unset or invalid).
	zones []v1alpha1.PlacementZone
	// invalid says why the zones cannot be resolved ("" when they can).
	invalid string
	// status is the zones' new status (status.failureDomains).
	status []v1alpha1.FailureDomainStatus
	// events are the transitions to announce once the status is written.
	events []spreadEvent
}

// resolveZones resolves spec.failureDomains into zones with weights: the
// zones listed, or the class's nodeTemplate.zones. A zone the class
// cannot create in (when it lists its zones), no zones at all, or only
// zones of weight 0 make the spread invalid, with a message that says why.
func (r *Reconciler) resolveZones(ctx context.Context, s *scope) ([]v1alpha1.PlacementZone, string, error) {
	fd := s.md.Spec.FailureDomains
	classZones, source, err := r.classZones(ctx, s)
	if err != nil {
		return nil, "", err
	}
	var out []v1alpha1.PlacementZone
	if len(fd.Zones) == 0 {
		if len(classZones) == 0 {
			if source == "" {
				return nil, "spec.failureDomains lists no zones and the template names no MachineClass to read them from: list the zones in spec.failureDomains.zones", nil
			}
			return nil, fmt.Sprintf("spec.failureDomains lists no zones and %s lists none in its nodeTemplate.zones: list the zones in one of them", source), nil
		}
		for _, z := range classZones {
			out = append(out, v1alpha1.PlacementZone{Name: z, Weight: 1})
		}
		return out, "", nil
	}
	var sum int32
	for _, z := range fd.Zones {
		if len(classZones) > 0 && !slices.Contains(classZones, z.Name) {
			return nil, fmt.Sprintf("zone %s of spec.failureDomains.zones is not one of the zones of %s (%s): the provider cannot create a Machine there",
				z.Name, source, strings.Join(classZones, ", ")), nil
		}
		w := int32(1)
		if fd.Policy == v1alpha1.SpreadWeighted {
			w = ptr.Deref(z.Weight, 1)
		}
		sum += w
		out = append(out, v1alpha1.PlacementZone{Name: z.Name, Weight: w})
	}
	if sum == 0 {
		return nil, "every zone of spec.failureDomains.zones has weight 0: give one a weight above 0", nil
	}
	return out, "", nil
}

// classZones are, with what they come from, the zones the template's MachineClass (or provider
// template) can place a VM in: its nodeTemplate.zones, or its single
// nodeTemplate.zone. None for a class not found, or a provider template
// that reports no capacity.
func (r *Reconciler) classZones(ctx context.Context, s *scope) ([]string, string, error) {
	if ref := s.md.Spec.Template.Spec.InfrastructureRef; ref != nil {
		nt, err := contract.TemplateCapacity(ctx, r.Client, s.md.Namespace, ref)
		var problem *contract.Problem
		if errors.As(err, &problem) {
			err = nil // the template's own status says what is wrong
		}
		if nt == nil || err != nil {
			return nil, ref.Kind + " " + ref.Name, err
		}
		return nodeTemplateZones(nt), ref.Kind + " " + ref.Name, nil
	}
	c := s.md.Spec.Template.Spec.Class
	if c == nil {
		return nil, "", nil
	}
	class, err := r.class(ctx, s, c.Name)
	if err != nil || class == nil || class.Spec.NodeTemplate == nil {
		return nil, "MachineClass " + c.Name, err
	}
	return nodeTemplateZones(class.Spec.NodeTemplate), "MachineClass " + c.Name, nil
}

// nodeTemplateZones are the zones a class's nodeTemplate says its VMs go
// to.
func nodeTemplateZones(nt *v1alpha1.NodeTemplate) []string {
	if len(nt.Zones) > 0 {
		return nt.Zones
	}
	if nt.Zone != "" {
		return []string{nt.Zone}
	}
	return nil
}

// class reads a MachineClass of the deployment's namespace once per
// reconcile; nil when it does not exist.
func (r *Reconciler) class(ctx context.Context, s *scope, name string) (*v1alpha1.MachineClass, error) {
	if class, known := s.classes[name]; known {
		return class, nil
	}
	if s.classesMissing[name] {
		return nil, nil
	}
	class := &v1alpha1.MachineClass{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.md.Namespace, Name: name}, class)
	switch {
	case apierrors.IsNotFound(err):
		s.classesMissing[name] = true
		return nil, nil
	case err != nil:
		return nil, err
	}
	s.classes[name] = class
	return class, nil
}

// placementFor is the set's spec.failureDomains: the resolved zones, and a
// rebalance surge of 1 for the newest set when maxSurge allows a Machine
// above spec.replicas and no rollout is in progress (no other set has
// Machines). Nil without a valid spread: the set places nothing.
func (s *scope) placementFor(isNew bool) *v1alpha1.FailureDomainPlacement {
	if s.spread == nil || len(s.spread.zones) == 0 {
		return nil
	}
	p := &v1alpha1.FailureDomainPlacement{Zones: slices.Clone(s.spread.zones)}
	if isNew && s.surge >= 1 && !s.rolloutInProgress() {
		p.RebalanceSurge = 1
	}
	return p
}

// spreadZones are the names of the resolved zones; nil without a valid
// spread.
func (s *scope) spreadZones() []string {
	if s.spread == nil {
		return nil
	}
	var out []string
	for _, z := range s.spread.zones {
		out = append(out, z.Name)
	}
	return out
}

// rolloutInProgress reports whether a set other than the new one still
// has Machines (before the new set exists: whether any set has).
func (s *scope) rolloutInProgress() bool {
	for _, ms := range s.sets {
		if ms != s.newSet && s.machineCounts[ms.UID] > 0 {
			return true
		}
	}
	return false
}
