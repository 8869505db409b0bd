package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// meter measures the manager over one scenario.
type meter struct {
	e     *env
	start counters
	peaks *peaks
}

func (e *env) startMeter(ctx context.Context) (*meter, error) {
	pid := e.managerPID()
	start, err := e.readCounters(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	return &meter{e: e, start: start, peaks: startPeaks(ctx, e.metricsURL, pid)}, nil
}

// finish ends the measurement; per-machine figures are divided by n.
func (m *meter) finish(ctx context.Context, scenario string, n int) (*result, error) {
	end, err := m.e.readCounters(ctx)
	heap, rss, _ := m.peaks.stop()
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	r := &result{
		Scenario: scenario, Machines: n,
		Seconds:           round(end.at.Sub(m.start.at).Seconds(), 1),
		ManagerPeakHeap:   num(round(heap, 1)),
		ManagerRSS:        num(round(rss, 1)),
		ManagerCPUSeconds: num(round(end.cpuSeconds-m.start.cpuSeconds, 1)),
		Writes:            map[string]float64{},
		QPS:               m.e.qps, Burst: m.e.burst,
		ManagerArgs: m.e.managerArgs,
	}
	r.APIServerWrites = map[string]float64{}
	for k, v := range end.apiWrites {
		if d := v - m.start.apiWrites[k]; d > 0 {
			r.APIServerWrites[k] = d
		}
	}
	for method, v := range end.writes {
		if d := v - m.start.writes[method]; d > 0 {
			r.Writes[method] = d
		}
	}
	if n > 0 {
		r.WritesPerMachine = num(round((end.totalWrites()-m.start.totalWrites())/float64(n), 2))
		r.DriverCallsPerMachine = num(round((end.driverCalls-m.start.driverCalls)/float64(n), 2))
	}
	return r, nil
}

// scaleUp creates the fleet of n Machines, or scales it to n, and measures
// until all are Running.
func (b *bench) scaleUp(ctx context.Context, n int) (*result, error) {
	m, err := b.e.startMeter(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.setReplicas(ctx, int32(n)); err != nil {
		return nil, err
	}
	if err := b.o.waitFleet(ctx, "scale-up", n, classFast, b.timeout); err != nil {
		return nil, err
	}
	return m.finish(ctx, "scale-up", n)
}

// setReplicas creates the MachineDeployment with replicas, or scales it.
func (b *bench) setReplicas(ctx context.Context, replicas int32) error {
	var md v1alpha1.MachineDeployment
	err := b.e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: deploymentName}, &md)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	if err != nil {
		return b.e.admin.Create(ctx, machineDeployment(replicas))
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = replicas
	return b.e.admin.Patch(ctx, &md, patch)
}

// steady measures the manager while nothing changes.
func (b *bench) steady(ctx context.Context, n int) (*result, error) {
	m, err := b.e.startMeter(ctx)
	if err != nil {
		return nil, err
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(b.steadyFor):
	}
	return m.finish(ctx, "steady-state", n)
}

// rollingUpdate moves the fleet to the slow class and measures until every
// Machine is a Running Machine of it and the old ones are gone. Its ideal is
// waves × (create latency + the floor of one wave), the floor of one wave
// being measured here, as the floor is, for surge Machines and Nodes.
func (b *bench) rollingUpdate(ctx context.Context, n int) (*result, error) {
	surge := int(math.Ceil(float64(n) * 0.10)) // maxSurge 10%, rounded up as Deployments do
	waves := int(math.Ceil(float64(n) / float64(surge)))
	logf("rolling-update: measuring the floor of one wave (%d Machines and Nodes)", surge)
	join, err := b.e.floor(ctx, b.o, surge, "wave", b.timeout)
	if err != nil {
		return nil, err
	}
	perWave := createLatency.Seconds() + join
	ideal := float64(waves) * perWave

	m, err := b.e.startMeter(ctx)
	if err != nil {
		return nil, err
	}
	var md v1alpha1.MachineDeployment
	if err := b.e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: deploymentName}, &md); err != nil {
		return nil, err
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.Class = &v1alpha1.MachineClassReference{Name: classSlow}
	if err := b.e.admin.Patch(ctx, &md, patch); err != nil {
		return nil, err
	}
	if err := b.o.waitFleet(ctx, "rolling-update", n, classSlow, b.timeout); err != nil {
		return nil, err
	}
	r, err := m.finish(ctx, "rolling-update", n)
	if err != nil {
		return nil, err
	}
	r.IdealSeconds = num(round(ideal, 1))
	r.RatioToIdeal = num(round(r.Seconds/ideal, 2))
	r.Waves, r.WaveSeconds = waves, num(round(perWave, 2))
	return r, nil
}

// scaleDown scales the fleet to zero and measures until no Machine is left.
func (b *bench) scaleDown(ctx context.Context, n int) (*result, error) {
	m, err := b.e.startMeter(ctx)
	if err != nil {
		return nil, err
	}
	if err := b.setReplicas(ctx, 0); err != nil {
		return nil, err
	}
	if err := b.o.waitFleet(ctx, "scale-down", 0, "", b.timeout); err != nil {
		return nil, err
	}
	return m.finish(ctx, "scale-down", n)
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func num(v float64) *float64 { return &v }
