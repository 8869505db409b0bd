package aws

import (
	"bytes"
	gojson "encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ProviderSpec is an AWS MachineClass's providerSpec. docs/providers/aws.md
// describes every field for users, and how each maps from MCM's and
// Cluster API's AWS providers.
type ProviderSpec struct {
	// Region of the instances, such as eu-west-1.
	Region string `json:"region"`
	// AMI is the image ID, such as ami-0123456789abcdef0.
	AMI string `json:"ami"`
	// InstanceType, such as m6i.large.
	InstanceType string `json:"instanceType"`
	// Subnets maps each zone a Machine may be placed in (its
	// spec.failureDomain) to the subnet its instance is launched in.
	Subnets map[string]string `json:"subnets,omitempty"`
	// SubnetIDs are subnets to launch in, whatever their zones: a Machine
	// placed in a zone gets the first of them in that zone. At most one of
	// Subnets and SubnetIDs; neither: the region's default VPC.
	SubnetIDs []string `json:"subnetIDs,omitempty"`
	// SecurityGroupIDs of the instance's network interface; empty: the
	// VPC's default group.
	SecurityGroupIDs []string `json:"securityGroupIDs,omitempty"`
	// KeyName is an EC2 key pair for SSH.
	KeyName string `json:"keyName,omitempty"`
	// IAMInstanceProfile gives the instance a role.
	IAMInstanceProfile *IAMInstanceProfile `json:"iamInstanceProfile,omitempty"`
	// BlockDevices are the root volume (deviceName "/root") and extra
	// EBS volumes.
	BlockDevices []BlockDevice `json:"blockDevices,omitempty"`
	// Tags are added to the instance and its volumes.
	Tags map[string]string `json:"tags,omitempty"`
	// MetadataOptions configure the instance metadata service; default
	// IMDSv2 required, hop limit 1.
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// PlacementGroup is the name of a placement group to launch in.
	PlacementGroup string `json:"placementGroup,omitempty"`
	// CapacityReservation targets a capacity reservation (on-demand only).
	CapacityReservation *CapacityReservation `json:"capacityReservation,omitempty"`
	// CapacityTypes are tried in order, each in the Machine's zone, until
	// one has capacity: spot and on-demand; default [on-demand].
	CapacityTypes []string `json:"capacityTypes,omitempty"`
	// SpotMaxPrice is the most paid per hour for a spot instance, in USD
	// ("0.05"); empty: the on-demand price.
	SpotMaxPrice string `json:"spotMaxPrice,omitempty"`
	// SourceDestCheck, when set, is applied by InitializeMachine: false
	// for instances that route traffic (NAT, CNI without overlay).
	SourceDestCheck *bool `json:"sourceDestCheck,omitempty"`
}

// IAMInstanceProfile names an instance profile by name or by ARN.
type IAMInstanceProfile struct {
	Name string `json:"name,omitempty"`
	ARN  string `json:"arn,omitempty"`
}

// BlockDevice is one EBS volume of the instance.
type BlockDevice struct {
	// DeviceName is /root for the AMI's root device, else such as /dev/sdf.
	DeviceName string `json:"deviceName"`
	// Size in GiB; default the snapshot's (root) and required for others.
	Size int32 `json:"size,omitempty"`
	// Type is gp2, gp3, io1 or io2; default gp3.
	Type string `json:"type,omitempty"`
	// IOPS: gp3 3000–16000, io1 100–64000, io2 100–256000; required for
	// io1 and io2, not allowed for gp2.
	IOPS int32 `json:"iops,omitempty"`
	// Throughput in MiB/s, gp3 only: 125–1000.
	Throughput int32 `json:"throughput,omitempty"`
	// Encrypted encrypts the volume (with KMSKeyID, or the account's
	// default EBS key).
	Encrypted *bool `json:"encrypted,omitempty"`
	// KMSKeyID is the KMS key (ID, alias or ARN) of an encrypted volume.
	KMSKeyID string `json:"kmsKeyID,omitempty"`
	// DeleteOnTermination deletes the volume with the instance; default true.
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
}

// MetadataOptions configure the instance metadata service (IMDS).
type MetadataOptions struct {
	// HTTPTokens is required (IMDSv2 only, the default) or optional.
	HTTPTokens string `json:"httpTokens,omitempty"`
	// HTTPPutResponseHopLimit is 1–64; default 1, so containers that are
	// not on the host network cannot reach the instance's credentials.
	HTTPPutResponseHopLimit int32 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPEndpoint is enabled (the default) or disabled.
	HTTPEndpoint string `json:"httpEndpoint,omitempty"`
	// InstanceMetadataTags is enabled or disabled (the default): tags in IMDS.
	InstanceMetadataTags string `json:"instanceMetadataTags,omitempty"`
}

// CapacityReservation targets an on-demand capacity reservation.
type CapacityReservation struct {
	// ID of a reservation, such as cr-0123456789abcdef0.
	ID string `json:"id,omitempty"`
	// Preference without an ID: open (use any matching open reservation)
	// or none.
	Preference string `json:"preference,omitempty"`
}

// Capacity types.
const (
	CapacitySpot     = "spot"
	CapacityOnDemand = "on-demand"
)

// RootDevice is the deviceName that stands for the AMI's root device.
const RootDevice = "/root"

// decodeSpec decodes and validates a providerSpec: unknown fields and bad
// values are an InvalidArgument error whose message starts with the path
// of the offending field, such as "providerSpec.blockDevices[1].iops: ...".
func decodeSpec(raw []byte) (*ProviderSpec, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid("providerSpec", "must be set: a JSON object with at least region, ami and instanceType")
	}
	var ps ProviderSpec
	strict, err := sigsjson.UnmarshalStrict(raw, &ps)
	if err != nil {
		var te *gojson.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, invalid("providerSpec."+fieldPath(raw, te.Field, te.Value), "has the wrong type (%s)", te.Value)
		}
		return nil, invalid("providerSpec", "cannot be decoded: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if len(strict) > 0 {
		var fe sigsjson.FieldError
		if errors.As(strict[0], &fe) {
			return nil, invalid("providerSpec."+fe.FieldPath(), "%s", strings.TrimSuffix(fe.Error(), " "+strconv.Quote(fe.FieldPath())))
		}
		return nil, invalid("providerSpec", "%v", strict[0])
	}
	if err := ps.validate(); err != nil {
		return nil, err
	}
	return &ps, nil
}

// capacityTypes are the types to try, in order.
func (ps *ProviderSpec) capacityTypes() []string {
	if len(ps.CapacityTypes) == 0 {
		return []string{CapacityOnDemand}
	}
	return ps.CapacityTypes
}

func invalid(path, format string, args ...any) error {
	return driver.Errorf(driver.InvalidArgument, "%s: %s", path, fmt.Sprintf(format, args...))
}

// fieldPath adds the index of the list element to encoding/json's path of
// a wrongly typed field ("blockDevices.size" becomes "blockDevices[1].size"):
// the first element whose field has a value of that JSON kind.
func fieldPath(raw []byte, path, kind string) string {
	var v any
	if gojson.Unmarshal(raw, &v) != nil {
		return path
	}
	parts := strings.Split(path, ".")
	out := ""
	for i, p := range parts {
		m, ok := v.(map[string]any)
		if !ok {
			return path
		}
		if out != "" {
			out += "."
		}
		out += p
		v = m[p]
		list, ok := v.([]any)
		if !ok || i == len(parts)-1 {
			continue
		}
		for j, el := range list {
			if has(el, parts[i+1:], kind) {
				out += "[" + strconv.Itoa(j) + "]"
				v = el
				break
			}
		}
	}
	return out
}

// has reports whether v has, at path, a value of the JSON kind
// encoding/json names ("string", "number", "bool", "object", "array").
func has(v any, path []string, kind string) bool {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[p]; !ok {
			return false
		}
	}
	var k string
	switch v.(type) {
	case string:
		k = "string"
	case float64:
		k = "number"
	case bool:
		k = "bool"
	case map[string]any:
		k = "object"
	case []any:
		k = "array"
	}
	return strings.HasPrefix(kind, k) && k != ""
}
