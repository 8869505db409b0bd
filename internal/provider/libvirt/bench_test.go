package libvirt

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// BenchmarkCreateToRunning measures, per VM, the seconds from
// CreateMachine to a running domain (CreateMachine returns once QEMU runs
// the guest), for a VM booting an empty image (SeaBIOS) and one booting a
// kernel directly; for the kernel, also the seconds until the kernel's
// banner and until the end of its boot (its panic for want of an init) on
// the console; and each QEMU's resident memory once the guest has booted.
// Run with -benchtime=3x: every iteration boots a VM.
func BenchmarkCreateToRunning(b *testing.B) {
	b.Run("image", func(b *testing.B) {
		benchCreate(b, imageSpec(), "", "")
	})
	b.Run("kernel", func(b *testing.B) {
		spec := fmt.Sprintf(`{"memory":"128Mi","kernel":%q,"initramfs":%q,"pool":%q,"shutdownGracePeriod":"0s"}`,
			testKernel(b), emptyInitramfs(b, fixture.dir), fixture.pool)
		benchCreate(b, spec, "Linux version", "end Kernel panic")
	})
}

func benchCreate(b *testing.B, spec, banner, booted string) {
	d := newDriver(b)
	cl := class("bench", spec)
	var running, toBanner, toBooted, rss float64
	for i := 0; i < b.N; i++ {
		m := machine(fmt.Sprintf("bench-%d", i))
		start := time.Now()
		if _, err := d.CreateMachine(ctx(b), &driver.CreateMachineRequest{Machine: m, MachineClass: cl}); err != nil {
			b.Fatal(err)
		}
		running += time.Since(start).Seconds()
		if banner != "" {
			toBanner += waitConsole(b, d, m, start, banner)
			toBooted += waitConsole(b, d, m, start, booted)
		}
		rss += settledRSSMiB(b, domainName(m))
		if _, err := d.DeleteMachine(ctx(b), &driver.DeleteMachineRequest{Machine: m, MachineClass: cl}); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(running/n, "s-to-running/VM")
	if banner != "" {
		b.ReportMetric(toBanner/n, "s-to-banner/VM")
		b.ReportMetric(toBooted/n, "s-to-booted/VM")
	}
	b.ReportMetric(rss/n, "MiB-RSS/VM")
	b.ReportMetric(0, "ns/op") // one VM per op: the figures above say it
}

// waitConsole polls a VM's console until it shows text, returning the
// seconds since start.
func waitConsole(b *testing.B, d *Driver, m *v1alpha1.Machine, start time.Time, text string) float64 {
	b.Helper()
	var at float64
	testenv.Eventually(b, timeoutBoot, fmt.Sprintf("%q on the console of %s", text, m.Name), func() (bool, error) {
		at = time.Since(start).Seconds()
		return strings.Contains(d.ConsoleTail(m, 1000), text), nil
	})
	return at
}

// settledRSSMiB is the resident memory of a domain's QEMU once it stops
// growing by more than 1% in half a second.
func settledRSSMiB(b *testing.B, domain string) float64 {
	b.Helper()
	last := qemuRSSMiB(b, domain)
	var rss float64
	testenv.Eventually(b, timeoutBoot, "QEMU's memory to settle", func() (bool, error) {
		rss = qemuRSSMiB(b, domain)
		settled := rss <= last*1.01
		last = rss
		return settled, nil
	})
	return rss
}

// qemuRSSMiB is the resident memory of the QEMU process of a domain.
func qemuRSSMiB(b *testing.B, domain string) float64 {
	b.Helper()
	pid, err := os.ReadFile("/var/run/libvirt/qemu/" + domain + ".pid")
	if err != nil {
		b.Fatal(err)
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kib, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return kib / 1024
		}
	}
	b.Fatalf("no VmRSS in QEMU's status")
	return 0
}
