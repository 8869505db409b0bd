package aws

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The forms of EC2 identifiers, as EC2 documents them: a prefix and 8 or
// 17 hexadecimal digits.
var (
	regionRE       = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	amiRE          = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)
	subnetRE       = regexp.MustCompile(`^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`)
	groupRE        = regexp.MustCompile(`^sg-([0-9a-f]{8}|[0-9a-f]{17})$`)
	reservationRE  = regexp.MustCompile(`^cr-([0-9a-f]{8}|[0-9a-f]{17})$`)
	instanceTypeRE = regexp.MustCompile(`^[a-z][a-z0-9-]*\.[a-z0-9-]+$`)
	deviceRE       = regexp.MustCompile(`^/dev/(sd|xvd)[b-z][a-z]?$`)
	profileARNRE   = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:instance-profile/[\w+=,.@/-]+$`)
	profileNameRE  = regexp.MustCompile(`^[\w+=,.@-]{1,128}$`)
	priceRE        = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)
)

// Limits EC2 documents for EBS volumes (docs/providers/aws.md,
// "blockDevices").
type volumeLimits struct {
	minSize, maxSize int32
	minIOPS, maxIOPS int32 // 0: iops not allowed
	iopsRequired     bool
	throughput       bool
}

var volumeTypes = map[string]volumeLimits{
	"gp2": {minSize: 1, maxSize: 16384},
	"gp3": {minSize: 1, maxSize: 16384, minIOPS: 3000, maxIOPS: 16000, throughput: true},
	"io1": {minSize: 4, maxSize: 16384, minIOPS: 100, maxIOPS: 64000, iopsRequired: true},
	"io2": {minSize: 4, maxSize: 65536, minIOPS: 100, maxIOPS: 256000, iopsRequired: true},
}

const (
	minThroughput = 125
	maxThroughput = 1000
	// maxUserTags leaves room for the driver's own tags within EC2's 50.
	maxUserTags = 40
)

// validate checks every field; the first problem is returned, naming its
// field.
func (ps *ProviderSpec) validate() error {
	if !regionRE.MatchString(ps.Region) {
		return invalid("providerSpec.region", "%q is not an AWS region such as eu-west-1", ps.Region)
	}
	if !amiRE.MatchString(ps.AMI) {
		return invalid("providerSpec.ami", "%q is not an AMI ID such as ami-0123456789abcdef0", ps.AMI)
	}
	if !instanceTypeRE.MatchString(ps.InstanceType) {
		return invalid("providerSpec.instanceType", "%q is not an instance type such as m6i.large", ps.InstanceType)
	}
	if err := ps.validateSubnets(); err != nil {
		return err
	}
	if err := checkIDs("providerSpec.securityGroupIDs", ps.SecurityGroupIDs, groupRE, "sg-0123456789abcdef0"); err != nil {
		return err
	}
	if len(ps.KeyName) > 255 || strings.ContainsFunc(ps.KeyName, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return invalid("providerSpec.keyName", "%q is not a key pair name (printable ASCII, at most 255 characters)", ps.KeyName)
	}
	if err := ps.IAMInstanceProfile.validate(); err != nil {
		return err
	}
	if err := ps.validateBlockDevices(); err != nil {
		return err
	}
	if err := validateTags(ps.Tags); err != nil {
		return err
	}
	if err := ps.MetadataOptions.validate(); err != nil {
		return err
	}
	if len(ps.PlacementGroup) > 255 || strings.ContainsAny(ps.PlacementGroup, " \t\n") {
		return invalid("providerSpec.placementGroup", "%q is not a placement group name (at most 255 characters, no spaces)", ps.PlacementGroup)
	}
	return ps.validateCapacity()
}

func (ps *ProviderSpec) validateSubnets() error {
	if len(ps.Subnets) > 0 && len(ps.SubnetIDs) > 0 {
		return invalid("providerSpec.subnetIDs", "set subnets (zone to subnet) or subnetIDs, not both")
	}
	for _, zone := range sortedKeys(ps.Subnets) {
		field := "providerSpec.subnets[" + strconv.Quote(zone) + "]"
		if !strings.HasPrefix(zone, ps.Region) || len(zone) == len(ps.Region) {
			return invalid(field, "%q is not a zone of region %s (such as %sa)", zone, ps.Region, ps.Region)
		}
		if !subnetRE.MatchString(ps.Subnets[zone]) {
			return invalid(field, "%q is not a subnet ID such as subnet-0123456789abcdef0", ps.Subnets[zone])
		}
	}
	return checkIDs("providerSpec.subnetIDs", ps.SubnetIDs, subnetRE, "subnet-0123456789abcdef0")
}

// checkIDs checks a list of EC2 IDs: each of the form, none twice.
func checkIDs(field string, ids []string, re *regexp.Regexp, example string) error {
	for i, id := range ids {
		f := fmt.Sprintf("%s[%d]", field, i)
		if !re.MatchString(id) {
			return invalid(f, "%q is not an ID such as %s", id, example)
		}
		if slices.Index(ids, id) < i {
			return invalid(f, "%s is listed twice", id)
		}
	}
	return nil
}

func (p *IAMInstanceProfile) validate() error {
	switch {
	case p == nil:
		return nil
	case (p.Name == "") == (p.ARN == ""):
		return invalid("providerSpec.iamInstanceProfile", "set name or arn, one of them")
	case p.ARN != "" && !profileARNRE.MatchString(p.ARN):
		return invalid("providerSpec.iamInstanceProfile.arn", "%q is not an instance profile ARN (arn:aws:iam::ACCOUNT:instance-profile/NAME)", p.ARN)
	case p.Name != "" && !profileNameRE.MatchString(p.Name):
		return invalid("providerSpec.iamInstanceProfile.name", "%q is not an instance profile name (1–128 of letters, digits and +=,.@_-)", p.Name)
	}
	return nil
}

func (ps *ProviderSpec) validateBlockDevices() error {
	for i, b := range ps.BlockDevices {
		field := fmt.Sprintf("providerSpec.blockDevices[%d]", i)
		if b.DeviceName != RootDevice && !deviceRE.MatchString(b.DeviceName) {
			return invalid(field+".deviceName", "%q: want %s for the root volume or a device such as /dev/sdf or /dev/xvdf", b.DeviceName, RootDevice)
		}
		for j := range i {
			if ps.BlockDevices[j].DeviceName == b.DeviceName {
				return invalid(field+".deviceName", "%s is already blockDevices[%d]", b.DeviceName, j)
			}
		}
		if err := b.validate(field); err != nil {
			return err
		}
	}
	return nil
}

func (b BlockDevice) validate(field string) error {
	typ := b.volumeType()
	lim, ok := volumeTypes[typ]
	if !ok {
		return invalid(field+".type", "%q: want gp2, gp3, io1 or io2", b.Type)
	}
	switch {
	case b.Size == 0 && b.DeviceName != RootDevice:
		return invalid(field+".size", "required for a volume other than the root (in GiB)")
	case b.Size != 0 && (b.Size < lim.minSize || b.Size > lim.maxSize):
		return invalid(field+".size", "%d GiB: a %s volume has %d to %d", b.Size, typ, lim.minSize, lim.maxSize)
	}
	switch {
	case b.IOPS == 0 && lim.iopsRequired:
		return invalid(field+".iops", "required for %s (%d to %d)", typ, lim.minIOPS, lim.maxIOPS)
	case b.IOPS != 0 && lim.maxIOPS == 0:
		return invalid(field+".iops", "not allowed for %s: its IOPS follow its size", typ)
	case b.IOPS != 0 && (b.IOPS < lim.minIOPS || b.IOPS > lim.maxIOPS):
		return invalid(field+".iops", "%d: %s has %d to %d", b.IOPS, typ, lim.minIOPS, lim.maxIOPS)
	}
	switch {
	case b.Throughput != 0 && !lim.throughput:
		return invalid(field+".throughput", "only gp3 volumes have a throughput setting, not %s", typ)
	case b.Throughput != 0 && (b.Throughput < minThroughput || b.Throughput > maxThroughput):
		return invalid(field+".throughput", "%d MiB/s: gp3 has %d to %d", b.Throughput, minThroughput, maxThroughput)
	}
	if b.KMSKeyID != "" && (b.Encrypted == nil || !*b.Encrypted) {
		return invalid(field+".kmsKeyID", "needs encrypted: true")
	}
	if b.KMSKeyID != "" && strings.ContainsAny(b.KMSKeyID, " \t\n") {
		return invalid(field+".kmsKeyID", "%q is not a KMS key ID, alias or ARN", b.KMSKeyID)
	}
	return nil
}

func (b BlockDevice) volumeType() string {
	if b.Type == "" {
		return "gp3"
	}
	return b.Type
}

func validateTags(tags map[string]string) error {
	if len(tags) > maxUserTags {
		return invalid("providerSpec.tags", "%d tags: at most %d (EC2 allows 50 per resource, the driver sets its own)", len(tags), maxUserTags)
	}
	for _, k := range sortedKeys(tags) {
		field := "providerSpec.tags[" + strconv.Quote(k) + "]"
		switch {
		case k == "" || len(k) > 128:
			return invalid(field, "a tag key has 1 to 128 characters")
		case reservedTag(k):
			return invalid(field, "reserved: the driver sets %s, %s*, %s* and AWS aws:*", TagName, clusterTagPrefix, tagPrefix)
		case len(tags[k]) > 256:
			return invalid(field, "a tag value has at most 256 characters")
		}
	}
	return nil
}

func (m *MetadataOptions) validate() error {
	if m == nil {
		return nil
	}
	if m.HTTPTokens != "" && m.HTTPTokens != "required" && m.HTTPTokens != "optional" {
		return invalid("providerSpec.metadataOptions.httpTokens", "%q: want required (IMDSv2) or optional", m.HTTPTokens)
	}
	if m.HTTPPutResponseHopLimit != 0 && (m.HTTPPutResponseHopLimit < 1 || m.HTTPPutResponseHopLimit > 64) {
		return invalid("providerSpec.metadataOptions.httpPutResponseHopLimit", "%d: want 1 to 64", m.HTTPPutResponseHopLimit)
	}
	for _, f := range []struct{ name, value string }{{"httpEndpoint", m.HTTPEndpoint}, {"instanceMetadataTags", m.InstanceMetadataTags}} {
		if f.value != "" && f.value != "enabled" && f.value != "disabled" {
			return invalid("providerSpec.metadataOptions."+f.name, "%q: want enabled or disabled", f.value)
		}
	}
	return nil
}

func (ps *ProviderSpec) validateCapacity() error {
	for i, ct := range ps.CapacityTypes {
		field := fmt.Sprintf("providerSpec.capacityTypes[%d]", i)
		if ct != CapacitySpot && ct != CapacityOnDemand {
			return invalid(field, "%q: want %s or %s", ct, CapacitySpot, CapacityOnDemand)
		}
		if slices.Index(ps.CapacityTypes, ct) < i {
			return invalid(field, "%s is listed twice", ct)
		}
	}
	spot := slices.Contains(ps.capacityTypes(), CapacitySpot)
	if ps.SpotMaxPrice != "" {
		if !spot {
			return invalid("providerSpec.spotMaxPrice", "needs %s in capacityTypes", CapacitySpot)
		}
		if v, err := strconv.ParseFloat(ps.SpotMaxPrice, 64); !priceRE.MatchString(ps.SpotMaxPrice) || err != nil || v <= 0 {
			return invalid("providerSpec.spotMaxPrice", "%q is not a positive price in USD per hour such as \"0.05\"", ps.SpotMaxPrice)
		}
	}
	cr := ps.CapacityReservation
	if cr == nil {
		return nil
	}
	switch {
	case cr.ID != "" && cr.Preference != "":
		return invalid("providerSpec.capacityReservation.preference", "set id or preference, not both")
	case cr.ID == "" && cr.Preference == "":
		return invalid("providerSpec.capacityReservation", "set id or preference")
	case cr.ID != "" && !reservationRE.MatchString(cr.ID):
		return invalid("providerSpec.capacityReservation.id", "%q is not a capacity reservation ID such as cr-0123456789abcdef0", cr.ID)
	case cr.Preference != "" && cr.Preference != "open" && cr.Preference != "none":
		return invalid("providerSpec.capacityReservation.preference", "%q: want open or none", cr.Preference)
	case spot && (cr.ID != "" || cr.Preference == "open"):
		return invalid("providerSpec.capacityReservation", "capacity reservations are on-demand capacity: remove %s from capacityTypes", CapacitySpot)
	}
	return nil
}
