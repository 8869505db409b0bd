package libvirt

import (
	"bytes"
	gojson "encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// ProviderSpec is a libvirt MachineClass's providerSpec. docs/providers/libvirt.md
// describes every field for users.
type ProviderSpec struct {
	// URI of the libvirt daemon; empty: the driver's --default-uri
	// (qemu:///system).
	URI string `json:"uri,omitempty"`
	// CPUs is the number of virtual CPUs; default 1.
	CPUs int `json:"cpus,omitempty"`
	// Memory of the VM; default 512Mi, at least MinMemory.
	Memory *resource.Quantity `json:"memory,omitempty"`
	// DomainType is kvm, qemu (TCG emulation) or auto (kvm where a probe
	// proved KVM guests boot, else qemu); default qemu.
	DomainType string `json:"domainType,omitempty"`

	// Kernel, Initramfs and Cmdline boot the VM directly from files on the
	// libvirt host. With Image too, the kernel boots the image's disk (vda,
	// such as cmdline "root=/dev/vda"): an image needs no bootloader
	// (docs/providers/libvirt.md, "Booting a cloud image").
	Kernel    string `json:"kernel,omitempty"`
	Initramfs string `json:"initramfs,omitempty"`
	Cmdline   string `json:"cmdline,omitempty"`
	// Image names a volume of Pool the VM boots from: each VM writes to a
	// qcow2 overlay of its own, the image itself is never written.
	Image string `json:"image,omitempty"`
	// DiskSize is the overlay's size; default the image's.
	DiskSize *resource.Quantity `json:"diskSize,omitempty"`
	// Pool is the storage pool holding the image, the overlays and the
	// cloud-init seeds; default DefaultPool, which the driver creates.
	Pool string `json:"pool,omitempty"`

	// Network attaches the VM's one NIC; default user-mode networking.
	Network *NetworkSpec `json:"network,omitempty"`

	// ShutdownGracePeriod is how long a deletion waits for the guest to
	// power off after the ACPI shutdown before it is destroyed; default 30s.
	ShutdownGracePeriod string `json:"shutdownGracePeriod,omitempty"`
}

// NetworkSpec attaches the VM's NIC: to QEMU's user-mode network stack
// (User) or to a libvirt network by name (Name). At most one is set.
type NetworkSpec struct {
	User *UserNetwork `json:"user,omitempty"`
	Name string       `json:"name,omitempty"`
}

// UserNetwork is QEMU's user-mode (slirp) network.
type UserNetwork struct {
	// Restrict isolates the guest: it reaches only the GuestForwards.
	// Default true; false only where the driver allows it (an
	// unrestricted guest reaches the libvirt host's loopback), and never
	// with GuestForwards.
	Restrict *bool `json:"restrict,omitempty"`
	// GuestForwards connect addresses the guest dials to host addresses,
	// each connection on its own (QEMU runs the driver's relay for it).
	GuestForwards []GuestForward `json:"guestForwards,omitempty"`
}

// GuestForward makes a TCP connection the guest opens to Guest (an address
// in the user network, 10.0.2.0/24) reach Host on the libvirt host.
type GuestForward struct {
	Guest string `json:"guest"`
	Host  string `json:"host"`
}

// Domain types.
const (
	DomainTypeKVM  = "kvm"
	DomainTypeQEMU = "qemu"
	DomainTypeAuto = "auto"
)

// Defaults and limits of the providerSpec.
const (
	// DefaultURI is the libvirt daemon the driver talks to by default.
	DefaultURI = "qemu:///system"
	// DefaultPool is the storage pool the driver creates when a class names none.
	DefaultPool = "millwright"
	// MaxCPUs bounds cpus: more is a typo, not a VM this driver is for.
	MaxCPUs = 64
	// defaultShutdownGrace is how long a deletion waits for an ACPI shutdown.
	defaultShutdownGrace = 30 * time.Second
)

var (
	// MinMemory is the least memory a Linux kernel with an initramfs boots in.
	MinMemory     = resource.MustParse("128Mi")
	defaultMemory = resource.MustParse("512Mi")
)

// hostName is what a guest forward's host may be: a DNS name, an IPv4
// address, or an IPv6 address (bracketed in host:port).
var hostName = regexp.MustCompile(`^[A-Za-z0-9.:-]+$`)

// userNet is the user-mode network's subnet: guest forwards must target it.
var userNet = &net.IPNet{IP: net.IPv4(10, 0, 2, 0), Mask: net.CIDRMask(24, 32)}

// spec is a validated ProviderSpec with its defaults applied.
type spec struct {
	ProviderSpec
	memoryKiB     uint64
	diskBytes     uint64 // 0: the image's size
	shutdownGrace time.Duration
}

// decodeSpec decodes and validates a providerSpec: unknown fields and bad
// values are an InvalidArgument error whose message starts with the path
// of the offending field, such as "providerSpec.memory: ...".
// defaultURI fills an empty uri. Checks that need the libvirt host (files,
// volumes, the pool) are made later, by the driver.
func decodeSpec(raw []byte, defaultURI string) (*spec, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid("providerSpec", "must be set: a JSON object with at least kernel or image")
	}
	var ps ProviderSpec
	strict, err := sigsjson.UnmarshalStrict(raw, &ps)
	if err != nil {
		var te *gojson.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, invalid("providerSpec."+te.Field, "has the wrong type (%s)", te.Value)
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
	return ps.validate(defaultURI)
}

func (ps ProviderSpec) validate(defaultURI string) (*spec, error) {
	s := &spec{ProviderSpec: ps}
	if s.URI == "" {
		s.URI = defaultURI
	}
	if err := CheckURI(s.URI); err != nil {
		return nil, invalid("providerSpec.uri", "%v", err)
	}
	switch {
	case s.CPUs == 0:
		s.CPUs = 1
	case s.CPUs < 0 || s.CPUs > MaxCPUs:
		return nil, invalid("providerSpec.cpus", "must be between 1 and %d, got %d", MaxCPUs, s.CPUs)
	}
	mem := defaultMemory
	if s.Memory != nil {
		mem = *s.Memory
	}
	if mem.Cmp(MinMemory) < 0 {
		return nil, invalid("providerSpec.memory", "%s is less than the %s a kernel needs to boot", mem.String(), MinMemory.String())
	}
	s.memoryKiB = uint64(mem.Value()) / 1024
	switch s.DomainType {
	case "":
		// TCG boots everywhere; KVM is faster but hangs where nested
		// virtualization is broken, so it must be asked for.
		s.DomainType = DomainTypeQEMU
	case DomainTypeKVM, DomainTypeQEMU:
	case DomainTypeAuto:
		if s.Kernel == "" {
			return nil, invalid("providerSpec.domainType", "auto needs kernel: the KVM probe boots it")
		}
	default:
		return nil, invalid("providerSpec.domainType", "%q: want %s, %s or %s", s.DomainType, DomainTypeKVM, DomainTypeQEMU, DomainTypeAuto)
	}
	switch {
	case s.Kernel == "" && s.Image == "":
		return nil, invalid("providerSpec.kernel", "a boot source is required: kernel (with initramfs) or image")
	case s.Image == "" && (s.DiskSize != nil):
		return nil, invalid("providerSpec.diskSize", "needs image: it sizes the image's overlay")
	case s.Kernel == "" && (s.Initramfs != "" || s.Cmdline != ""):
		return nil, invalid("providerSpec.initramfs", "initramfs and cmdline need kernel")
	}
	if s.DiskSize != nil {
		if s.DiskSize.Sign() <= 0 {
			return nil, invalid("providerSpec.diskSize", "must be positive, got %s", s.DiskSize.String())
		}
		s.diskBytes = uint64(s.DiskSize.Value())
	}
	if s.Pool == "" {
		s.Pool = DefaultPool
	}
	s.shutdownGrace = defaultShutdownGrace
	if s.ShutdownGracePeriod != "" {
		d, err := time.ParseDuration(s.ShutdownGracePeriod)
		if err != nil || d < 0 {
			return nil, invalid("providerSpec.shutdownGracePeriod", "%q is not a non-negative duration such as \"30s\"", s.ShutdownGracePeriod)
		}
		s.shutdownGrace = d
	}
	if err := s.Network.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// CheckURI checks that uri looks like a libvirt URI.
func CheckURI(uri string) error {
	if u, err := url.Parse(uri); err != nil || u.Scheme == "" {
		return fmt.Errorf("%q is not a libvirt URI such as %s", uri, DefaultURI)
	}
	return nil
}

func (n *NetworkSpec) validate() error {
	if n == nil {
		return nil
	}
	if n.User != nil && n.Name != "" {
		return invalid("providerSpec.network", "user and name are mutually exclusive")
	}
	if n.User == nil && n.Name == "" {
		// network: {} is the default, QEMU's user-mode network,
		// restricted: never libvirt's <interface type="user">, which
		// reaches the host's loopback.
		n.User = &UserNetwork{}
	}
	if n.User == nil {
		return nil
	}
	if !n.User.restricted() && len(n.User.GuestForwards) > 0 {
		return invalid("providerSpec.network.user.restrict", "must not be false with guestForwards: an unrestricted guest reaches the libvirt host's loopback around them")
	}
	for i, f := range n.User.GuestForwards {
		field := fmt.Sprintf("providerSpec.network.user.guestForwards[%d]", i)
		gh, gp, err := net.SplitHostPort(f.Guest)
		ip := net.ParseIP(gh)
		if err != nil || ip == nil || ip.To4() == nil || !userNet.Contains(ip) || !validPort(gp) {
			return invalid(field+".guest", "%q is not an IPv4 address:port in the user network %s", f.Guest, userNet)
		}
		// The host goes into QEMU's -netdev value, as a word of the
		// relay's command: no comma, no space, no quote.
		hh, hp, err := net.SplitHostPort(f.Host)
		if err != nil || !hostName.MatchString(hh) || !validPort(hp) {
			return invalid(field+".host", "%q is not a host:port on the libvirt host (a name or an IP address)", f.Host)
		}
	}
	return nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}

func invalid(path, format string, args ...any) error {
	return driver.Errorf(driver.InvalidArgument, "%s: %s", path, fmt.Sprintf(format, args...))
}

// restricted reports whether the user network is restricted: unless the
// spec says false.
func (u *UserNetwork) restricted() bool { return u.Restrict == nil || *u.Restrict }
