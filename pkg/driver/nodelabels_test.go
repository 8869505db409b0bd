package driver_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestAllowedNodeLabels: a driver's labels under node.millwright.dev/ are
// taken; labels of other domains (roles, the kubelet's, none at all) and
// malformed ones are refused, each named with why.
func TestAllowedNodeLabels(t *testing.T) {
	allowed, refused := driver.AllowedNodeLabels(map[string]string{
		driver.CapacityTypeLabel:                driver.CapacityTypeSpot,
		"node.millwright.dev/pool":              "",
		"node-role.kubernetes.io/control-plane": "",
		"kubernetes.io/hostname":                "evil",
		"topology.kubernetes.io/zone":           "a",
		"capacity-type":                         "spot",
		"node.millwright.dev.evil.com/x":        "y",
		"node.millwright.dev/bad value":         "x",
		"node.millwright.dev/long":              strings.Repeat("v", 64),
	})
	want := map[string]string{driver.CapacityTypeLabel: "spot", "node.millwright.dev/pool": ""}
	if !maps.Equal(allowed, want) {
		t.Errorf("allowed = %v, want %v", allowed, want)
	}
	wantRefused := []string{"capacity-type", "kubernetes.io/hostname", "node-role.kubernetes.io/control-plane",
		"node.millwright.dev.evil.com/x", "node.millwright.dev/bad value", "node.millwright.dev/long", "topology.kubernetes.io/zone"}
	if len(refused) != len(wantRefused) {
		t.Fatalf("refused = %q, want the keys %q", refused, wantRefused)
	}
	for i, k := range wantRefused {
		if !strings.HasPrefix(refused[i], `"`+k+`": `) {
			t.Errorf("refused[%d] = %q, want key %q with why", i, refused[i], k)
		}
	}
	if allowed, refused := driver.AllowedNodeLabels(nil); allowed != nil || refused != nil {
		t.Errorf("AllowedNodeLabels(nil) = %v, %v; want nothing", allowed, refused)
	}
}
