package kwok

import (
	"strings"
	"testing"
)

func TestConfigHasEveryStage(t *testing.T) {
	cfg := Config("10.0.0.0/16", Nodes{})
	for _, want := range []string{"cidr: 10.0.0.0/16", "name: node-initialize", "name: node-heartbeat-with-lease",
		"name: node-not-ready", "name: pod-ready", "name: pod-ready-again", "name: pod-complete", "name: pod-delete",
		// The chaos Stage internal/provider/sim drives, by the keys it sets.
		`.metadata.labels["` + NotReadyLabel + `"]`, `"` + NotReadyReasonAnnotation + `"`, `"` + NotReadyMessageAnnotation + `"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("kwok config lacks %q", want)
		}
	}
	for _, want := range []string{"nodeLeaseDurationSeconds: 40\n", "nodeLeaseParallelism: 4\n", "nodePlayStageParallelism: 4\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("kwok's default config lacks %q", want)
		}
	}
	custom := Config("", Nodes{LeaseDurationSeconds: 400, LeaseParallelism: 40, StageParallelism: 32})
	for _, want := range []string{"nodeLeaseDurationSeconds: 400\n", "nodeLeaseParallelism: 40\n", "nodePlayStageParallelism: 32\n"} {
		if !strings.Contains(custom, want) {
			t.Errorf("kwok config with Nodes{400, 40, 32} lacks %q", want)
		}
	}
	if strings.Contains(Config("", Nodes{}), "cidr:") {
		t.Error("an empty pod CIDR must leave cidr out")
	}
}
