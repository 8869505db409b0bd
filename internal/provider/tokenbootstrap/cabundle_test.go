package tokenbootstrap

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
)

// No CA bundle, neither in the spec nor from the controller's target
// cluster, can never join millwright-node-agent (its client pins the CA):
// a terminal failure before any token is made (docs/providers/node-agent.md).
func TestMissingCABundleIsTerminal(t *testing.T) {
	d := testDefaults(t)
	d.CABundle = nil
	startControllerWith(t, d)
	o := newOwned(t, nil)
	o.eventually("to fail", func(cfg *bootstrapv1.TokenBootstrapConfig) bool {
		return failedWith(bootstrapv1.FailureReasonInvalidConfiguration)(cfg) || ready(cfg)
	})
	if !failedWith(bootstrapv1.FailureReasonInvalidConfiguration)(o.cfg) {
		t.Fatalf("without a CA bundle the config is %+v, want a terminal InvalidConfiguration", o.cfg.Status)
	}
	if msg := ptr.Deref(o.cfg.Status.FailureMessage, ""); !strings.Contains(msg, "CA bundle") {
		t.Errorf("failure message %q does not name the CA bundle", msg)
	}
	if o.token() != nil || o.dataSecret() != nil {
		t.Fatal("a config without a CA bundle made its token or user data")
	}
}
