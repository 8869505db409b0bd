package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The spread scenario's objects (docs/benchmarks.md): a deployment of its
// own over the three zones of the sim's providerSpec, its class listing
// them, and the zone that runs out of capacity halfway.
const (
	spreadDeploymentName = "bench-spread"
	classSpread          = "bench-spread"
	spreadZoneOut        = "local-c"
)

var spreadZones = []string{"local-a", "local-b", "local-c"}

// spreadFigures are what the spread scenario reports beside time to
// Running: when the zone ran out, and the final spread, zone by zone.
type spreadFigures struct {
	// ZoneOut ran out of capacity once OutAtRunning Machines were
	// Running, OutAfterSeconds into the scenario.
	ZoneOut         string  `json:"zone_out"`
	OutAtRunning    int     `json:"out_at_running"`
	OutAfterSeconds float64 `json:"out_after_seconds"`
	// Machines and Targets are each zone's Running Machines at the end
	// and its share (status.failureDomains).
	Machines map[string]int32 `json:"machines"`
	Targets  map[string]int32 `json:"targets"`
	// Condition is the Spread condition's reason at the end.
	Condition string `json:"condition"`
}

// spread scales a deployment spread evenly over three zones from 0 to n;
// when half its Machines are Running, one zone runs out of capacity (the
// sim refuses every create placed there). It measures until all n are
// Running and reports the final spread. The benchmark's main fleet is
// scaled to 0 first, unmeasured, so the fleet bound is the spread's own.
func (b *bench) spread(ctx context.Context, n int) (*result, error) {
	if b.replicas > 0 {
		logf("spread: scaling the main fleet from %d to 0 first (not measured)", b.replicas)
		if err := b.setReplicas(ctx, 0); err != nil {
			return nil, err
		}
		if err := b.o.waitFleet(ctx, "spread: main fleet down", 0, "", b.timeout); err != nil {
			return nil, err
		}
	}
	class := machineClass(benchNamespace, classSpread, 0)
	class.Spec.NodeTemplate = &v1alpha1.NodeTemplate{Region: "local", Zones: spreadZones}
	if err := b.e.admin.Create(ctx, class); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating MachineClass %s: %w", classSpread, err)
	}
	m, err := b.startMeter(ctx, boundFor(0, n, b.policy))
	if err != nil {
		return nil, err
	}
	begin := time.Now()
	md := machineDeployment(int32(n))
	md.Name = spreadDeploymentName
	md.Spec.Selector.MatchLabels[poolLabel] = spreadDeploymentName
	md.Spec.Template.Metadata.Labels = map[string]string{poolLabel: spreadDeploymentName}
	md.Spec.Template.Spec.Class.Name = classSpread
	md.Spec.FailureDomains = &v1alpha1.FailureDomains{Policy: v1alpha1.SpreadEven}
	if err := b.createDeployment(ctx, md, b.policy); err != nil {
		return nil, err
	}
	half := (n + 1) / 2
	running := 0
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, b.timeout, true, func(ctx context.Context) (bool, error) {
		_, r, _, err := b.o.machines(ctx, classSpread)
		running = r
		return r >= half, err
	}); err != nil {
		return nil, fmt.Errorf("spread: %d of %d Machines Running: %w", running, half, err)
	}
	fig := &spreadFigures{ZoneOut: spreadZoneOut, OutAtRunning: running, OutAfterSeconds: round(time.Since(begin).Seconds(), 1)}
	logf("spread: %d Machines Running after %.1fs: zone %s runs out of capacity", running, fig.OutAfterSeconds, spreadZoneOut)
	if err := b.e.simPost(ctx, "/zones/"+spreadZoneOut+"/out-of-capacity"); err != nil {
		return nil, err
	}
	if err := b.o.waitFleet(ctx, "spread", n, classSpread, b.timeout); err != nil {
		return nil, err
	}
	r, err := m.finish(ctx, "spread", n)
	if r != nil {
		if ferr := b.spreadFigures(ctx, fig); ferr != nil {
			logf("spread: reading the final spread: %v", ferr)
		}
		r.Spread = fig
	}
	// The zone gets its capacity back for whatever runs next.
	if perr := b.e.simPost(ctx, "/zones/"+spreadZoneOut+"/capacity"); perr != nil && err == nil {
		err = perr
	}
	return r, err
}

// spreadFigures reads the final spread: Running Machines by zone, and the
// deployment's targets and Spread condition.
func (b *bench) spreadFigures(ctx context.Context, fig *spreadFigures) error {
	var l v1alpha1.MachineList
	if err := b.o.cache.List(ctx, &l, client.InNamespace(benchNamespace), client.UnsafeDisableDeepCopy); err != nil { // read only
		return err
	}
	fig.Machines, fig.Targets = map[string]int32{}, map[string]int32{}
	for i := range l.Items {
		if m := &l.Items[i]; m.Status.Phase == v1alpha1.PhaseRunning && m.DeletionTimestamp == nil {
			fig.Machines[m.Spec.FailureDomain]++
		}
	}
	var md v1alpha1.MachineDeployment
	if err := b.e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: spreadDeploymentName}, &md); err != nil {
		return err
	}
	for _, z := range md.Status.FailureDomains {
		fig.Targets[z.Name] = z.Target
	}
	for _, c := range md.Status.Conditions {
		if c.Type == v1alpha1.SpreadCondition {
			fig.Condition = c.Reason
		}
	}
	return nil
}

// simPost calls the sim's admin API.
func (e *env) simPost(ctx context.Context, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.simAdmin+path, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s to the sim: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("POST %s to the sim: %d %s", path, resp.StatusCode, body)
	}
	return nil
}

// zonesLine is "zone machines/share" for every zone, in zone order.
func zonesLine(f *spreadFigures) string {
	var parts []string
	for _, z := range spreadZones {
		parts = append(parts, fmt.Sprintf("%s %d/%d", z, f.Machines[z], f.Targets[z]))
	}
	return strings.Join(parts, ", ")
}
