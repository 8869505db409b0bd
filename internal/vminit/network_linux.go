package vminit

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/vishvananda/netlink"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The interface the agent configures: the kernel's first ethernet name
// (there is no udev to rename it).
const iface = "eth0"

// QEMU user networking's fixed addresses, the fallback when no DHCP
// server answers.
var (
	qemuGuest   = &net.IPNet{IP: net.IPv4(10, 0, 2, 15), Mask: net.CIDRMask(24, 32)}
	qemuGateway = net.IPv4(10, 0, 2, 2)
	qemuDNS     = net.IPv4(10, 0, 2, 3)
)

// network is eth0's configuration.
type network struct {
	addr    *net.IPNet
	gateway net.IP
	dns     []net.IP
	// lease is the DHCP lease to renew, nil when static.
	lease *nclient4.Lease
}

// setUpNetwork brings up lo and eth0 (waiting up to timeout for it to
// appear once virtio_net is loaded), asks for an address by DHCP and,
// when none comes within dhcpTimeout, falls back to QEMU user networking's
// 10.0.2.15/24 via 10.0.2.2. It writes /etc/resolv.conf, and renews a
// DHCP lease at half its time for as long as ctx lasts.
func setUpNetwork(ctx context.Context, timeout, dhcpTimeout time.Duration, logf func(string, ...any)) error {
	if lo, err := netlink.LinkByName("lo"); err == nil {
		_ = netlink.LinkSetUp(lo)
	}
	var link netlink.Link
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		l, err := netlink.LinkByName(iface)
		link = l
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("no %s within %s", iface, timeout)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bringing %s up: %w", iface, err)
	}
	n, err := dhcp(ctx, dhcpTimeout)
	if err != nil {
		logf("DHCP on %s: %v; using QEMU user networking's %s via %s", iface, err, qemuGuest, qemuGateway)
		n = &network{addr: qemuGuest, gateway: qemuGateway, dns: []net.IP{qemuDNS}}
	}
	if err := apply(link, n); err != nil {
		return err
	}
	logf("%s: %s via %s (DNS %v, DHCP %t)", iface, n.addr, n.gateway, n.dns, n.lease != nil)
	if n.lease != nil {
		go renew(ctx, n.lease, logf)
	}
	return nil
}

func dhcp(ctx context.Context, timeout time.Duration) (*network, error) {
	c, err := nclient4.New(iface, nclient4.WithTimeout(timeout/3), nclient4.WithRetry(3))
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lease, err := c.Request(ctx)
	if err != nil {
		return nil, err
	}
	ack := lease.ACK
	n := &network{addr: &net.IPNet{IP: ack.YourIPAddr, Mask: ack.SubnetMask()}, dns: ack.DNS(), lease: lease}
	if r := ack.Router(); len(r) > 0 {
		n.gateway = r[0]
	}
	return n, nil
}

func apply(link netlink.Link, n *network) error {
	if err := netlink.AddrReplace(link, &netlink.Addr{IPNet: n.addr}); err != nil {
		return fmt.Errorf("adding %s to %s: %w", n.addr, iface, err)
	}
	if n.gateway != nil {
		if err := netlink.RouteReplace(&netlink.Route{LinkIndex: link.Attrs().Index, Gw: n.gateway}); err != nil {
			return fmt.Errorf("default route via %s: %w", n.gateway, err)
		}
	}
	var conf strings.Builder
	for _, ip := range n.dns {
		fmt.Fprintf(&conf, "nameserver %s\n", ip)
	}
	if err := os.MkdirAll("/etc", 0o755); err != nil {
		return err
	}
	return os.WriteFile("/etc/resolv.conf", []byte(conf.String()), 0o644)
}

// renew keeps the DHCP lease (libvirt's dnsmasq hands out one-hour
// leases) by renewing it at half its time.
func renew(ctx context.Context, lease *nclient4.Lease, logf func(string, ...any)) {
	defer func() { logPanic(recover()) }()
	for {
		d := lease.ACK.IPAddressLeaseTime(time.Hour) / 2
		select {
		case <-ctx.Done():
			return
		case <-time.After(d):
		}
		c, err := nclient4.New(iface)
		if err != nil {
			logf("DHCP renewal: %v", err)
			continue
		}
		l, err := c.Renew(ctx, lease)
		_ = c.Close()
		if err != nil {
			logf("DHCP renewal: %v", err)
			continue
		}
		lease = l
	}
}

// takeNetworkDown sets eth0 down before the power-off, once the agent has
// stopped. A guest under QEMU TCG was seen stuck for good in virtio_net's
// receive/transmit polling (a soft lockup in virtnet_poll) after pid 1 had
// asked the kernel to power off, with the link still up; with the link
// down, nothing is left for that polling to do. It is a mitigation: the
// lockup was seen about once in 70 deletions and this has not been shown
// to prevent it (docs/providers/libvirt.md, "End to end on real VMs").
func takeNetworkDown() {
	if link, err := netlink.LinkByName(iface); err == nil {
		_ = netlink.LinkSetDown(link)
	}
}
