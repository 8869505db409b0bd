package machine

import (
	"maps"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestRecordNodeLabelsRefusesForeignKeys: of a driver's labels, only those
// under node.millwright.dev/ reach the Machine (and so its Node); a role or
// a kubelet label is dropped and named in the log, and the Machine's other
// labels are kept.
func TestRecordNodeLabelsRefusesForeignKeys(t *testing.T) {
	var logged []string
	m := &v1alpha1.Machine{}
	m.Labels = map[string]string{"team": "web", driver.CapacityTypeLabel: "on-demand"}
	s := &scope{machine: m, log: funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})}
	recordNodeLabels(s, map[string]string{
		driver.CapacityTypeLabel:                "spot",
		"node-role.kubernetes.io/control-plane": "",
		"kubernetes.io/hostname":                "other",
	})
	want := map[string]string{"team": "web", driver.CapacityTypeLabel: "spot"}
	if !maps.Equal(m.Labels, want) {
		t.Errorf("Machine labels = %v, want %v", m.Labels, want)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "node-role.kubernetes.io/control-plane") || !strings.Contains(logged[0], "kubernetes.io/hostname") {
		t.Errorf("log = %q; want one line naming both refused keys", logged)
	}
	if got := desiredNodeState(m).Labels; !maps.Equal(got, map[string]string{driver.CapacityTypeLabel: "spot"}) {
		t.Errorf("the Node's desired labels = %v; want only the driver's", got)
	}
}
