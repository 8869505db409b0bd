package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/demo"
	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/internal/provider/aws"
	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// awsZones are the zones of moto's us-east-1 the scenario's class spreads over.
var awsZones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// awsWorld is the EC2 side of an AWS scenario: a moto_server of its own,
// the fault-injecting proxy millwright-aws talks to (through hold, which
// can keep RunInstances' answers back), a client of the test's own
// straight to moto (not counted by the proxy), and the kubelets it plays.
type awsWorld struct {
	moto    *motoserver.Server
	proxy   *motoserver.Proxy
	hold    *launchHold
	ec2     *ec2.Client
	cluster string
	subnets map[string]string // zone → default subnet
	// sqs and queueURL are the interruption queue millwright-aws reads.
	sqs      *sqs.Client
	queueURL string
	// driverArgs and health are millwright-aws's flags and its probes'
	// address.
	driverArgs []string
	health     string
}

// newAWSScenario creates namespace name, starts moto, its proxy and
// millwright-aws (cluster tag kubernetes.io/cluster/<name>), and plays
// the kubelets of the cluster's instances until the test ends.
func newAWSScenario(t testing.TB, name string) *scenario {
	t.Helper()
	if _, err := os.Stat(filepath.Join(binDir, "millwright-aws")); err != nil {
		t.Fatalf("%v: run `make build` first", err)
	}
	s := beginScenario(t, name, "aws")
	w := &awsWorld{moto: motoserver.Start(t), cluster: "e2e-" + name}
	w.proxy = motoserver.NewProxy(t, w.moto.URL)
	// EC2 answers a repeated client token with its first launch; moto does not.
	w.proxy.HonourClientTokens()
	w.hold = newLaunchHold(t, w.proxy.URL)
	w.ec2 = demo.NewEC2Client(w.moto.URL, "us-east-1")
	s.aws = w
	ctx := context.Background()
	out, err := w.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		{Name: awssdk.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil {
		t.Fatalf("moto's default subnets: %v", err)
	}
	w.subnets = map[string]string{}
	for _, sn := range out.Subnets {
		w.subnets[awssdk.ToString(sn.AvailabilityZone)] = awssdk.ToString(sn.SubnetId)
	}
	for _, z := range awsZones {
		if w.subnets[z] == "" {
			t.Fatalf("moto has no default subnet in %s: %v", z, w.subnets)
		}
	}

	s.driver = "aws-" + name
	s.socket = "unix://" + filepath.Join(cluster.Dir(), name+"-aws.sock")
	w.health = testenv.FreeAddr(t)
	// The interruption queue is read with the driver's own credentials
	// (the default chain), not a class's.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDMILLWRIGHTE2E")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "e2e")
	w.driverArgs = []string{"--endpoint", s.socket, "--cluster-name", w.cluster,
		"--ec2-endpoint", w.hold.url, "--region", "us-east-1", "--health-address", w.health, "--retry-max-backoff", "200ms",
		"--interruption-queue-url", w.interruptionQueue(t, name), "--sqs-endpoint", w.moto.URL}
	s.startAWSDriver()

	kubelets := &demo.AWSKubelets{EC2: w.ec2, Cluster: w.cluster, Nodes: k8s}
	kctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		kubelets.Run(kctx, 500*time.Millisecond, func(f string, a ...any) { t.Logf(f, a...) })
	}()
	// Registered after moto's Start: runs before moto stops.
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// startAWSDriver starts millwright-aws (again, after it was killed) and
// waits until it is ready.
func (s *scenario) startAWSDriver() {
	s.t.Helper()
	s.start(s.driver, "millwright-aws", s.aws.driverArgs)
	s.eventually(time.Minute, "millwright-aws to be ready", func() (bool, error) {
		code, body, err := testenv.HTTPGet("http://" + s.aws.health + "/readyz")
		if err == nil && code != 200 {
			err = fmt.Errorf("/readyz %d: %s", code, body)
		}
		return err == nil, err
	})
}

// awsSpec is the providerSpec of the scenario's classes: moto's AMI, the
// default subnet of each zone, and capacity types as given.
func (w *awsWorld) awsSpec(capacityTypes ...string) string {
	subnets := []string{}
	for _, z := range awsZones {
		subnets = append(subnets, fmt.Sprintf("%q:%q", z, w.subnets[z]))
	}
	ct := ""
	if len(capacityTypes) > 0 {
		ct = fmt.Sprintf(`,"capacityTypes":["%s"]`, strings.Join(capacityTypes, `","`))
	}
	return fmt.Sprintf(`{"region":"us-east-1","ami":"ami-12c6146b","instanceType":"t3.micro","subnets":{%s}%s}`, strings.Join(subnets, ","), ct)
}

// createAWSClass creates the credentials Secret (dummy keys: moto takes
// any) and an AWS class over awsZones.
func (s *scenario) createAWSClass(name, spec string) {
	s.t.Helper()
	s.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-credentials", Namespace: s.ns},
		StringData: map[string]string{aws.KeyAccessKeyID: "AKIDMILLWRIGHTE2E", aws.KeySecretAccessKey: "e2e"}})
	s.createClassWith(name, spec, func(c *v1alpha1.MachineClass) {
		c.Spec.Provider = "aws"
		c.Spec.CredentialsSecretRef = &corev1.SecretReference{Name: name + "-credentials", Namespace: s.ns}
		c.Spec.NodeTemplate.Region = "us-east-1"
		c.Spec.NodeTemplate.Zones = awsZones
	})
}

// instances lists moto's instances of a cluster (every state).
func (w *awsWorld) instances(clusterName string) ([]types.Instance, error) {
	var out []types.Instance
	p := ec2.NewDescribeInstancesPaginator(w.ec2, &ec2.DescribeInstancesInput{Filters: []types.Filter{
		{Name: awssdk.String("tag:" + aws.ClusterTag(clusterName)), Values: []string{"owned"}}}})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
	}
	return out, nil
}

func live(in types.Instance) bool {
	switch in.State.Name {
	case types.InstanceStateNamePending, types.InstanceStateNameRunning, types.InstanceStateNameStopping, types.InstanceStateNameStopped:
		return true
	}
	return false
}

func tagOf(in types.Instance, key string) string {
	for _, t := range in.Tags {
		if awssdk.ToString(t.Key) == key {
			return awssdk.ToString(t.Value)
		}
	}
	return ""
}

// vms are the scenario's live instances, as the sim describes its VMs
// (for waitFleet).
func (w *awsWorld) vms(ns string) ([]sim.VM, error) {
	ins, err := w.instances(w.cluster)
	if err != nil {
		return nil, err
	}
	var out []sim.VM
	for _, in := range ins {
		if live(in) && tagOf(in, aws.TagNamespace) == ns {
			vm := sim.VM{ID: awssdk.ToString(in.InstanceId), MachineName: tagOf(in, aws.TagMachineName), NodeName: tagOf(in, aws.TagNodeName)}
			if in.State.Name == types.InstanceStateNameRunning {
				vm.State = sim.VMRunning
			}
			out = append(out, vm)
		}
	}
	return out, nil
}

// runInstance launches an instance behind Millwright's back, with tags.
func (w *awsWorld) runInstance(t *testing.T, tags map[string]string) string {
	t.Helper()
	var ts []types.Tag
	for k, v := range tags {
		ts = append(ts, types.Tag{Key: awssdk.String(k), Value: awssdk.String(v)})
	}
	out, err := w.ec2.RunInstances(context.Background(), &ec2.RunInstancesInput{ImageId: awssdk.String("ami-12c6146b"),
		InstanceType: types.InstanceTypeT3Micro, MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1), SubnetId: awssdk.String(w.subnets[awsZones[0]]),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: ts}}})
	if err != nil {
		t.Fatalf("RunInstances: %v", err)
	}
	return awssdk.ToString(out.Instances[0].InstanceId)
}

// state is an instance's state in moto.
func (w *awsWorld) state(id string) (types.InstanceStateName, error) {
	out, err := w.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return "", err
	}
	return out.Reservations[0].Instances[0].State.Name, nil
}

// instanceIDOf is the instance ID of a Machine's providerID
// aws:///<zone>/<id>, checked for that form.
func instanceIDOf(t *testing.T, m *v1alpha1.Machine) string {
	t.Helper()
	rest, ok := strings.CutPrefix(m.Spec.ProviderID, "aws:///")
	zone, id, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || !slices.Contains(awsZones, zone) || !strings.HasPrefix(id, "i-") {
		t.Fatalf("Machine %s has providerID %q, want aws:///<zone>/i-...", m.Name, m.Spec.ProviderID)
	}
	return id
}

// TestAWSFleet runs the manager with millwright-aws against moto (kwok
// playing the instances' kubelets): a spread MachineDeployment of 5
// reaches Running with real instances; a scale-down terminates exactly
// the deleted Machines' instances; an instance terminated behind
// Millwright's back is replaced; an instance of the cluster and class
// without a Machine is collected, one of another cluster never touched;
// the manager killed while a launch's answer is held back leaves one
// instance per Machine; a zone refused for capacity moves its share to
// the others; spot refused falls back to on-demand; a spot interruption
// warning replaces its Machine first and drains it in time. At the end every live
// instance of the cluster is the one instance of a live Machine.
func TestAWSFleet(t *testing.T) {
	s := newAWSScenario(t, "aws")
	w := s.aws
	m := s.startManager("--machine-health-timeout", "10s", "--machine-safety-orphan-vms-period", "5s")
	// Spot first: every phase but the spot refusal launches spot.
	s.createAWSClass("general", w.awsSpec("spot", "on-demand"))

	// 1. A spread fleet of 5 (2/2/1 over the zones) with real instances.
	w.proxy.ResetCounts()
	created := time.Now()
	s.createSpreadDeployment(5, "general")
	fleet := s.waitFleet(5, "general", 2*time.Minute)
	t.Logf("figures: 5 Machines Running %.1fs after the MachineDeployment was created; per Machine %.1f RunInstances, %.1f DescribeInstances",
		time.Since(created).Seconds(), float64(w.proxy.Calls("RunInstances"))/5, float64(w.proxy.Calls("DescribeInstances"))/5)
	s.checkInstancesOf(fleet)

	// 2. Scale-down to 3: exactly the deleted Machines' instances go.
	before := map[string]string{} // Machine name → instance
	for i := range fleet {
		before[fleet[i].Name] = instanceIDOf(t, &fleet[i])
	}
	s.scale(3)
	kept := s.waitFleet(3, "general", 2*time.Minute)
	var wantGone []string
	for name, id := range before {
		if !slices.ContainsFunc(kept, func(m v1alpha1.Machine) bool { return m.Name == name }) {
			wantGone = append(wantGone, id)
		}
	}
	s.eventually(30*time.Second, "the deleted Machines' instances terminated, and only those", func() (bool, error) {
		ins, err := w.instances(w.cluster)
		if err != nil {
			return false, err
		}
		var gone []string
		for _, in := range ins {
			if !live(in) {
				gone = append(gone, awssdk.ToString(in.InstanceId))
			}
		}
		slices.Sort(gone)
		slices.Sort(wantGone)
		return slices.Equal(gone, wantGone), fmt.Errorf("terminated %v, want %v", gone, wantGone)
	})
	s.checkInstancesOf(kept)

	// 3. An instance terminated behind Millwright's back: its Node goes
	// NotReady (its kubelet is gone), the Machine fails its health
	// timeout and is replaced.
	victim := kept[0]
	if _, err := w.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{instanceIDOf(t, &victim)}}); err != nil {
		t.Fatal(err)
	}
	s.eventually(2*time.Minute, "Machine "+victim.Name+" replaced", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == victim.Name }) {
			return false, fmt.Errorf("%s is still there", victim.Name)
		}
		return s.fleetIs(ms, 3, "general")
	})

	// 4. An orphan of the cluster and class (no Machine) is collected; an
	// instance of another cluster, tagged as the fleet's, is never touched.
	orphanTags := map[string]string{aws.ClusterTag(w.cluster): "owned", aws.TagClass: "general", aws.TagNamespace: s.ns,
		aws.TagMachineName: s.ns + "-orphan", aws.TagMachineUID: "00000000-0000-4000-8000-00000000dead"}
	orphan := w.runInstance(t, orphanTags)
	foreignTags := map[string]string{aws.ClusterTag("another"): "owned", aws.TagClass: "general", aws.TagNamespace: s.ns,
		aws.TagMachineName: s.ns + "-foreign", aws.TagMachineUID: "00000000-0000-4000-8000-00000000beef"}
	foreign := w.runInstance(t, foreignTags)
	s.eventually(time.Minute, "the orphan "+orphan+" terminated", func() (bool, error) {
		st, err := w.state(orphan)
		return st == types.InstanceStateNameTerminated, fmt.Errorf("%s (%v)", st, err)
	})
	s.waitFleet(3, "general", time.Minute)

	// 5. The manager killed while a launch's answer is held back (the
	// instance exists, no one has heard of it): after its restart, one
	// instance per Machine.
	w.hold.start()
	s.scale(5)
	w.hold.waitHeld(t, time.Minute)
	s.killManager(m)
	w.hold.release()
	s.restartManager(m)
	afterKill := s.waitFleet(5, "general", 2*time.Minute)
	s.checkInstancesOf(afterKill)
	// The launch no one heard of is a Machine's instance: found by its
	// tags, not launched again nor collected as an orphan.
	for _, id := range w.hold.heldLaunches() {
		if !slices.ContainsFunc(afterKill, func(m v1alpha1.Machine) bool { return strings.HasSuffix(m.Spec.ProviderID, "/"+id) }) {
			t.Errorf("instance %s, launched while the manager was killed, is no Machine's", id)
		}
	}
	t.Logf("launches whose answer was held when the manager was killed: %v", w.hold.heldLaunches())

	// 6. Zone us-east-1c refuses every launch for capacity: its share
	// goes to the other zones, nothing new is made there.
	refused := "us-east-1c"
	inRefused := s.machinesIn(refused)
	zoneFault := w.proxy.Fail(&motoserver.Fault{Action: "RunInstances", Match: map[string]string{"SubnetId": w.subnets[refused]},
		Code: "InsufficientInstanceCapacity"})
	s.scale(7)
	s.waitEvent(s.ns, v1alpha1.ZoneOutOfCapacityReason, refused)
	s.waitSpreadOf(7, "general", func(got map[string]int) bool { return got[refused] == inRefused })
	if w.proxy.Hits(zoneFault) == 0 {
		t.Errorf("no launch in %s was refused", refused)
	}
	w.proxy.Clear()

	// 7. Spot refused everywhere: the new Machine's instance is on-demand.
	spotFault := w.proxy.Fail(&motoserver.Fault{Action: "RunInstances", Match: map[string]string{"InstanceMarketOptions.MarketType": "spot"},
		Code: "InsufficientInstanceCapacity"})
	old := map[string]bool{}
	for _, m := range s.waitFleet(7, "general", time.Minute) {
		old[m.Name] = true
	}
	s.scale(8)
	final := s.waitFleet(8, "general", 2*time.Minute)
	ins, err := w.instances(w.cluster)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]types.Instance{}
	for _, in := range ins {
		byID[awssdk.ToString(in.InstanceId)] = in
	}
	for i := range final {
		in := byID[instanceIDOf(t, &final[i])]
		want := "spot"
		if !old[final[i].Name] {
			want = "on-demand"
		}
		if got := tagOf(in, aws.TagCapacityType); got != want || (in.InstanceLifecycle == types.InstanceLifecycleTypeSpot) != (want == "spot") {
			t.Errorf("Machine %s's instance is %q (lifecycle %q), want %s", final[i].Name, got, in.InstanceLifecycle, want)
		}
	}
	if w.proxy.Hits(spotFault) == 0 {
		t.Errorf("no spot launch was refused")
	}

	s.checkInstancesOf(final)

	// 8. A spot interruption warning, in EC2's JSON through the SQS
	// queue: replacement first, drained and terminated before the deadline.
	// With the faults cleared, the set rebalances into the zone refused in
	// step 6 once its out-of-capacity mark lapses: a Machine created
	// there, one deleted from a fuller zone. That is waited for first: run
	// beside the interruption, it made a Machine the watch took for the
	// replacement and could delete the interrupted one as a scale-down.
	w.proxy.Clear()
	s.waitSpreadOf(8, "general", evenOver(awsZones))
	s.spotInterruption(s.waitFleet(8, "general", time.Minute), "general")

	if st, err := w.state(foreign); err != nil || st != types.InstanceStateNameRunning {
		t.Errorf("the other cluster's instance %s is %s (%v)", foreign, st, err)
	}
	for _, p := range w.proxy.Params("TerminateInstances") {
		for k, v := range p {
			if strings.HasPrefix(k, "InstanceId.") && slices.Contains(v, foreign) {
				t.Errorf("TerminateInstances was called on the other cluster's instance %s", foreign)
			}
		}
	}
}

// createSpreadDeployment creates the scenario's MachineDeployment of
// class, spread evenly over the class's zones from its first Machine.
func (s *scenario) createSpreadDeployment(replicas int32, class string) {
	s.t.Helper()
	pool := map[string]string{"pool": s.ns}
	surge, unavailable := intstr.FromInt(1), intstr.FromInt(0)
	spec := v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class}}
	spec.NodeTemplate.Metadata.Labels = pool
	s.create(&v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: s.ns, Namespace: s.ns},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas:       replicas,
			Selector:       v1alpha1.LabelSelector{MatchLabels: pool},
			FailureDomains: &v1alpha1.FailureDomains{Policy: v1alpha1.SpreadEven},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type:          v1alpha1.RollingUpdateStrategy,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
			Template: v1alpha1.MachineTemplateSpec{Metadata: v1alpha1.ObjectMeta{Labels: pool}, Spec: spec},
		},
	})
}

// machinesIn counts the scenario's Machines placed in zone.
func (s *scenario) machinesIn(zone string) int {
	s.t.Helper()
	ms, err := s.machines()
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, m := range ms {
		if m.Spec.FailureDomain == zone {
			n++
		}
	}
	return n
}

// waitSpreadOf waits until the fleet is replicas Running Machines of
// class whose spread (Machines by zone) ok accepts.
func (s *scenario) waitSpreadOf(replicas int, class string, ok func(map[string]int) bool) {
	s.t.Helper()
	s.eventually(2*time.Minute, fmt.Sprintf("fleet of %d Running Machines, spread as wanted", replicas), func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if done, err := s.fleetIs(ms, replicas, class); !done {
			return false, err
		}
		got := map[string]int{}
		for _, m := range ms {
			got[m.Spec.FailureDomain]++
		}
		return ok(got), fmt.Errorf("spread %v", got)
	})
}

// evenOver accepts a spread whose zones hold as many Machines as each
// other, give or take one.
func evenOver(zones []string) func(map[string]int) bool {
	return func(got map[string]int) bool {
		least, most := got[zones[0]], got[zones[0]]
		for _, z := range zones {
			least, most = min(least, got[z]), max(most, got[z])
		}
		return most-least <= 1
	}
}

// checkInstancesOf checks that every live instance of the cluster is the
// one instance of a Machine of ms: its providerID names it, it runs in
// the Machine's zone, its UID tag is the Machine's, and its Node carries
// the providerID.
func (s *scenario) checkInstancesOf(ms []v1alpha1.Machine) {
	s.t.Helper()
	ins, err := s.aws.instances(s.aws.cluster)
	if err != nil {
		s.t.Fatal(err)
	}
	byID := map[string]types.Instance{}
	for _, in := range ins {
		if live(in) {
			byID[awssdk.ToString(in.InstanceId)] = in
		}
	}
	if len(byID) != len(ms) {
		s.t.Errorf("%d live instances of the cluster for %d Machines", len(byID), len(ms))
	}
	for i := range ms {
		m := &ms[i]
		id := instanceIDOf(s.t.(*testing.T), m)
		in, ok := byID[id]
		switch {
		case !ok:
			s.t.Errorf("Machine %s's instance %s is not live", m.Name, id)
		case tagOf(in, aws.TagMachineUID) != string(m.UID):
			s.t.Errorf("instance %s of Machine %s carries UID %q, want %s", id, m.Name, tagOf(in, aws.TagMachineUID), m.UID)
		case m.Spec.FailureDomain != "" && awssdk.ToString(in.Placement.AvailabilityZone) != m.Spec.FailureDomain:
			s.t.Errorf("instance %s of Machine %s placed in %s runs in %s", id, m.Name, m.Spec.FailureDomain, awssdk.ToString(in.Placement.AvailabilityZone))
		}
		node := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(m)}, node); err != nil || node.Spec.ProviderID != m.Spec.ProviderID {
			s.t.Errorf("Node %s of Machine %s: providerID %q, want %q (%v)", nodeOf(m), m.Name, node.Spec.ProviderID, m.Spec.ProviderID, err)
		}
	}
}

// launchHold stands between millwright-aws and the proxy. While holding,
// it passes each RunInstances on (detached from the caller, so that the
// launch happens even if the caller goes) and keeps its answer back until
// released: a launch EC2 made whose answer no one has heard yet.
type launchHold struct {
	url     string
	mu      sync.Mutex
	holding bool
	// launched are the instances launched while holding.
	launched []string
	held     chan struct{}
	freed    chan struct{}
}

func newLaunchHold(t testing.TB, target string) *launchHold {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &launchHold{url: "http://" + l.Addr().String()}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		h.mu.Lock()
		holding, held, freed := h.holding, h.held, h.freed
		h.mu.Unlock()
		if !holding || form.Get("Action") != "RunInstances" {
			rp.ServeHTTP(w, r)
			return
		}
		rec := &recorded{header: http.Header{}, code: http.StatusOK}
		rp.ServeHTTP(rec, r.WithContext(context.WithoutCancel(r.Context())))
		if m := instanceIDRE.FindSubmatch(rec.body.Bytes()); m != nil {
			h.mu.Lock()
			h.launched = append(h.launched, string(m[1]))
			h.mu.Unlock()
		}
		select {
		case held <- struct{}{}:
		default:
		}
		<-freed
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.code)
		_, _ = w.Write(rec.body.Bytes())
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { h.release(); _ = srv.Close() })
	return h
}

// start holds the answers of the launches from now on.
func (h *launchHold) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holding, h.held, h.freed = true, make(chan struct{}, 1), make(chan struct{})
}

// waitHeld waits until a launch was made and its answer held.
func (h *launchHold) waitHeld(t *testing.T, bound time.Duration) {
	t.Helper()
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	select {
	case <-held:
	case <-time.After(bound):
		t.Fatalf("no RunInstances within %s", bound)
	}
}

// release answers the held launches and stops holding.
func (h *launchHold) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holding {
		close(h.freed)
		h.holding = false
	}
}

// instanceIDRE finds the instance of a RunInstances answer.
var instanceIDRE = regexp.MustCompile(`<instanceId>(i-[0-9a-f]+)</instanceId>`)

// heldLaunches are the instances launched while holding.
func (h *launchHold) heldLaunches() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.launched)
}

// recorded is a response kept back.
type recorded struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorded) Header() http.Header         { return r.header }
func (r *recorded) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorded) WriteHeader(code int)        { r.code = code }
