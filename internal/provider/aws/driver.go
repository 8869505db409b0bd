package aws

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// DefaultName is the driver's name, as MachineClass spec.provider names it.
const DefaultName = "aws"

// Version of the driver, as GetPluginInfo reports it.
const Version = "v0.1.0"

// Defaults of Options.
const (
	// DefaultRetryMaxAttempts is the SDK's standard: a throttled or failed
	// call is made up to 3 times before the driver answers Unavailable.
	DefaultRetryMaxAttempts = 3
	// DefaultRetryMaxBackoff is the SDK's standard longest wait between tries.
	DefaultRetryMaxBackoff = 20 * time.Second
	// DefaultPageSize is DescribeInstances' largest page.
	DefaultPageSize = 1000
	// DefaultVisibilityTimeout hides a received interruption message from
	// the next receives for as long as the manager needs to record its
	// events and acknowledge them (SQS's own default).
	DefaultVisibilityTimeout = 30 * time.Second
)

// clusterNameRE is what a cluster name may be: it goes into a tag key
// (kubernetes.io/cluster/NAME) and IAM policy conditions.
var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// Options configure a Driver.
type Options struct {
	// Name is the driver's name; default DefaultName.
	Name string
	// ClusterName names the cluster in every instance's cluster tag;
	// required. Two clusters sharing an account must have two names.
	ClusterName string
	// Endpoint, when set, replaces EC2's regional endpoint (a test's moto,
	// an EC2-compatible cloud). It is the driver's setting, not a class's:
	// a class naming an endpoint could send the driver's own credentials'
	// session token to any host.
	Endpoint string
	// STSEndpoint, when set, replaces STS's endpoint for roleARN.
	STSEndpoint string
	// Logger logs creates, fallbacks and terminations; default slog.Default().
	Logger *slog.Logger
	// RetryMaxAttempts and RetryMaxBackoff set the SDK's retryer; default
	// DefaultRetryMaxAttempts and DefaultRetryMaxBackoff.
	RetryMaxAttempts int
	RetryMaxBackoff  time.Duration
	// PageSize is DescribeInstances' page size (5–1000); default
	// DefaultPageSize.
	PageSize int32
	// InterruptionQueueURL is the SQS queue that EventBridge rules send
	// EC2's interruption events to (docs/providers/aws.md, "Spot
	// interruptions and the interruption queue"); empty: ReceiveEvents is
	// Unimplemented and GetPluginInfo does not list it.
	InterruptionQueueURL string
	// QueueRegion is the queue's region, where the SQS calls go; required
	// with InterruptionQueueURL. The queue is not about one class, so its
	// calls use the driver's own credentials (the SDK's default chain).
	QueueRegion string
	// SQSEndpoint, when set, replaces SQS's regional endpoint (moto in
	// tests), as Endpoint does EC2's.
	SQSEndpoint string
	// VisibilityTimeout is how long a received message stays hidden from
	// the next receives: an event not acknowledged within it is answered
	// again. Whole seconds, 1s to 12h; default DefaultVisibilityTimeout.
	VisibilityTimeout time.Duration
}

// CheckClusterName checks a cluster name.
func CheckClusterName(name string) error {
	if !clusterNameRE.MatchString(name) {
		return fmt.Errorf("%q: want 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Driver runs each Machine as an EC2 instance. See docs/providers/aws.md.
type Driver struct {
	opts    Options
	clients clients
	locks   keyedLocks
	// names serializes the creates of Machines of one name (in several
	// namespaces), so two do not pick one Node name; creates of other
	// names run side by side.
	names keyedLocks
	// subnetZones caches the zone of each subnet (region/subnet → zone):
	// a subnet never moves.
	subnetZones sync.Map
	// rootDevices caches each AMI's root device name (region/ami → name).
	rootDevices sync.Map
	// queue is the interruption queue's client and what ReceiveEvents
	// remembers between calls.
	queue queue
}

var _ driver.Driver = (*Driver)(nil)

// New returns a driver; it fails on a missing or bad cluster name.
func New(o Options) (*Driver, error) {
	if err := CheckClusterName(o.ClusterName); err != nil {
		return nil, fmt.Errorf("cluster name: %w", err)
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.RetryMaxAttempts == 0 {
		o.RetryMaxAttempts = DefaultRetryMaxAttempts
	}
	if o.RetryMaxBackoff == 0 {
		o.RetryMaxBackoff = DefaultRetryMaxBackoff
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	if o.PageSize < 5 || o.PageSize > 1000 {
		return nil, fmt.Errorf("page size %d: EC2 takes 5 to 1000", o.PageSize)
	}
	if o.VisibilityTimeout == 0 {
		o.VisibilityTimeout = DefaultVisibilityTimeout
	}
	if o.VisibilityTimeout < time.Second || o.VisibilityTimeout > 12*time.Hour || o.VisibilityTimeout%time.Second != 0 {
		return nil, fmt.Errorf("visibility timeout %s: SQS takes whole seconds from 1s to 12h", o.VisibilityTimeout)
	}
	if o.InterruptionQueueURL != "" && o.QueueRegion == "" {
		return nil, fmt.Errorf("an interruption queue needs its region")
	}
	return &Driver{opts: o}, nil
}

// implemented are the optional methods the driver has.
var implemented = []driver.Method{
	driver.MethodInitializeMachine, driver.MethodGetMachineStatus, driver.MethodListMachines,
	driver.MethodGetVolumeIDs, driver.MethodUpdateMachine,
}

// GetPluginInfo names the driver and its optional methods: all of them,
// ReceiveEvents only with an interruption queue to read.
func (d *Driver) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	methods := slices.Clone(implemented)
	if d.opts.InterruptionQueueURL != "" {
		methods = append(methods, driver.MethodReceiveEvents)
	}
	return &driver.GetPluginInfoResponse{Name: d.opts.Name, Version: Version, Implements: methods}, nil
}

// call is what a call about one class works with.
type call struct {
	spec  *ProviderSpec
	ec2   *ec2.Client
	class *v1alpha1.MachineClass
}

// begin checks a call and returns its class's spec and EC2 client: ctx's
// end, the class and its providerSpec, and the Secret come first, so a
// refused call touches nothing.
func (d *Driver) begin(ctx context.Context, class *v1alpha1.MachineClass, secret *corev1.Secret) (*call, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if class == nil {
		return nil, invalid("machineClass", "must be given")
	}
	s, err := decodeSpec(class.Spec.ProviderSpec.Raw)
	if err != nil {
		return nil, err
	}
	cl, err := d.client(ctx, s.Region, secret)
	if err != nil {
		return nil, err
	}
	return &call{spec: s, ec2: cl, class: class}, nil
}

// checkMachine checks the Machine of a call that needs its UID.
// beginMachine is begin for a call about one Machine, which must have a
// UID: the class, its credentials and the Machine are checked before any
// EC2 call.
func (d *Driver) beginMachine(ctx context.Context, class *v1alpha1.MachineClass, secret *corev1.Secret, m *v1alpha1.Machine) (*call, error) {
	cl, err := d.begin(ctx, class, secret)
	if err != nil {
		return nil, err
	}
	if err := checkMachine(m); err != nil {
		return nil, err
	}
	return cl, nil
}

func checkMachine(m *v1alpha1.Machine) error {
	switch {
	case m == nil:
		return invalid("machine", "must be given")
	case m.UID == "":
		return invalid("machine.metadata.uid", "must be set: it identifies the Machine's instance")
	}
	return nil
}

// keyedLocks serializes operations per key (a Machine's UID) within this
// driver; an entry lives while someone holds or waits for it.
type keyedLocks struct {
	mu sync.Mutex
	m  map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

// lock locks key and returns its unlock.
func (k *keyedLocks) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyedLock{}
		k.m[key] = l
	}
	l.users++
	k.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		if l.users--; l.users == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
