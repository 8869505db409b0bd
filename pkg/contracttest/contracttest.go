// Package contracttest is a conformance suite for InfraMachine providers
// under Millwright's contract (version v1beta1, docs/contract-providers.md), as
// pkg/driver/drivertest is for drivers. It runs against a real API server
// on which the provider's CRDs are installed and its controller runs:
//
//	func TestContract(t *testing.T) {
//		contracttest.Run(t, contracttest.Config{
//			RESTConfig:           cfg,
//			InfraMachine:         infrav1.GroupVersion.WithKind("FooMachine"),
//			InfraMachineTemplate: infrav1.GroupVersion.WithKind("FooMachineTemplate"),
//			NewInfraMachine:      newFooMachine, // a valid or a terminally failing one
//		})
//	}
//
// The suite plays the part of Millwright's machine controller: it creates
// the bootstrap data Secret and the owner Machine (spec.infrastructureRef,
// spec.bootstrap.dataSecretName, the controller owner reference on the
// InfraMachine) and reads back the contract fields. Run it without
// Millwright's machine controller, which would otherwise act on the
// Machines too. Each rule of the contract's table is one subtest, plus the
// workflow rules Millwright relies on (no VM before the owner and the
// bootstrap data exist, deletion).
package contracttest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Variant says which InfraMachine NewInfraMachine makes.
type Variant string

// The variants.
const (
	// Valid: the provider provisions it.
	Valid Variant = "Valid"
	// TerminalFailure: the provider can never provision it and must say so
	// in status.failureReason and status.failureMessage.
	TerminalFailure Variant = "TerminalFailure"
)

// Rule names a subtest; a provider may leave out optional rules with Config.Skip.
type Rule string

// The rules, the contract's table first, then the workflow rules.
const (
	RuleScope                   Rule = "Scope"
	RuleTypeMetaObjectMeta      Rule = "TypeMetaObjectMeta"
	RuleAPIVersionContractLabel Rule = "APIVersionContractLabel"
	RuleListResource            Rule = "ListResource"
	RuleCRDName                 Rule = "CRDName"
	RuleProviderID              Rule = "ProviderID"
	RuleFailureDomain           Rule = "FailureDomain"
	RuleAddresses               Rule = "Addresses"
	RuleInitializationCompleted Rule = "InitializationCompleted"
	RuleConditions              Rule = "Conditions"
	RuleTerminalFailures        Rule = "TerminalFailures"
	RuleTemplate                Rule = "Template"
	RulePausing                 Rule = "Pausing"
	RuleNoOwnerNoProgress       Rule = "NoMachineOwnerNoProgress"
	RuleWaitsForBootstrapData   Rule = "WaitsForBootstrapData"
	RuleDeletion                Rule = "Deletion"
)

// optionalRules may be skipped: the contract marks them "Mandatory: No".
var optionalRules = map[Rule]bool{
	RuleFailureDomain: true, RuleAddresses: true, RuleConditions: true,
	RuleTerminalFailures: true, RulePausing: true,
}

// Config is the provider under test.
type Config struct {
	// RESTConfig reaches the API server as an administrator.
	RESTConfig *rest.Config
	// InfraMachine is the provider's InfraMachine kind, in the version the
	// suite creates objects with.
	InfraMachine schema.GroupVersionKind
	// InfraMachineTemplate is its template kind.
	InfraMachineTemplate schema.GroupVersionKind
	// NewInfraMachine returns an InfraMachine of the variant with its spec
	// filled in; the suite sets apiVersion, kind, name, namespace and owner.
	NewInfraMachine func(Variant) *unstructured.Unstructured
	// NewInfraMachineTemplate returns a valid template; the suite sets the
	// type and object meta. Nil: spec.template.spec is the Valid
	// InfraMachine's spec.
	NewInfraMachineTemplate func() *unstructured.Unstructured
	// FailureDomain is a failure domain the Valid InfraMachine may be
	// placed in; empty skips RuleFailureDomain.
	FailureDomain string
	// PlacedIn returns the failure domain a provisioned InfraMachine really
	// runs in (by asking the infrastructure). Nil: its spec.failureDomain.
	PlacedIn func(ctx context.Context, infraMachine *unstructured.Unstructured) (string, error)
	// Exists reports whether the infrastructure behind a providerID still
	// exists, so RuleDeletion can check it is gone. Nil: not checked.
	Exists func(ctx context.Context, providerID string) (bool, error)
	// Skip lists optional rules the provider does not implement: they are not run.
	Skip []Rule
	// Timeout bounds every wait for the provider; default 60s.
	Timeout time.Duration
	// Quiet is how long the suite watches for progress that must not
	// happen (while paused, failed, without owner); default 3s.
	Quiet time.Duration
}

// Run runs the suite as subtests of t, in a namespace of its own.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	if cfg.RESTConfig == nil || cfg.InfraMachine.Empty() || cfg.InfraMachineTemplate.Empty() || cfg.NewInfraMachine == nil {
		t.Fatal("contracttest.Config needs RESTConfig, InfraMachine, InfraMachineTemplate and NewInfraMachine")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Quiet == 0 {
		cfg.Quiet = 3 * time.Second
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{Config: cfg, c: c, prefix: fmt.Sprintf("ct%05d", rand.IntN(100_000))}
	s.ns = s.prefix + "-" + strings.ToLower(cfg.InfraMachine.Kind)
	s.createNamespace(t)

	for _, r := range []struct {
		rule Rule
		fn   func(*testing.T)
	}{
		{RuleScope, s.testScope},
		{RuleTypeMetaObjectMeta, s.testTypeMetaObjectMeta},
		{RuleAPIVersionContractLabel, s.testContractLabel},
		{RuleListResource, s.testListResource},
		{RuleCRDName, s.testCRDName},
		{RuleProviderID, s.testProviderID},
		{RuleFailureDomain, s.testFailureDomain},
		{RuleAddresses, s.testAddresses},
		{RuleInitializationCompleted, s.testInitialization},
		{RuleConditions, s.testConditions},
		{RuleTerminalFailures, s.testTerminalFailures},
		{RuleTemplate, s.testTemplate},
		{RulePausing, s.testPausing},
		{RuleNoOwnerNoProgress, s.testNoOwner},
		{RuleWaitsForBootstrapData, s.testWaitsForBootstrapData},
		{RuleDeletion, s.testDeletion},
	} {
		if s.skipped(r.rule) {
			// Not run rather than skipped: an optional rule the provider
			// does not implement has nothing to prove; the log says so.
			t.Logf("optional rule %s not checked: the provider opts out of it (Config.Skip or no FailureDomain)", r.rule)
			continue
		}
		t.Run(string(r.rule), func(t *testing.T) {
			// Most rules wait for the provider; side by side they take
			// as long as the slowest.
			t.Parallel()
			r.fn(t)
		})
	}
}

type suite struct {
	Config
	c      client.Client
	prefix string
	ns     string
	seq    atomic.Int64
}

func (s *suite) skipped(r Rule) bool {
	if !optionalRules[r] {
		return false
	}
	if r == RuleFailureDomain && s.FailureDomain == "" {
		return true
	}
	for _, x := range s.Skip {
		if x == r {
			return true
		}
	}
	return false
}
