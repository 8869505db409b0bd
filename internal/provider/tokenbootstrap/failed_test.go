package tokenbootstrap

import (
	"testing"
	"time"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// A Machine that failed will not join: its token is deleted at once and
// never extended again, though the Machine may be kept for days,
// preserved for a person to look at (docs/preservation.md). The user data
// stays, as after a join.
func TestTokenIsDeletedOnceTheMachineFailed(t *testing.T) {
	startController(t)
	o := newOwned(t, nil)
	o.eventually("to be ready", ready)
	if o.token() == nil {
		t.Fatal("no token before the failure")
	}
	o.patchMachine(true, func(m *v1alpha1.Machine) {
		m.Status.FailureReason, m.Status.FailureMessage = "CreationTimeout", "no Node within the creation timeout"
	})
	o.eventually("to give the token up", func(cfg *bootstrapv1.TokenBootstrapConfig) bool {
		return cfg.Status.TokenExpiration == nil
	})
	if o.token() != nil {
		t.Fatal("the token outlived the Machine's failure")
	}
	if o.dataSecret() == nil || !conditionIs(bootstrapv1.ReadyCondition, "True", bootstrapv1.ReadyReasonMachineFailed)(o.cfg) {
		t.Errorf("after the failure: %+v", o.cfg.Status)
	}
	// Later reconciles (a poke) never bring it back.
	o.patch(func(cfg *bootstrapv1.TokenBootstrapConfig) { cfg.Annotations = map[string]string{"poke": "1"} })
	testenv.Consistently(t, time.Second, "without a token after the failure", func() (bool, error) { return o.token() == nil, nil })
}
