package aws

import (
	"context"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// newGroup makes a security group in moto's default VPC.
func newGroup(t *testing.T, name string) string {
	t.Helper()
	out, err := rawEC2().CreateSecurityGroup(context.Background(), &ec2.CreateSecurityGroupInput{GroupName: awssdk.String(clusterOf(t) + "-" + name), Description: awssdk.String("test")})
	if err != nil {
		t.Fatal(err)
	}
	return awssdk.ToString(out.GroupId)
}

// TestUpdateAppliesTagsAndGroups updates an instance to a class with
// other tags and security groups, in place; then to classes with another
// AMI and instance type, which are FailedPrecondition with nothing changed.
func TestUpdateAppliesTagsAndGroups(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	g1, g2 := newGroup(t, "a"), newGroup(t, "b")
	old := class("update", specWith(t, map[string]any{"tags": map[string]string{"team": "a", "gone": "x"}, "securityGroupIDs": []string{g1}}))
	m := machine("update-1")
	resp := create(t, d, old, m)
	m.Spec.ProviderID = resp.ProviderID
	update := func(c string) error {
		_, err := d.UpdateMachine(ctxT(t), &driver.UpdateMachineRequest{Machine: m, ProviderID: resp.ProviderID, MachineClass: class("update-new", c),
			Secret: testSecret(), LastAppliedProviderSpec: runtime.RawExtension{Raw: old.Spec.ProviderSpec.Raw}})
		return err
	}
	for _, tc := range []struct{ field, spec string }{
		{"ami", specWith(t, map[string]any{"ami": "ami-1234abcd", "tags": map[string]string{"team": "changed"}})},
		{"instanceType", specWith(t, map[string]any{"instanceType": "m5.large", "tags": map[string]string{"team": "changed"}})},
		{"region", `{"region":"eu-west-1","ami":"ami-12c6146b","instanceType":"t3.micro"}`},
		{"subnets", specWith(t, map[string]any{"subnetIDs": []string{"subnet-0123abcd"}})},
		{"blockDevices", specWith(t, map[string]any{"blockDevices": []map[string]any{{"deviceName": "/dev/sdf", "size": 10}}})},
	} {
		p.ResetCounts()
		err := update(tc.spec)
		if driver.CodeOf(err) != driver.FailedPrecondition || !strings.Contains(driver.MessageOf(err), tc.field) {
			t.Errorf("an update changing %s: %v; want FailedPrecondition naming it", tc.field, err)
		}
		if n := p.Calls("CreateTags") + p.Calls("DeleteTags") + p.Calls("ModifyInstanceAttribute"); n != 0 {
			t.Errorf("an update changing %s made %d changes before refusing", tc.field, n)
		}
	}
	if err := update(specWith(t, map[string]any{"tags": map[string]string{"team": "b", "new": "y"}, "securityGroupIDs": []string{g2}})); err != nil {
		t.Fatalf("UpdateMachine: %v", err)
	}
	inst := instanceOf(t, resp.ProviderID)
	tags := tagMap(inst.Tags)
	if tags["team"] != "b" || tags["new"] != "y" || tags["gone"] != "" || tags[TagClass] != "update-new" || tags[TagMachineUID] != string(m.UID) {
		t.Errorf("tags after the update: %v; want team=b, new=y, no gone, class update-new, the UID kept", tags)
	}
	var groups []string
	for _, g := range inst.SecurityGroups {
		groups = append(groups, awssdk.ToString(g.GroupId))
	}
	if !slices.Equal(groups, []string{g2}) {
		t.Errorf("security groups after the update: %v; want [%s]", groups, g2)
	}
	list, err := d.ListMachines(ctxT(t), &driver.ListMachinesRequest{MachineClass: class("update-new", validSpec), Secret: testSecret()})
	if err != nil || len(list.VMs) != 1 || list.VMs[0].MachineUID != string(m.UID) {
		t.Errorf("the new class lists %v, %v; want the updated instance", list, err)
	}
}

// TestInitializeSetsSourceDestCheck checks a class with sourceDestCheck
// false: status says Uninitialized until InitializeMachine has set it.
func TestInitializeSetsSourceDestCheck(t *testing.T) {
	d := newDriver(t, "")
	c := class("init", specWith(t, map[string]any{"sourceDestCheck": false}))
	m := machine("init-1")
	create(t, d, c, m)
	status := func() error {
		_, err := d.GetMachineStatus(ctxT(t), &driver.GetMachineStatusRequest{Machine: m, MachineClass: c, Secret: testSecret()})
		return err
	}
	if err := status(); driver.CodeOf(err) != driver.Uninitialized {
		t.Fatalf("GetMachineStatus before InitializeMachine: %v; want Uninitialized", err)
	}
	var err error
	for range 20 { // pending in moto until described again
		if _, err = d.InitializeMachine(ctxT(t), &driver.InitializeMachineRequest{Machine: m, MachineClass: c, Secret: testSecret()}); driver.CodeOf(err) != driver.Uninitialized {
			break
		}
	}
	if err != nil {
		t.Fatalf("InitializeMachine: %v", err)
	}
	if err := status(); err != nil {
		t.Fatalf("GetMachineStatus after InitializeMachine: %v; want OK", err)
	}
	plain := class("init-plain", validSpec)
	pm := machine("init-plain")
	create(t, d, plain, pm)
	if _, err := d.InitializeMachine(ctxT(t), &driver.InitializeMachineRequest{Machine: pm, MachineClass: plain, Secret: testSecret()}); err != nil {
		t.Errorf("InitializeMachine of a class with nothing to initialize: %v; want OK", err)
	}
}

// TestGetVolumeIDs maps EBS CSI volumes and in-tree EBS volumes in each of
// their ID forms, and leaves other volumes out.
func TestGetVolumeIDs(t *testing.T) {
	resp, err := newDriver(t, "").GetVolumeIDs(ctxT(t), &driver.GetVolumeIDsRequest{PVSpecs: pvSpecs()})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vol-0aaa", "vol-0bbb", "vol-0ccc", "vol-0ddd"}
	if !slices.Equal(resp.VolumeIDs, want) {
		t.Errorf("GetVolumeIDs: %v; want %v", resp.VolumeIDs, want)
	}
}

func pvSpecs() []*corev1.PersistentVolumeSpec {
	csi := func(drv, handle string) *corev1.PersistentVolumeSpec {
		return &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: handle}}}
	}
	ebs := func(id string) *corev1.PersistentVolumeSpec {
		return &corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: id}}}
	}
	return []*corev1.PersistentVolumeSpec{
		csi(EBSCSIDriver, "vol-0aaa"),
		csi("efs.csi.aws.com", "fs-0123"),
		ebs("aws://us-east-1a/vol-0bbb"),
		ebs("vol-0ccc"),
		nil,
		ebs("aws:///vol-0ddd"),
		{PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}},
	}
}
