package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// defaultSubnets are moto's default subnets of the test region, by zone.
func defaultSubnets(t *testing.T) map[string]string {
	t.Helper()
	out, err := rawEC2().DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{Filters: []types.Filter{filter("default-for-az", "true")}})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, s := range out.Subnets {
		m[awssdk.ToString(s.AvailabilityZone)] = awssdk.ToString(s.SubnetId)
	}
	if len(m) < 2 {
		t.Fatalf("moto has %d default subnets in %s", len(m), testRegion)
	}
	return m
}

func specWith(t *testing.T, fields map[string]any) string {
	t.Helper()
	s := map[string]any{"region": testRegion, "ami": testAMI, "instanceType": "t3.micro"}
	for k, v := range fields {
		s[k] = v
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestZonesMapToSubnets places Machines in zones: each gets its zone's
// subnet (subnets by zone, and subnetIDs whose zones EC2 knows), and a
// zone the class has no subnet for is InvalidArgument, nothing launched.
func TestZonesMapToSubnets(t *testing.T) {
	subnets := defaultSubnets(t)
	zones := sortedKeys(subnets)
	d := newDriver(t, "")
	for _, tc := range []struct {
		name string
		spec string
	}{
		{"subnets", specWith(t, map[string]any{"subnets": subnets})},
		{"subnetids", specWith(t, map[string]any{"subnetIDs": []string{subnets[zones[0]], subnets[zones[1]]}})},
	} {
		c := class("zones-"+tc.name, tc.spec)
		for _, zone := range zones[:2] {
			m := machine(fmt.Sprintf("zones-%s-%s", tc.name, zone))
			m.Spec.FailureDomain = zone
			inst := instanceOf(t, create(t, d, c, m).ProviderID)
			if zoneOf(&inst) != zone || awssdk.ToString(inst.SubnetId) != subnets[zone] {
				t.Errorf("%s: Machine in %s got an instance in %s, subnet %s; want subnet %s", tc.name, zone, zoneOf(&inst), awssdk.ToString(inst.SubnetId), subnets[zone])
			}
		}
		m := machine("zones-" + tc.name + "-nowhere")
		m.Spec.FailureDomain = zones[2]
		if tc.name == "subnets" {
			c = class("zones-two", specWith(t, map[string]any{"subnets": map[string]string{zones[0]: subnets[zones[0]]}}))
		}
		_, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()})
		if driver.CodeOf(err) != driver.InvalidArgument || !strings.Contains(driver.MessageOf(err), "machine.spec.failureDomain") {
			t.Errorf("%s: a Machine in a zone without subnet: %v; want InvalidArgument naming machine.spec.failureDomain", tc.name, err)
		}
	}
	// Without subnets, the default VPC in the Machine's zone.
	m := machine("zones-default-vpc")
	m.Spec.FailureDomain = zones[1]
	if inst := instanceOf(t, create(t, d, class("zones-default", validSpec), m).ProviderID); zoneOf(&inst) != zones[1] {
		t.Errorf("a Machine in %s without subnets got an instance in %s", zones[1], zoneOf(&inst))
	}
	m = machine("zones-other-region")
	m.Spec.FailureDomain = "eu-west-1a"
	_, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: m, MachineClass: class("zones-default", validSpec), Secret: testSecret()})
	if driver.CodeOf(err) != driver.InvalidArgument || !strings.Contains(driver.MessageOf(err), "machine.spec.failureDomain") {
		t.Errorf("a Machine in another region's zone: %v; want InvalidArgument naming machine.spec.failureDomain", err)
	}
	if n := len(clusterInstances(t)); n != 5 {
		t.Errorf("moto has %d instances of the cluster; want 5", n)
	}
}

// TestSpotFallsBackToOnDemand refuses spot launches for capacity: the
// create launches on-demand in the same subnet and tags it so; with spot
// accepted it launches spot.
func TestSpotFallsBackToOnDemand(t *testing.T) {
	subnets := defaultSubnets(t)
	zone := sortedKeys(subnets)[0]
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	c := class("spot", specWith(t, map[string]any{"subnets": subnets, "capacityTypes": []string{"spot", "on-demand"}, "spotMaxPrice": "0.05"}))
	spotFault := p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "InsufficientInstanceCapacity",
		Match: map[string]string{"InstanceMarketOptions.MarketType": "spot"}})
	m := machine("spot-fallback")
	m.Spec.FailureDomain = zone
	resp := create(t, d, c, m)
	inst := instanceOf(t, resp.ProviderID)
	runs := p.Params("RunInstances")
	if p.Hits(spotFault) != 1 || len(runs) != 2 {
		t.Fatalf("%d RunInstances, %d refused for spot; want a spot one refused, then an on-demand one", len(runs), p.Hits(spotFault))
	}
	if runs[0].Get("InstanceMarketOptions.SpotOptions.MaxPrice") != "0.05" || runs[1].Get("InstanceMarketOptions.MarketType") != "" ||
		runs[0].Get("SubnetId") != subnets[zone] || runs[1].Get("SubnetId") != subnets[zone] {
		t.Errorf("the launches were %v then %v; want spot at 0.05 then on-demand, both in %s", runs[0], runs[1], subnets[zone])
	}
	if ct := tagMap(inst.Tags)[TagCapacityType]; ct != CapacityOnDemand || zoneOf(&inst) != zone {
		t.Errorf("the instance is %s in %s; want on-demand in %s", ct, zoneOf(&inst), zone)
	}
	wantCapacityLabel(t, "CreateMachine after the fallback", resp.NodeLabels, CapacityOnDemand)
	st, err := d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: testSecret()})
	if err != nil {
		t.Fatal(err)
	}
	wantCapacityLabel(t, "GetMachineStatus after the fallback", st.NodeLabels, CapacityOnDemand)

	// Both refused: ResourceExhausted, so the manager moves the Machine to
	// another zone; nothing launched.
	p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "InsufficientInstanceCapacity"})
	full := machine("spot-full")
	full.Spec.FailureDomain = zone
	_, err = d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: full, MachineClass: c, Secret: testSecret()})
	if driver.CodeOf(err) != driver.ResourceExhausted {
		t.Errorf("both capacity types refused: %v; want ResourceExhausted", err)
	}

	p.Clear()
	spot := machine("spot-accepted")
	resp = create(t, d, c, spot)
	inst = instanceOf(t, resp.ProviderID)
	wantCapacityLabel(t, "CreateMachine with spot capacity", resp.NodeLabels, CapacitySpot)
	if ct := tagMap(inst.Tags)[TagCapacityType]; ct != CapacitySpot || inst.InstanceLifecycle != types.InstanceLifecycleTypeSpot {
		t.Errorf("with spot capacity the instance is tagged %s, lifecycle %q; want spot", ct, inst.InstanceLifecycle)
	}
	st, err = d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: spot, MachineClass: c, Secret: testSecret()})
	if err != nil || !strings.HasPrefix(st.Progress, "spot instance ") {
		t.Fatalf("GetMachineStatus of the spot instance: %v, %v; want its progress to say spot", st, err)
	}
	wantCapacityLabel(t, "GetMachineStatus of the spot instance", st.NodeLabels, CapacitySpot)
	if n := len(clusterInstances(t)); n != 2 {
		t.Errorf("moto has %d instances of the cluster; want 2", n)
	}
}

// TestOnDemandIsANodeLabel: a class of the default capacity types
// launches on-demand, and CreateMachine and GetMachineStatus say so in
// the capacity-type Node label the manager puts on the Machine and Node.
func TestOnDemandIsANodeLabel(t *testing.T) {
	d := newDriver(t, "")
	c := class("on-demand", specWith(t, nil))
	m := machine("on-demand-label")
	resp := create(t, d, c, m)
	if inst := instanceOf(t, resp.ProviderID); inst.InstanceLifecycle != "" {
		t.Errorf("the instance's lifecycle is %q; want on-demand's none", inst.InstanceLifecycle)
	}
	wantCapacityLabel(t, "CreateMachine", resp.NodeLabels, CapacityOnDemand)
	st, err := d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: testSecret()})
	if err != nil {
		t.Fatal(err)
	}
	wantCapacityLabel(t, "GetMachineStatus", st.NodeLabels, CapacityOnDemand)
}

// wantCapacityLabel checks that a response's Node labels are exactly the
// capacity type ct.
func wantCapacityLabel(t *testing.T, what string, got map[string]string, ct string) {
	t.Helper()
	if len(got) != 1 || got[driver.CapacityTypeLabel] != ct {
		t.Errorf("%s: NodeLabels = %v; want exactly %s=%s", what, got, driver.CapacityTypeLabel, ct)
	}
}

// TestOnlyCapacityRefusalsFallBack checks that a spot launch refused for
// another reason (a bad AMI) is the answer, without an on-demand launch.
func TestOnlyCapacityRefusalsFallBack(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	c := class("spot-bad", specWith(t, map[string]any{"capacityTypes": []string{"spot", "on-demand"}}))
	p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "InvalidAMIID.NotFound", Match: map[string]string{"InstanceMarketOptions.MarketType": "spot"}})
	_, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: machine("spot-bad"), MachineClass: c, Secret: testSecret()})
	if driver.CodeOf(err) != driver.InvalidArgument || p.Calls("RunInstances") != 1 {
		t.Errorf("spot refused for a bad AMI: %v after %d RunInstances; want InvalidArgument after 1", err, p.Calls("RunInstances"))
	}
}
