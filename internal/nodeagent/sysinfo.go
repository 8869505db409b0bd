package nodeagent

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// userAgent names the agent in the API server's audit and logs.
const userAgent = "millwright-node-agent"

// KubeletVersion is what the Node reports as status.nodeInfo.kubeletVersion
// when neither the user data nor an in-place update gave a version:
// the Kubernetes version whose API the agent was built against (k8s.io/api
// v0.X.Y is Kubernetes v1.X.Y) with "+millwright-node-agent" as semver
// build metadata, so version-skew checks see a matching kubelet and people
// see what it really is.
func KubeletVersion() string {
	v := "v0.0.0"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "k8s.io/api" && strings.HasPrefix(m.Version, "v0.") {
				v = "v1." + strings.TrimPrefix(m.Version, "v0.")
			}
		}
	}
	return v + "+millwright-node-agent"
}

// capacity is the machine's CPUs (processor entries of /proc/cpuinfo) and
// memory (MemTotal of /proc/meminfo, as the kubelet's cAdvisor reads it),
// and maxPods.
func capacity(maxPods int) (corev1.ResourceList, error) {
	cpus, err := countCPUs()
	if err != nil {
		return nil, err
	}
	mem, err := memTotal()
	if err != nil {
		return nil, err
	}
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(cpus), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}, nil
}

func countCPUs() (int, error) {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		if k, _, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "processor" {
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("no processor in /proc/cpuinfo")
	}
	return n, nil
}

func memTotal() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %w", err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}

// nodeInfo is status.nodeInfo: the kernel and identifiers of this boot,
// and the Kubernetes version the node runs.
func nodeInfo(instanceID, version string) corev1.NodeSystemInfo {
	var uts unix.Utsname
	kernel := ""
	if unix.Uname(&uts) == nil {
		kernel = unix.ByteSliceToString(uts.Release[:])
	}
	machineID := firstLine("/etc/machine-id")
	if machineID == "" {
		machineID = instanceID
	}
	return corev1.NodeSystemInfo{
		MachineID:               machineID,
		SystemUUID:              firstLine("/sys/class/dmi/id/product_uuid"),
		BootID:                  firstLine("/proc/sys/kernel/random/boot_id"),
		KernelVersion:           kernel,
		OSImage:                 osImage(),
		ContainerRuntimeVersion: "none://",
		KubeletVersion:          version,
		OperatingSystem:         runtime.GOOS,
		Architecture:            runtime.GOARCH,
	}
}

func firstLine(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line)
}

// osImage is /etc/os-release's PRETTY_NAME, or the agent's own name where
// there is none (the initramfs).
func osImage() string {
	data, _ := os.ReadFile("/etc/os-release")
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Millwright node agent"
}

// internalIP is the local address this machine reaches server from: the
// one the control plane can reach it at, whatever the interfaces are
// called. No packet is sent (a UDP "connection" only picks a route).
func internalIP(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	conn, err := net.Dial("udp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return "", fmt.Errorf("finding the address that reaches %s: %w", server, err)
	}
	defer func() { _ = conn.Close() }()
	return conn.LocalAddr().(*net.UDPAddr).IP.String(), nil
}
