package aws

import (
	"context"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestCreateTagsAndDefaults checks what a created instance carries: the
// driver's tags and the class's, IMDSv2 required with hop limit 1, the
// providerID's form, and the user data.
func TestCreateTagsAndDefaults(t *testing.T) {
	d := newDriver(t, "")
	c := class("tags", `{"region":"us-east-1","ami":"ami-12c6146b","instanceType":"t3.micro","tags":{"team":"infra"}}`)
	m := machine("tags-1")
	resp := create(t, d, c, m)
	inst := instanceOf(t, resp.ProviderID)
	if !strings.HasPrefix(resp.ProviderID, "aws:///us-east-1") || !strings.HasSuffix(resp.ProviderID, "/"+awssdk.ToString(inst.InstanceId)) {
		t.Errorf("providerID %q; want aws:///ZONE/%s", resp.ProviderID, awssdk.ToString(inst.InstanceId))
	}
	want := map[string]string{
		ClusterTag(clusterOf(t)): "owned", TagClass: "tags", TagNamespace: "default", TagMachineName: "tags-1",
		TagMachineUID: "uid-tags-1", TagNodeName: "tags-1", TagCapacityType: "on-demand", TagName: "tags-1", "team": "infra",
	}
	got := tagMap(inst.Tags)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tag %s = %q; want %q (tags %v)", k, got[k], v, got)
		}
	}
	if resp.NodeName != "tags-1" {
		t.Errorf("node name %q; want the Machine's name", resp.NodeName)
	}
	if mo := inst.MetadataOptions; mo == nil || mo.HttpTokens != types.HttpTokensStateRequired || awssdk.ToInt32(mo.HttpPutResponseHopLimit) != 1 {
		t.Errorf("metadata options %+v; want IMDSv2 required, hop limit 1", mo)
	}
	out, err := rawEC2().DescribeInstanceAttribute(context.Background(), &ec2.DescribeInstanceAttributeInput{
		InstanceId: inst.InstanceId, Attribute: types.InstanceAttributeNameUserData})
	if err != nil || out.UserData == nil || awssdk.ToString(out.UserData.Value) == "" {
		t.Errorf("user data: %v %v; want the Secret's", out, err)
	}
}

// TestRepeatedCreateFindsTheInstance counts the EC2 calls of a create and
// of a repeated one: the repeat finds the instance by its UID tag and
// launches nothing.
func TestRepeatedCreateFindsTheInstance(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	c := class("repeat", validSpec)
	m := machine("repeat-1")
	first := create(t, d, c, m)
	t.Logf("a first create: %d RunInstances, %d DescribeInstances", p.Calls("RunInstances"), p.Calls("DescribeInstances"))
	if p.Calls("RunInstances") != 1 || p.Calls("DescribeInstances") != 2 {
		t.Errorf("a first create made %d RunInstances and %d DescribeInstances; want 1 and 2 (by UID, by Node name)",
			p.Calls("RunInstances"), p.Calls("DescribeInstances"))
	}
	p.ResetCounts()
	second := create(t, d, c, m)
	if second.ProviderID != first.ProviderID {
		t.Fatalf("a repeated create returned %s, the first %s", second.ProviderID, first.ProviderID)
	}
	if p.Calls("RunInstances") != 0 || p.Calls("DescribeInstances") != 1 {
		t.Errorf("a repeated create made %d RunInstances and %d DescribeInstances; want 0 and 1",
			p.Calls("RunInstances"), p.Calls("DescribeInstances"))
	}
	if n := len(clusterInstances(t)); n != 1 {
		t.Errorf("moto has %d instances of the cluster; want 1", n)
	}
}

// TestTerminatedTokenMovesToTheNextAttempt makes EC2 answer the first
// client token of a Machine IdempotentInstanceTerminated, as it does for
// a token whose instance was terminated: the create launches with the
// next attempt's token, once.
func TestTerminatedTokenMovesToTheNextAttempt(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	m := machine("token-1")
	f := p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "IdempotentInstanceTerminated",
		Match: map[string]string{"ClientToken": ClientToken(string(m.UID), CapacityOnDemand, 0)}})
	resp := create(t, d, class("token", validSpec), m)
	var tokens []string
	for _, v := range p.Params("RunInstances") {
		tokens = append(tokens, v.Get("ClientToken"))
	}
	want := []string{ClientToken(string(m.UID), CapacityOnDemand, 0), ClientToken(string(m.UID), CapacityOnDemand, 1)}
	if strings.Join(tokens, " ") != strings.Join(want, " ") || p.Hits(f) != 1 {
		t.Fatalf("RunInstances tokens %v (%d refused); want %v, the first refused", tokens, p.Hits(f), want)
	}
	if inst := instanceOf(t, resp.ProviderID); awssdk.ToString(inst.ClientToken) != want[1] {
		t.Errorf("the instance's client token is %q; want %q", awssdk.ToString(inst.ClientToken), want[1])
	}
	if len(ClientToken("a-uid-of-36-characters-000000000000", CapacityOnDemand, maxTokenAttempts)) > 64 {
		t.Error("a client token is longer than EC2's 64 characters")
	}
}

// TestSeveralInstancesAreOutOfRange makes a second instance carry a
// Machine's UID behind the driver's back: status and create answer
// OutOfRange, and a delete terminates both.
func TestSeveralInstancesAreOutOfRange(t *testing.T) {
	d := newDriver(t, "")
	c := class("several", validSpec)
	m := machine("several-1")
	resp := create(t, d, c, m)
	inst := instanceOf(t, resp.ProviderID)
	_, err := rawEC2().RunInstances(context.Background(), &ec2.RunInstancesInput{ImageId: awssdk.String(testAMI), MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: inst.Tags}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: testSecret()}); driver.CodeOf(err) != driver.OutOfRange {
		t.Errorf("GetMachineStatus with two instances: %v; want OutOfRange", err)
	}
	if _, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()}); driver.CodeOf(err) != driver.OutOfRange {
		t.Errorf("CreateMachine with two instances: %v; want OutOfRange", err)
	}
	if _, err := d.DeleteMachine(ctxT(t), &driver.DeleteMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()}); err != nil {
		t.Fatal(err)
	}
	if live := clusterInstances(t, liveStates...); len(live) != 0 {
		t.Errorf("%d instances live after the delete; want none", len(live))
	}
}

// TestGoneInstanceIsNotFound terminates a Machine's instance behind the
// driver's back: status answers NotFound (by providerID and by UID), a
// delete is OK, and a create launches a new instance.
func TestGoneInstanceIsNotFound(t *testing.T) {
	d := newDriver(t, "")
	c := class("gone", validSpec)
	m := machine("gone-1")
	resp := create(t, d, c, m)
	id, _ := ParseProviderID(resp.ProviderID)
	if _, err := rawEC2().TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	withID := m.DeepCopy()
	withID.Spec.ProviderID = resp.ProviderID
	for _, mm := range []*v1alpha1.Machine{m, withID} {
		if _, err := d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: mm, MachineClass: c, Secret: testSecret()}); driver.CodeOf(err) != driver.NotFound {
			t.Errorf("GetMachineStatus (providerID %q) of a terminated instance: %v; want NotFound", mm.Spec.ProviderID, err)
		}
	}
	if _, err := d.DeleteMachine(ctxT(t), &driver.DeleteMachineRequest{Machine: withID, MachineClass: c, Secret: testSecret()}); err != nil {
		t.Errorf("DeleteMachine of a terminated instance: %v; want OK", err)
	}
	if again := create(t, d, c, m); again.ProviderID == resp.ProviderID {
		t.Errorf("a create after the termination returned the terminated instance")
	}
}

// TestDeleteLeavesOthersAlone checks that DeleteMachine never terminates
// an instance its providerID names when that instance carries another
// Machine's UID, or another cluster's tag (the orphan collector's call,
// without a UID).
func TestDeleteLeavesOthersAlone(t *testing.T) {
	d := newDriver(t, "")
	c := class("others", validSpec)
	victim := create(t, d, c, machine("others-victim"))
	wrong := machine("others-wrong")
	wrong.Spec.ProviderID = victim.ProviderID
	_, err := d.DeleteMachine(ctxT(t), &driver.DeleteMachineRequest{Machine: wrong, MachineClass: c, Secret: testSecret()})
	if driver.CodeOf(err) != driver.FailedPrecondition {
		t.Errorf("DeleteMachine naming another Machine's instance: %v; want FailedPrecondition", err)
	}
	other := newDriver(t, "", func(o *Options) { o.ClusterName = "another-cluster" })
	orphan := &v1alpha1.Machine{}
	orphan.Name, orphan.Spec.ProviderID = "others-victim", victim.ProviderID
	_, err = other.DeleteMachine(ctxT(t), &driver.DeleteMachineRequest{Machine: orphan, MachineClass: c, Secret: testSecret()})
	if driver.CodeOf(err) != driver.FailedPrecondition {
		t.Errorf("another cluster's orphan delete: %v; want FailedPrecondition", err)
	}
	if inst := instanceOf(t, victim.ProviderID); !live(&inst) {
		t.Fatalf("the other Machine's instance is %s", stateOf(&inst))
	}
	// The orphan collector of the right cluster may delete it.
	if _, err := d.DeleteMachine(ctxT(t), &driver.DeleteMachineRequest{Machine: orphan, MachineClass: c, Secret: testSecret()}); err != nil {
		t.Fatalf("the orphan delete: %v", err)
	}
	if inst := instanceOf(t, victim.ProviderID); live(&inst) {
		t.Fatalf("the orphan is still %s", stateOf(&inst))
	}
}

// TestListMachinesPagesAndScopes lists a class of 7 instances in pages of
// 5, next to an instance of another class and one of another cluster.
func TestListMachinesPagesAndScopes(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL, func(o *Options) { o.PageSize = 5 })
	c := class("list", validSpec)
	want := map[string]string{}
	for i := range 7 {
		m := machine("list-" + string(rune('a'+i)))
		want[create(t, d, c, m).ProviderID] = string(m.UID)
	}
	create(t, d, class("list-other", validSpec), machine("list-other-class"))
	create(t, newDriver(t, "", func(o *Options) { o.ClusterName = "another-cluster" }), c, machine("list-other-cluster"))
	p.ResetCounts()
	resp, err := d.ListMachines(ctxT(t), &driver.ListMachinesRequest{MachineClass: c, Secret: testSecret()})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, vm := range resp.VMs {
		got[vm.ProviderID] = vm.MachineUID
		if vm.MachineName == "" {
			t.Errorf("%s has no Machine name", vm.ProviderID)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("ListMachines: %v; want %v", got, want)
	}
	for id, uid := range want {
		if got[id] != uid {
			t.Errorf("%s: UID %q; want %q", id, got[id], uid)
		}
	}
	if p.Calls("DescribeInstances") < 2 {
		t.Errorf("ListMachines made %d DescribeInstances calls; pages of 5 for 7 instances need 2", p.Calls("DescribeInstances"))
	}
}

// TestSecondInstanceOfALiveMachine: a second instance carries the UID of a
// Machine that records its first. The Machine's status is its recorded
// instance, not OutOfRange, and once that instance is gone NotFound (the
// second never passes for the Machine's VM); the orphan collector's
// delete (the Machine's name and the second instance's providerID, no
// UID) terminates the second instance and leaves the first running.
func TestSecondInstanceOfALiveMachine(t *testing.T) {
	d := newDriver(t, "")
	c := class("second", validSpec)
	m := machine("second-1")
	first := create(t, d, c, m)
	m.Spec.ProviderID = first.ProviderID
	inst := instanceOf(t, first.ProviderID)
	out, err := rawEC2().RunInstances(context.Background(), &ec2.RunInstancesInput{ImageId: awssdk.String(testAMI), MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1),
		Placement:         &types.Placement{AvailabilityZone: inst.Placement.AvailabilityZone},
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: inst.Tags}}})
	if err != nil {
		t.Fatal(err)
	}
	second := ProviderID(awssdk.ToString(out.Instances[0].Placement.AvailabilityZone), awssdk.ToString(out.Instances[0].InstanceId))
	status, err := d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: testSecret()})
	if err != nil || status.ProviderID != first.ProviderID {
		t.Fatalf("GetMachineStatus of the Machine recording %s, with a second instance %s: %v, %v; want the first", first.ProviderID, second, status, err)
	}
	collector := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace}, Spec: v1alpha1.MachineSpec{ProviderID: second}}
	if _, err := d.DeleteMachine(ctxT(t), &driver.DeleteMachineRequest{Machine: collector, MachineClass: c, Secret: testSecret()}); err != nil {
		t.Fatal(err)
	}
	live := clusterInstances(t, liveStates...)
	if len(live) != 1 || awssdk.ToString(live[0].InstanceId) != awssdk.ToString(inst.InstanceId) {
		t.Fatalf("after the collector's delete of %s, live instances %v; want only the Machine's %s", second, instanceIDs(live), first.ProviderID)
	}

	if _, err := rawEC2().TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{awssdk.ToString(inst.InstanceId)}}); err != nil {
		t.Fatal(err)
	}
	out, err = rawEC2().RunInstances(context.Background(), &ec2.RunInstancesInput{ImageId: awssdk.String(testAMI), MinCount: awssdk.Int32(1), MaxCount: awssdk.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: inst.Tags}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = rawEC2().TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{awssdk.ToString(out.Instances[0].InstanceId)}})
	})
	if _, err := d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: testSecret()}); driver.CodeOf(err) != driver.NotFound {
		t.Fatalf("GetMachineStatus of a Machine whose recorded instance is gone, with another carrying its UID: %v; want NotFound", err)
	}
}
