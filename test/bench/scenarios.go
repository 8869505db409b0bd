package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// meter measures the manager over one scenario, and the fleet against
// the replacement policy's bound at every Machine event.
type meter struct {
	e     *env
	o     *observer
	start counters
	cpu   cpuSnapshot
	peaks *peaks
	flaps int64 // the observer's Node Ready flaps at the start
	// auditFrom is the audit log's length at the start (-audit-reads).
	auditFrom int64
}

// startMeter starts measuring a scenario whose fleet must stay within bound.
func (b *bench) startMeter(ctx context.Context, bound fleetBound) (*meter, error) {
	e := b.e
	pid := e.managerPID()
	// Before the counters: a read received after their time is logged
	// after this length.
	auditFrom, err := e.auditLength()
	if err != nil {
		return nil, err
	}
	start, err := e.readCounters(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	if err := b.o.fleet.reset(bound); err != nil {
		return nil, fmt.Errorf("before this scenario: %w", err)
	}
	return &meter{e: e, o: b.o, start: start, cpu: takeCPU(e.cluster.PIDs()), peaks: startPeaks(ctx, e.metricsURL, pid), flaps: b.o.nodeFlaps.Load(), auditFrom: auditFrom}, nil
}

// finish ends the measurement; per-machine figures are divided by n. When
// the fleet went over its bound it returns the result and an error that
// says by how much.
func (m *meter) finish(ctx context.Context, scenario string, n int) (*result, error) {
	end, err := m.e.readCounters(ctx)
	cpu := takeCPU(m.e.cluster.PIDs())
	mem := m.peaks.stop()
	if err != nil {
		return nil, fmt.Errorf("reading the manager's metrics: %w", err)
	}
	bound, peak, violation := m.o.fleet.result()
	flaps := m.o.nodeFlaps.Load() - m.flaps
	r := &result{
		Scenario: scenario, Machines: n,
		Seconds:           round(end.at.Sub(m.start.at).Seconds(), 1),
		ManagerPeakHeap:   num(round(mem.heap, 1)),
		ManagerLiveHeap:   num(round(mem.liveHeap, 1)),
		ManagerHeapGoal:   num(round(mem.heapGoal, 1)),
		ManagerRSS:        num(round(mem.rss, 1)),
		ManagerCPUSeconds: num(round(end.cpuSeconds-m.start.cpuSeconds, 1)),
		CPU:               cpu.since(m.cpu, end.at.Sub(m.start.at).Seconds()),
		Writes:            map[string]float64{},
		QPS:               m.e.qps, Burst: m.e.burst,
		ManagerArgs:       m.e.managerArgs,
		Guards:            m.e.guards,
		ReplacementPolicy: bound.policyName(),
		FleetLimit:        bound.limit(),
		LargestFleet:      &peak,
		NodeReadyFlaps:    &flaps,
		NodeReadyWait:     m.o.readyWaits.between(m.start.at, end.at),
	}
	r.APIServerWrites, r.APIServerConflicts = map[string]float64{}, map[string]float64{}
	for k, v := range end.apiWrites {
		if d := v - m.start.apiWrites[k]; d > 0 {
			if w, ok := strings.CutSuffix(k, conflictSuffix); ok {
				r.APIServerConflicts[w] = d
			} else {
				r.APIServerWrites[k] = d
			}
		}
	}
	r.APIServerReads = map[string]float64{}
	reads := map[string]float64{}
	for k, v := range end.apiReads {
		if d := v - m.start.apiReads[k]; d > 0 {
			r.APIServerReads[k] = d
			reads[k[strings.LastIndexByte(k, ' ')+1:]] += d
		}
	}
	if r.Seconds > 0 {
		r.LeasePUTsPerSecond = num(round(r.APIServerWrites["leases PUT"]/r.Seconds, 1))
	}
	for method, v := range end.writes {
		if d := v - m.start.writes[method]; d > 0 {
			r.Writes[method] = d
		}
	}
	r.Conflicts = map[string]float64{}
	for method, v := range end.conflicts {
		if d := v - m.start.conflicts[method]; d > 0 {
			r.Conflicts[method] = d
		}
	}
	if n > 0 {
		r.WritesPerMachine = num(round((end.totalWrites()-m.start.totalWrites())/float64(n), 2))
		r.DriverCallsPerMachine = num(round((end.driverCalls-m.start.driverCalls)/float64(n), 2))
		r.ReadsPerMachine = num(round((end.reads-m.start.reads)/float64(n), 2))
		r.APIServerReadsPerMachine = map[string]float64{}
		for verb, v := range reads {
			r.APIServerReadsPerMachine[verb] = round(v/float64(n), 2)
		}
		if path := m.e.cluster.AuditLogPath(); path != "" {
			byClient, err := auditReads(path, m.auditFrom, m.start.at, end.at)
			if err != nil {
				return nil, fmt.Errorf("reading the audit log: %w", err)
			}
			r.APIServerReadsByClientPerMachine = map[string]float64{}
			for k, v := range byClient {
				if perMachine := round(v/float64(n), 2); perMachine > 0 {
					r.APIServerReadsByClientPerMachine[k] = perMachine
				}
			}
		}
	}
	if violation != nil {
		r.BoundViolation = violation.Error()
		return r, fmt.Errorf("%s: %w (largest fleet: %d Machines, %d not being deleted; limit %d)", scenario, violation, peak.All, peak.NotDeleting, bound.limit())
	}
	return r, nil
}

// scaleUp creates the fleet of n Machines, or scales it to n, and measures
// until all are Running.
func (b *bench) scaleUp(ctx context.Context, n int) (*result, error) {
	m, err := b.startMeter(ctx, boundFor(b.replicas, n, b.policy))
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

// setReplicas creates the MachineDeployment with replicas and the
// benchmark's replacement policy, or scales it.
func (b *bench) setReplicas(ctx context.Context, replicas int32) error {
	var md v1alpha1.MachineDeployment
	err := b.e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: deploymentName}, &md)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	if err != nil {
		err = b.createDeployment(ctx, machineDeployment(replicas), b.policy)
	} else {
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Replicas = replicas
		err = b.e.admin.Patch(ctx, &md, patch)
	}
	if err == nil {
		b.replicas = int(replicas)
	}
	return err
}

// steady measures the manager while nothing changes.
func (b *bench) steady(ctx context.Context, n int) (*result, error) {
	m, err := b.startMeter(ctx, boundFor(n, n, b.policy))
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

// rollingUpdate moves the fleet to class under the replacement policy and
// measures until every Machine is a Running Machine of class and the old
// ones are gone. The policy is set first, outside the measurement. Its
// ideal is waves × (create latency + the floor of one wave), the floor of
// one wave being measured here, as the floor is, for maxSurge Machines and
// Nodes.
func (b *bench) rollingUpdate(ctx context.Context, scenario string, n int, class, policy string) (*result, error) {
	if policy != b.policy {
		if err := b.setPolicy(ctx, policy); err != nil {
			return nil, err
		}
	}
	surge := maxSurge(n)
	waves := int(math.Ceil(float64(n) / float64(surge)))
	logf("%s: measuring the floor of one wave (%d Machines and Nodes)", scenario, surge)
	join, err := b.e.floor(ctx, b.o, surge, "wave", b.timeout, 0)
	if err != nil {
		return nil, err
	}
	perWave := createLatency.Seconds() + join.seconds
	ideal := float64(waves) * perWave

	m, err := b.startMeter(ctx, boundFor(n, n, b.policy))
	if err != nil {
		return nil, err
	}
	var md v1alpha1.MachineDeployment
	if err := b.e.admin.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: deploymentName}, &md); err != nil {
		return nil, err
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Template.Spec.Class = &v1alpha1.MachineClassReference{Name: class}
	if err := b.e.admin.Patch(ctx, &md, patch); err != nil {
		return nil, err
	}
	if err := b.o.waitFleet(ctx, scenario, n, class, b.timeout); err != nil {
		return nil, err
	}
	r, err := m.finish(ctx, scenario, n)
	if r != nil {
		r.IdealSeconds = num(round(ideal, 1))
		r.RatioToIdeal = num(round(r.Seconds/ideal, 2))
		r.Waves, r.WaveSeconds = waves, num(round(perWave, 2))
	}
	return r, err
}

// scaleDown scales the fleet to zero and measures until no Machine is left.
func (b *bench) scaleDown(ctx context.Context, n int) (*result, error) {
	m, err := b.startMeter(ctx, boundFor(b.replicas, 0, b.policy))
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
