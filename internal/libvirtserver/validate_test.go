package libvirtserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/cli"
)

// TestValidateNamesEveryBadFlag checks a bad command line is a usage error
// naming each refused flag, and that the defaults pass.
func TestValidateNamesEveryBadFlag(t *testing.T) {
	o := NewOptions()
	o.Endpoint = "unix:///tmp/lv.sock"
	if err := o.Validate(); err != nil {
		t.Fatalf("the defaults are refused: %v", err)
	}
	o = &Options{
		PluginFlags:   cli.PluginFlags{Endpoint: "unix://relative", LogLevel: "loud", LogFormat: "xml"},
		HealthAddress: "nohostport", DefaultURI: "::", Reconnect: 0, KVMProbeTimeout: -1,
		RelayBinary: "/opt/bin/relay,with,commas",
	}
	err := o.Validate()
	var usage *cli.UsageError
	if !errors.As(err, &usage) {
		t.Fatalf("Validate: %v; want a usage error", err)
	}
	for _, flag := range []string{"endpoint", "health-address", "default-uri", "console-dir", "qemu-log-dir", "reconnect", "kvm-probe-timeout", "relay-binary", "name", "log-level", "log-format"} {
		if !strings.Contains(err.Error(), "--"+flag+": ") {
			t.Errorf("the error does not name --%s:\n%v", flag, err)
		}
	}
}
