package aws

import (
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// base is a valid spec the invalid ones change one field of.
const base = `"region":"us-east-1","ami":"ami-12c6146b","instanceType":"t3.micro"`

// invalidSpecs are providerSpecs refused each for one field, with the
// path their message must start with.
var invalidSpecs = []struct{ spec, path string }{
	{``, "providerSpec: must be set"},
	{`[]`, "providerSpec: cannot be decoded"},
	{`{` + base + `,"colour":"red"}`, `providerSpec.colour: unknown field`},
	{`{` + base + `,"tags":"x"}`, "providerSpec.tags: has the wrong type"},
	{`{"ami":"ami-12c6146b","instanceType":"t3.micro"}`, "providerSpec.region"},
	{`{"region":"Europe","ami":"ami-12c6146b","instanceType":"t3.micro"}`, "providerSpec.region"},
	{`{"region":"us-east-1","instanceType":"t3.micro"}`, "providerSpec.ami"},
	{`{"region":"us-east-1","ami":"ubuntu","instanceType":"t3.micro"}`, "providerSpec.ami"},
	{`{"region":"us-east-1","ami":"ami-12c6146b"}`, "providerSpec.instanceType"},
	{`{"region":"us-east-1","ami":"ami-12c6146b","instanceType":"large"}`, "providerSpec.instanceType"},
	{`{` + base + `,"subnets":{"eu-west-1a":"subnet-0123abcd"}}`, `providerSpec.subnets["eu-west-1a"]: "eu-west-1a" is not a zone`},
	{`{` + base + `,"subnets":{"us-east-1a":"sn-1"}}`, `providerSpec.subnets["us-east-1a"]: "sn-1" is not a subnet ID`},
	{`{` + base + `,"subnets":{"us-east-1a":"subnet-0123abcd"},"subnetIDs":["subnet-0123abcd"]}`, "providerSpec.subnetIDs: set subnets"},
	{`{` + base + `,"subnetIDs":["subnet-0123abcd","subnet-xyz"]}`, "providerSpec.subnetIDs[1]"},
	{`{` + base + `,"subnetIDs":["subnet-0123abcd","subnet-0123abcd"]}`, "providerSpec.subnetIDs[1]: subnet-0123abcd is listed twice"},
	{`{` + base + `,"securityGroupIDs":["sg-0123abcd","default"]}`, "providerSpec.securityGroupIDs[1]"},
	{`{` + base + `,"keyName":"a\nb"}`, "providerSpec.keyName"},
	{`{` + base + `,"iamInstanceProfile":{}}`, "providerSpec.iamInstanceProfile: set name or arn"},
	{`{` + base + `,"iamInstanceProfile":{"arn":"arn:aws:iam::1:role/x"}}`, "providerSpec.iamInstanceProfile.arn"},
	{`{` + base + `,"iamInstanceProfile":{"name":"a b"}}`, "providerSpec.iamInstanceProfile.name"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/dev/hda","size":8}]}`, "providerSpec.blockDevices[0].deviceName"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/dev/sdf","size":8},{"deviceName":"/dev/sdf","size":8}]}`, "providerSpec.blockDevices[1].deviceName"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","type":"st1"}]}`, "providerSpec.blockDevices[0].type"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/dev/sdf"}]}`, "providerSpec.blockDevices[0].size: required"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","size":20000}]}`, "providerSpec.blockDevices[0].size"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root"},{"deviceName":"/dev/sdf","size":100,"type":"io2"}]}`, "providerSpec.blockDevices[1].iops: required"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root"},{"deviceName":"/dev/sdf","size":100,"type":"io1","iops":99}]}`, "providerSpec.blockDevices[1].iops"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","type":"gp2","iops":3000}]}`, "providerSpec.blockDevices[0].iops: not allowed"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","iops":20000}]}`, "providerSpec.blockDevices[0].iops"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","type":"io1","iops":100,"throughput":200}]}`, "providerSpec.blockDevices[0].throughput: only gp3"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","throughput":5000}]}`, "providerSpec.blockDevices[0].throughput"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","kmsKeyID":"alias/x"}]}`, "providerSpec.blockDevices[0].kmsKeyID: needs encrypted"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","encrypted":true,"kmsKeyID":"a b"}]}`, "providerSpec.blockDevices[0].kmsKeyID"},
	{`{` + base + `,"blockDevices":[{"deviceName":"/root","deleteOnTermination":"yes"}]}`, "providerSpec.blockDevices[0].deleteOnTermination: has the wrong type"},
	{`{` + base + `,"tags":{"Name":"x"}}`, `providerSpec.tags["Name"]: reserved`},
	{`{` + base + `,"tags":{"millwright.dev/machine-uid":"x"}}`, `providerSpec.tags["millwright.dev/machine-uid"]: reserved`},
	{`{` + base + `,"tags":{"aws:cloudformation":"x"}}`, `providerSpec.tags["aws:cloudformation"]: reserved`},
	{`{` + base + `,"tags":{"k":"` + strings.Repeat("v", 257) + `"}}`, `providerSpec.tags["k"]`},
	{`{` + base + `,"metadataOptions":{"httpTokens":"maybe"}}`, "providerSpec.metadataOptions.httpTokens"},
	{`{` + base + `,"metadataOptions":{"httpPutResponseHopLimit":65}}`, "providerSpec.metadataOptions.httpPutResponseHopLimit"},
	{`{` + base + `,"metadataOptions":{"httpEndpoint":"on"}}`, "providerSpec.metadataOptions.httpEndpoint"},
	{`{` + base + `,"metadataOptions":{"instanceMetadataTags":"on"}}`, "providerSpec.metadataOptions.instanceMetadataTags"},
	{`{` + base + `,"placementGroup":"my group"}`, "providerSpec.placementGroup"},
	{`{` + base + `,"capacityReservation":{}}`, "providerSpec.capacityReservation: set id or preference"},
	{`{` + base + `,"capacityReservation":{"id":"cr-1"}}`, "providerSpec.capacityReservation.id"},
	{`{` + base + `,"capacityReservation":{"preference":"always"}}`, "providerSpec.capacityReservation.preference"},
	{`{` + base + `,"capacityReservation":{"id":"cr-0123abcd","preference":"open"}}`, "providerSpec.capacityReservation.preference: set id or preference, not both"},
	{`{` + base + `,"capacityTypes":["spot"],"capacityReservation":{"id":"cr-0123abcd"}}`, "providerSpec.capacityReservation: capacity reservations are on-demand"},
	{`{` + base + `,"capacityTypes":["reserved"]}`, "providerSpec.capacityTypes[0]"},
	{`{` + base + `,"capacityTypes":["spot","spot"]}`, "providerSpec.capacityTypes[1]: spot is listed twice"},
	{`{` + base + `,"spotMaxPrice":"0.05"}`, "providerSpec.spotMaxPrice: needs spot"},
	{`{` + base + `,"capacityTypes":["spot"],"spotMaxPrice":"cheap"}`, "providerSpec.spotMaxPrice"},
	{`{` + base + `,"capacityTypes":["spot"],"spotMaxPrice":"0"}`, "providerSpec.spotMaxPrice"},
	{`{` + base + `,"sourceDestCheck":"no"}`, "providerSpec.sourceDestCheck: has the wrong type"},
}

// TestInvalidSpecsAreRefusedBeforeEC2 creates with each invalid spec:
// InvalidArgument whose message starts with the field's path, and not one
// EC2 call made (counted by the proxy), so nothing can have been created.
func TestInvalidSpecsAreRefusedBeforeEC2(t *testing.T) {
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	for i, tc := range invalidSpecs {
		_, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: machine("invalid"), MachineClass: class("invalid", tc.spec), Secret: testSecret()})
		if driver.CodeOf(err) != driver.InvalidArgument || !strings.HasPrefix(driver.MessageOf(err), tc.path) {
			t.Errorf("spec %d %s: %v; want InvalidArgument starting %q", i, tc.spec, err, tc.path)
		}
	}
	for _, action := range []string{"DescribeInstances", "RunInstances", "DescribeImages", "DescribeSubnets"} {
		if n := p.Calls(action); n != 0 {
			t.Errorf("%d %s calls for invalid specs", n, action)
		}
	}
}

// TestValidSpecsLaunch launches with a spec that sets every field, so a
// check that refused a valid value would show; the block devices and
// market options reach EC2 as given.
func TestValidSpecsLaunch(t *testing.T) {
	subnets := defaultSubnets(t)
	p := motoserver.NewProxy(t, moto.URL)
	d := newDriver(t, p.URL)
	g := newGroup(t, "valid")
	spec := specWith(t, map[string]any{
		"subnets": subnets, "securityGroupIDs": []string{g}, "keyName": "",
		"blockDevices": []map[string]any{
			{"deviceName": "/root", "size": 30, "type": "gp3", "iops": 4000, "throughput": 250, "encrypted": true, "kmsKeyID": "alias/ebs"},
			{"deviceName": "/dev/sdf", "size": 100, "type": "gp3", "iops": 5000, "deleteOnTermination": false},
		},
		"tags":            map[string]string{"team": "infra"},
		"metadataOptions": map[string]any{"httpTokens": "required", "httpPutResponseHopLimit": 2},
		"capacityTypes":   []string{"on-demand", "spot"}, "spotMaxPrice": "0.1",
		"capacityReservation": map[string]any{"preference": "none"},
	})
	create(t, d, class("valid", spec), machine("valid-1"))
	// moto drops RunInstances' Iops and then refuses io1 and io2 volumes:
	// an io2 launch is checked as EC2 receives it, refused by the proxy.
	p.Fail(&motoserver.Fault{Action: "RunInstances", Code: "InvalidParameterValue", Match: map[string]string{"BlockDeviceMapping.1.Ebs.VolumeType": "io2"}})
	io2 := specWith(t, map[string]any{"blockDevices": []map[string]any{{"deviceName": "/dev/sdf", "size": 100, "type": "io2", "iops": 64000}}})
	if _, err := d.CreateMachine(ctxT(t), &driver.CreateMachineRequest{Machine: machine("valid-io2"), MachineClass: class("valid-io2", io2), Secret: testSecret()}); driver.CodeOf(err) != driver.InvalidArgument {
		t.Fatalf("the io2 launch: %v; want the proxy's refusal", err)
	}
	if io2run := p.Params("RunInstances")[1]; io2run.Get("BlockDeviceMapping.1.Ebs.Iops") != "64000" || io2run.Get("BlockDeviceMapping.1.Ebs.VolumeSize") != "100" {
		t.Errorf("the io2 launch asked for %v", io2run)
	}
	run := p.Params("RunInstances")[0]
	for k, v := range map[string]string{
		"BlockDeviceMapping.1.DeviceName": "/dev/sda1", "BlockDeviceMapping.1.Ebs.Iops": "4000", "BlockDeviceMapping.1.Ebs.Throughput": "250",
		"BlockDeviceMapping.1.Ebs.KmsKeyId": "alias/ebs", "BlockDeviceMapping.2.Ebs.Iops": "5000", "BlockDeviceMapping.2.Ebs.DeleteOnTermination": "false",
		"MetadataOptions.HttpPutResponseHopLimit": "2", "CapacityReservationSpecification.CapacityReservationPreference": "none",
		"SecurityGroupId.1": g,
	} {
		if got := run.Get(k); got != v {
			t.Errorf("RunInstances %s = %q; want %q", k, got, v)
		}
	}
}
