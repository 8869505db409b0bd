package sim

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ProviderSpec is the sim's providerSpec: the JSON object a MachineClass
// carries in spec.providerSpec. The package documentation describes every
// field; DecodeProviderSpec decodes and validates one.
type ProviderSpec struct {
	// Region of the VMs, in their providerID and topology label. Required.
	Region string `json:"region"`
	// Zones the VMs are spread over. Required, at least one.
	Zones []string `json:"zones"`
	// InstanceType is one of the sim's instance types (see InstanceTypes).
	// Default sim.small.
	InstanceType string `json:"instanceType,omitempty"`
	// Image is the VM image the VMs boot from (free-form, for example
	// "ubuntu-24.04"). A running VM's image cannot be changed: UpdateMachine
	// refuses it with FailedPrecondition, and the Machine is replaced.
	Image string `json:"image,omitempty"`
	// Tags are put on the VMs; they are hot-updatable through UpdateMachine.
	Tags map[string]string `json:"tags,omitempty"`
	// BootDelay is how long a VM takes from creation until its Node registers.
	BootDelay Duration `json:"bootDelay,omitempty"`
	// BootJitter adds up to this much, deterministically per VM, to BootDelay.
	BootJitter Duration `json:"bootJitter,omitempty"`
	// RequireInitialization makes VMs start uninitialized, as VMs needing
	// post-create network setup do: GetMachineStatus answers Uninitialized
	// until InitializeMachine ran. Without it VMs are born initialized and
	// InitializeMachine has nothing to do.
	RequireInitialization bool `json:"requireInitialization,omitempty"`
	// CapacityType is how the class's VMs are bought, "spot" or
	// "on-demand", as a cloud's would be; empty for neither. The sim
	// reports it in CreateMachine's and GetMachineStatus's NodeLabels
	// (driver.CapacityTypeLabel), so the manager's path from a driver's
	// labels to the Machine and its Node runs against the sim too.
	CapacityType string `json:"capacityType,omitempty"`
	// Faults injects failures, latency and misbehaving VMs.
	Faults *Faults `json:"faults,omitempty"`
}

// Duration is a Go duration string such as "250ms" or "2m".
type Duration string

// Faults configures the faults the sim injects for VMs of a class.
type Faults struct {
	// Seed of the deterministic random source behind probabilities and
	// jitter: the same seed, machine names and call order give the same faults.
	Seed int64 `json:"seed,omitempty"`
	// Create, Initialize, Delete, GetStatus, List and Update inject latency
	// and errors into the driver method of that name.
	Create     *OperationFault `json:"create,omitempty"`
	Initialize *OperationFault `json:"initialize,omitempty"`
	Delete     *OperationFault `json:"delete,omitempty"`
	GetStatus  *OperationFault `json:"getStatus,omitempty"`
	List       *OperationFault `json:"list,omitempty"`
	Update     *OperationFault `json:"update,omitempty"`
	// BootFailure picks VMs that never join: they exist and run, but their
	// Node never registers.
	BootFailure *Selection `json:"bootFailure,omitempty"`
	// NodeNotReady picks VMs whose Node goes NotReady some time after it
	// registered, and stays so.
	NodeNotReady *NodeNotReadyFault `json:"nodeNotReady,omitempty"`
	// OutOfCapacityZones are zones where no VM can be created: a create
	// placed there fails with ResourceExhausted.
	OutOfCapacityZones []string `json:"outOfCapacityZones,omitempty"`
}

// OperationFault injects latency and errors into one driver method.
type OperationFault struct {
	// Latency every call takes before it does anything.
	Latency Duration `json:"latency,omitempty"`
	// Jitter adds up to this much, deterministically per call, to Latency.
	Jitter Duration `json:"jitter,omitempty"`
	// Code is the machine error code name to fail with (driver.ParseCode),
	// for example "Unavailable". With neither Count nor Probability every
	// call fails.
	Code string `json:"code,omitempty"`
	// Count fails the first Count calls per machine (per class for List).
	Count *int `json:"count,omitempty"`
	// Probability fails each call with this probability, in [0, 1].
	Probability *float64 `json:"probability,omitempty"`
	// Message replaces the default error message.
	Message string `json:"message,omitempty"`
	// AfterEffect makes a failing call take effect in the cloud before it
	// returns the error, as a call whose response was lost does: a create
	// makes the VM, a delete deletes it.
	AfterEffect bool `json:"afterEffect,omitempty"`
}

// Selection picks VMs of a class: the first Count created, or each with
// Probability. With neither, every VM.
type Selection struct {
	Count       *int     `json:"count,omitempty"`
	Probability *float64 `json:"probability,omitempty"`
}

// NodeNotReadyFault makes the Nodes of the selected VMs go NotReady After
// they registered.
type NodeNotReadyFault struct {
	After       Duration `json:"after"`
	Count       *int     `json:"count,omitempty"`
	Probability *float64 `json:"probability,omitempty"`
}

// Limits of the values a providerSpec may hold; beyond them a value is a
// mistake, not a simulation.
const (
	maxDuration = time.Hour
	maxImage    = 253
	maxTags     = 64
	maxTagKey   = 128
	maxTagValue = 256
	maxCount    = 1 << 20
)

// classSpec is a validated providerSpec in the form the sim works with.
type classSpec struct {
	region       string
	zones        []string
	instanceType InstanceType
	image        string
	tags         map[string]string
	bootDelay    time.Duration
	bootJitter   time.Duration
	requireInit  bool
	capacityType string
	faults       faultSpec
}

type faultSpec struct {
	seed         int64
	ops          map[op]*opFault
	bootFailure  *selection
	notReady     *selection
	notReadyIn   time.Duration
	fullZones    map[string]bool
	hasAnyFaults bool
}

type opFault struct {
	latency     time.Duration
	jitter      time.Duration
	fail        bool
	code        driver.Code
	sel         selection
	message     string
	afterEffect bool
}

// selection is Count or Probability; count < 0 and probability < 0 mean
// unset, and both unset means always.
type selection struct {
	count       int
	probability float64
}

func (s selection) always() bool { return s.count < 0 && s.probability < 0 }

// DecodeProviderSpec decodes and validates a sim providerSpec. Unknown and
// duplicate fields are refused. Every failure is an InvalidArgument
// *driver.Error whose message names the offending field, such as
// "providerSpec.faults.create.latency: must not be negative".
func DecodeProviderSpec(raw []byte) (*ProviderSpec, error) {
	ps, _, err := parseProviderSpec(raw)
	return ps, err
}

func parseProviderSpec(raw []byte) (*ProviderSpec, *classSpec, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil, invalid("providerSpec", "must be set: a JSON object with at least region and zones")
	}
	var ps ProviderSpec
	strict, err := sigsjson.UnmarshalStrict(raw, &ps)
	if err != nil {
		return nil, nil, decodeError(raw, err)
	}
	if len(strict) > 0 {
		return nil, nil, strictError(strict[0])
	}
	cs, err := ps.compile()
	if err != nil {
		return nil, nil, err
	}
	return &ps, cs, nil
}

func invalid(path, format string, args ...any) error {
	return driver.Errorf(driver.InvalidArgument, "%s: %s", path, fmt.Sprintf(format, args...))
}

// compile validates the decoded spec and converts it. Checks run in field
// order so the first message is about the first bad field.
func (ps *ProviderSpec) compile() (*classSpec, error) {
	cs := &classSpec{}
	if ps.Region == "" {
		return nil, invalid("providerSpec.region", "must be set, for example \"local\"")
	}
	if errs := validation.IsDNS1123Label(ps.Region); len(errs) > 0 {
		return nil, invalid("providerSpec.region", "%q is not a DNS label: %s", ps.Region, errs[0])
	}
	cs.region = ps.Region
	if len(ps.Zones) == 0 {
		return nil, invalid("providerSpec.zones", "must not be empty: list at least one zone, for example [\"local-a\"]")
	}
	for i, z := range ps.Zones {
		p := fmt.Sprintf("providerSpec.zones[%d]", i)
		if errs := validation.IsDNS1123Label(z); len(errs) > 0 {
			return nil, invalid(p, "%q is not a DNS label: %s", z, errs[0])
		}
		if slices.Contains(ps.Zones[:i], z) {
			return nil, invalid(p, "zone %q is listed twice", z)
		}
	}
	cs.zones = slices.Clone(ps.Zones)
	it := ps.InstanceType
	if it == "" {
		it = DefaultInstanceType
	}
	t, ok := instanceTypes[it]
	if !ok {
		return nil, invalid("providerSpec.instanceType", "unknown instance type %q; the sim has %s", it, strings.Join(InstanceTypeNames(), ", "))
	}
	cs.instanceType = t
	if len(ps.Image) > maxImage {
		return nil, invalid("providerSpec.image", "must be at most %d characters", maxImage)
	}
	cs.image = ps.Image
	if len(ps.Tags) > maxTags {
		return nil, invalid("providerSpec.tags", "must have at most %d tags, not %d", maxTags, len(ps.Tags))
	}
	for _, k := range slices.Sorted(maps.Keys(ps.Tags)) {
		if k == "" || len(k) > maxTagKey {
			return nil, invalid("providerSpec.tags", "tag key %q must be 1 to %d characters", k, maxTagKey)
		}
		if len(ps.Tags[k]) > maxTagValue {
			return nil, invalid("providerSpec.tags."+k, "must be at most %d characters", maxTagValue)
		}
	}
	cs.tags = cloneMap(ps.Tags)
	var err error
	if cs.bootDelay, err = parseDuration("providerSpec.bootDelay", ps.BootDelay); err != nil {
		return nil, err
	}
	if cs.bootJitter, err = parseDuration("providerSpec.bootJitter", ps.BootJitter); err != nil {
		return nil, err
	}
	cs.requireInit = ps.RequireInitialization
	switch ps.CapacityType {
	case "", driver.CapacityTypeSpot, driver.CapacityTypeOnDemand:
		cs.capacityType = ps.CapacityType
	default:
		return nil, invalid("providerSpec.capacityType", "%q is neither %q nor %q", ps.CapacityType, driver.CapacityTypeSpot, driver.CapacityTypeOnDemand)
	}
	if cs.faults, err = compileFaults(ps.Faults, cs.zones); err != nil {
		return nil, err
	}
	return cs, nil
}

func compileFaults(f *Faults, zones []string) (faultSpec, error) {
	fs := faultSpec{ops: map[op]*opFault{}, fullZones: map[string]bool{}}
	if f == nil {
		return fs, nil
	}
	fs.hasAnyFaults = true
	fs.seed = f.Seed
	for _, o := range []struct {
		op op
		f  *OperationFault
	}{
		{opCreate, f.Create}, {opInitialize, f.Initialize}, {opDelete, f.Delete},
		{opGetStatus, f.GetStatus}, {opList, f.List}, {opUpdate, f.Update},
	} {
		if o.f == nil {
			continue
		}
		c, err := o.f.compile("providerSpec.faults." + string(o.op))
		if err != nil {
			return fs, err
		}
		fs.ops[o.op] = c
	}
	if f.BootFailure != nil {
		s, err := compileSelection("providerSpec.faults.bootFailure", f.BootFailure.Count, f.BootFailure.Probability)
		if err != nil {
			return fs, err
		}
		fs.bootFailure = &s
	}
	if n := f.NodeNotReady; n != nil {
		p := "providerSpec.faults.nodeNotReady"
		if n.After == "" {
			return fs, invalid(p+".after", "must be set: how long after registering the Node goes NotReady, for example \"30s\"")
		}
		d, err := parseDuration(p+".after", n.After)
		if err != nil {
			return fs, err
		}
		s, err := compileSelection(p, n.Count, n.Probability)
		if err != nil {
			return fs, err
		}
		fs.notReady, fs.notReadyIn = &s, d
	}
	for i, z := range f.OutOfCapacityZones {
		if !slices.Contains(zones, z) {
			return fs, invalid(fmt.Sprintf("providerSpec.faults.outOfCapacityZones[%d]", i), "%q is not one of providerSpec.zones (%s)", z, strings.Join(zones, ", "))
		}
		fs.fullZones[z] = true
	}
	return fs, nil
}

func (f *OperationFault) compile(path string) (*opFault, error) {
	c := &opFault{message: f.Message, afterEffect: f.AfterEffect}
	var err error
	if c.latency, err = parseDuration(path+".latency", f.Latency); err != nil {
		return nil, err
	}
	if c.jitter, err = parseDuration(path+".jitter", f.Jitter); err != nil {
		return nil, err
	}
	if f.Code == "" {
		if f.Count != nil || f.Probability != nil || f.AfterEffect || f.Message != "" {
			return nil, invalid(path+".code", "must be set when count, probability, message or afterEffect is: name the machine error code to fail with, for example \"Unavailable\"")
		}
		return c, nil
	}
	code, perr := driver.ParseCode(f.Code)
	if perr != nil {
		return nil, invalid(path+".code", "%q is not a machine error code; use one of %s", f.Code, codeNames())
	}
	if code == driver.OK {
		return nil, invalid(path+".code", "must not be OK: it names the error to fail with")
	}
	c.fail, c.code = true, code
	if c.sel, err = compileSelection(path, f.Count, f.Probability); err != nil {
		return nil, err
	}
	return c, nil
}

func compileSelection(path string, count *int, probability *float64) (selection, error) {
	s := selection{count: -1, probability: -1}
	if count != nil && probability != nil {
		return s, invalid(path, "count and probability are mutually exclusive: set one")
	}
	if count != nil {
		if *count < 0 || *count > maxCount {
			return s, invalid(path+".count", "must be between 0 and %d, not %d", maxCount, *count)
		}
		s.count = *count
	}
	if probability != nil {
		if !(*probability >= 0 && *probability <= 1) {
			return s, invalid(path+".probability", "must be between 0 and 1, not %v", *probability)
		}
		s.probability = *probability
	}
	return s, nil
}

func parseDuration(path string, d Duration) (time.Duration, error) {
	if d == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, invalid(path, "%q is not a duration such as \"250ms\" or \"2m\"", string(d))
	}
	if v < 0 {
		return 0, invalid(path, "must not be negative")
	}
	if v > maxDuration {
		return 0, invalid(path, "must be at most %s", maxDuration)
	}
	return v, nil
}

func codeNames() string {
	var names []string
	for c := driver.Canceled; c.Valid(); c++ {
		names = append(names, c.String())
	}
	return strings.Join(names, ", ")
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// nodeLabels are the labels the sim reports for the Nodes of its VMs.
func (cs *classSpec) nodeLabels() map[string]string {
	if cs.capacityType == "" {
		return nil
	}
	return map[string]string{driver.CapacityTypeLabel: cs.capacityType}
}
