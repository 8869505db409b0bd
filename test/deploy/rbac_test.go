package deploy_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// grant is one verb on one resource (resource/subresource) of a group,
// cluster-wide (a ClusterRole) or in one namespace (a Role), optionally of
// one object only; or one verb on a non-resource URL.
type grant struct {
	role      string // "ClusterRole NAME" or "Role NAMESPACE/NAME"
	group     string
	resource  string
	verb      string
	namespace string // of the Role; "" for a ClusterRole
	name      string // the resourceName it is limited to; "" for all
	url       string // a non-resource URL instead of group and resource
}

func (g grant) String() string {
	if g.url != "" {
		return fmt.Sprintf("%s: %s URL %s", g.role, g.verb, g.url)
	}
	s := fmt.Sprintf("%s: %s %s", g.role, g.verb, g.resource)
	if g.group != "" {
		s += "." + g.group
	}
	if g.name != "" {
		s += " named " + g.name
	}
	return s
}

// grants expands "verb;verb" on "res;res" of a group in role.
func grants(role, group, resources, verbs string) []grant {
	var out []grant
	ns := ""
	if rest, ok := strings.CutPrefix(role, "Role "); ok {
		ns, _, _ = strings.Cut(rest, "/")
	}
	for _, r := range strings.Split(resources, ";") {
		for _, v := range strings.Split(verbs, ";") {
			out = append(out, grant{role: role, group: group, resource: r, verb: v, namespace: ns})
		}
	}
	return out
}

const mwGroup = "machine.millwright.dev"

// wantGrants is every permission config/rbac/role.yaml must give, read off
// the code (see the rbac.go of each controller package, internal/manager
// and internal/simserver), and nothing more: a new verb must be added both
// to a marker and here, on purpose.
var wantGrants = slices.Concat(
	// The machine, MachineSet and MachineDeployment controllers.
	grants("ClusterRole millwright-manager", mwGroup, "machines;machinesets", "get;list;watch;create;patch;delete"),
	grants("ClusterRole millwright-manager", mwGroup, "machinedeployments", "get;list;watch;patch"),
	// The MachineClass controller patches a class's finalizer and status.
	grants("ClusterRole millwright-manager", mwGroup, "machineclasses", "get;list;watch;patch"),
	grants("ClusterRole millwright-manager", mwGroup, "machines/status;machinesets/status;machinedeployments/status;machineclasses/status", "patch"),
	grants("ClusterRole millwright-manager", mwGroup, "machinesets/finalizers;machinedeployments/finalizers", "update"),
	// The MachineHealthCheck controller reads health checks and writes their status.
	grants("ClusterRole millwright-manager", mwGroup, "machinehealthchecks", "get;list;watch"),
	grants("ClusterRole millwright-manager", mwGroup, "machinehealthchecks/status", "patch"),
	// The MachineDisruptionBudget controller recounts budgets; the gate, run
	// in the other controllers, records grants in their status.
	grants("ClusterRole millwright-manager", mwGroup, "machinedisruptionbudgets", "get;list;watch"),
	grants("ClusterRole millwright-manager", mwGroup, "machinedisruptionbudgets/status", "patch"),
	grants("ClusterRole millwright-manager", "", "secrets;persistentvolumeclaims;persistentvolumes", "get"),
	// User-data Secrets of TokenBootstrapConfigs, in the config's namespace
	// (created once; the garbage collector deletes them with the config).
	grants("ClusterRole millwright-manager", "", "secrets", "create"),
	grants("ClusterRole millwright-manager", "", "nodes", "get;list;watch;patch;delete"),
	grants("ClusterRole millwright-manager", "", "pods", "list;delete"),
	grants("ClusterRole millwright-manager", "", "pods/eviction", "create"),
	// A pod the drain deletes instead of evicting gets DisruptionTarget first.
	grants("ClusterRole millwright-manager", "", "pods/status", "patch"),
	// An eviction approved but not carried out is found in its budget's status.
	grants("ClusterRole millwright-manager", "policy", "poddisruptionbudgets", "list"),
	// The drain's rules, and the target's namespaces for their namespace selectors.
	grants("ClusterRole millwright-manager", mwGroup, "machinedrainrules", "get;list;watch"),
	grants("ClusterRole millwright-manager", "", "namespaces", "list"),
	// A forced drain releases the Node's volumes (internal/drain).
	grants("ClusterRole millwright-manager", "storage.k8s.io", "volumeattachments", "get;list;watch;delete"),
	grants("ClusterRole millwright-manager", "events.k8s.io", "events", "create;patch"),
	// Contract providers: the reference InfraMachine and its template
	// (cloned by the MachineSet controller), and the CRDs' contract label.
	grants("ClusterRole millwright-manager", "infrastructure.millwright.dev", "simmachines", "get;list;watch;create;patch;delete"),
	grants("ClusterRole millwright-manager", "infrastructure.millwright.dev", "simmachinetemplates", "get"),
	grants("ClusterRole millwright-manager", "apiextensions.k8s.io", "customresourcedefinitions", "get;list;watch"),
	// The reference bootstrap provider: its configs (owned and deleted by
	// the machine controller, cloned by the MachineSet controller,
	// reconciled by the TokenBootstrapConfig controller) and its template.
	grants("ClusterRole millwright-manager", "bootstrap.millwright.dev", "tokenbootstrapconfigs", "get;list;watch;create;patch;delete"),
	grants("ClusterRole millwright-manager", "bootstrap.millwright.dev", "tokenbootstrapconfigs/status", "patch"),
	grants("ClusterRole millwright-manager", "bootstrap.millwright.dev", "tokenbootstrapconfigtemplates", "get"),
	// The safety controller's API-server probe (every authenticated user
	// may read /readyz through system:public-info-viewer anyway).
	[]grant{{role: "ClusterRole millwright-manager", url: "/readyz", verb: "get"}},
	// Bootstrap tokens, only in kube-system (patch: a TokenBootstrapConfig's
	// token is extended while its Machine has not joined).
	grants("Role kube-system/millwright-manager-bootstrap-tokens", "", "secrets", "create;patch;delete"),
	// Leader election, only in millwright-system, only the manager's Lease.
	grants("Role millwright-system/millwright-manager-leader-election", "coordination.k8s.io", "leases", "create"),
	named(grants("Role millwright-system/millwright-manager-leader-election", "coordination.k8s.io", "leases", "get;update"),
		"millwright-manager.machine.millwright.dev"),
	grants("Role millwright-system/millwright-manager-leader-election", "", "events", "create;patch"),
	// The sim (the sidecar, or a manager running it in process).
	grants("ClusterRole millwright-sim", "", "nodes", "get;list;watch;create;patch"),
	grants("ClusterRole millwright-sim", "", "nodes/status", "patch"),
	// The sim's SimMachine controller (--infra-controller).
	grants("ClusterRole millwright-sim", "infrastructure.millwright.dev", "simmachines", "get;list;watch;patch"),
	grants("ClusterRole millwright-sim", "infrastructure.millwright.dev", "simmachines/status", "patch"),
	grants("ClusterRole millwright-sim", "infrastructure.millwright.dev", "simmachinetemplates", "get;list;watch"),
	grants("ClusterRole millwright-sim", "infrastructure.millwright.dev", "simmachinetemplates/status", "patch"),
	grants("ClusterRole millwright-sim", mwGroup, "machines", "get;list;watch"),
	grants("ClusterRole millwright-sim", "", "secrets", "get"),
	grants("ClusterRole millwright-sim", "events.k8s.io", "events", "create;patch"),
)

func named(gs []grant, name string) []grant {
	for i := range gs {
		gs[i].name = name
	}
	return gs
}

// The generated roles grant exactly wantGrants: every verb the controllers
// use (a missing one fails in a real cluster only), nothing else, and no
// wildcard anywhere.
func TestRolesGrantWhatTheControllersUse(t *testing.T) {
	var have []grant
	for _, u := range readObjects(t, "config/rbac/role.yaml") {
		var role string
		var rules []rbacv1.PolicyRule
		switch u.GetKind() {
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			testenv.FromUnstructured(t, u, cr)
			if cr.AggregationRule != nil {
				t.Errorf("ClusterRole %s aggregates other roles", cr.Name)
			}
			role, rules = "ClusterRole "+cr.Name, cr.Rules
		case "Role":
			r := &rbacv1.Role{}
			testenv.FromUnstructured(t, u, r)
			role, rules = "Role "+r.Namespace+"/"+r.Name, r.Rules
		default:
			t.Errorf("config/rbac/role.yaml holds a %s", u.GetKind())
			continue
		}
		for _, rule := range rules {
			all := slices.Concat(rule.APIGroups, rule.Resources, rule.Verbs, rule.ResourceNames, rule.NonResourceURLs)
			if slices.ContainsFunc(all, func(s string) bool { return strings.Contains(s, "*") }) {
				t.Errorf("%s has a wildcard rule: %+v", role, rule)
			}
			for _, url := range rule.NonResourceURLs {
				for _, verb := range rule.Verbs {
					have = append(have, grant{role: role, url: url, verb: verb})
				}
			}
			names := rule.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, grp := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, verb := range rule.Verbs {
						for _, name := range names {
							have = append(have, grant{role: role, group: grp, resource: res, verb: verb, name: name})
						}
					}
				}
			}
		}
	}
	key := func(g grant) string { g.namespace = ""; return g.String() }
	haveKeys, wantKeys := map[string]bool{}, map[string]bool{}
	for _, g := range have {
		haveKeys[key(g)] = true
	}
	for _, g := range wantGrants {
		wantKeys[key(g)] = true
		if !haveKeys[key(g)] {
			t.Errorf("missing: %s", g)
		}
	}
	for _, g := range have {
		if !wantKeys[key(g)] {
			t.Errorf("granted but not used: %s", g)
		}
	}
}

// saUser is the ServiceAccount as the API server authenticates it.
var saUser = authorizationv1.SubjectAccessReviewSpec{
	User:   "system:serviceaccount:" + systemNS + ":" + serviceAccount,
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNS, "system:authenticated"},
}

// access is one request for a SubjectAccessReview.
type access struct {
	namespace, group, resource, verb, name, url string
}

func (a access) String() string {
	if a.url != "" {
		return fmt.Sprintf("%s URL %s", a.verb, a.url)
	}
	return fmt.Sprintf("%s %s.%s %q in namespace %q", a.verb, a.resource, a.group, a.name, a.namespace)
}

// allowed asks the API server whether the ServiceAccount may do a.
func allowed(ctx context.Context, t *testing.T, a access) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: saUser}
	if a.url != "" {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.url, Verb: a.verb}
	} else {
		res, sub, _ := strings.Cut(a.resource, "/")
		sar.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: a.namespace, Group: a.group, Resource: res, Subresource: sub, Verb: a.verb, Name: a.name,
		}
	}
	if err := env.Client.Create(ctx, sar); err != nil {
		t.Fatalf("SubjectAccessReview for %s: %v", a, err)
	}
	return sar.Status.Allowed
}

// clusterScoped are the resources wantGrants names that have no namespace.
var clusterScoped = []string{"nodes", "nodes/status", "persistentvolumes", "volumeattachments"}

// config/rbac, applied for real, lets the ServiceAccount do every
// wantGrants (so the bindings name the right roles and subject), and
// refuses what it must not: reading all Secrets, changing or deleting
// Secrets outside kube-system (it may only create them there: the user
// data of TokenBootstrapConfigs), other Leases, other namespaces'
// leader-election Events.
func TestServiceAccountIsAuthorized(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	applyRBAC(ctx, t)

	for _, g := range wantGrants {
		a := access{namespace: g.namespace, group: g.group, resource: g.resource, verb: g.verb, name: g.name, url: g.url}
		if g.url == "" && g.namespace == "" && !slices.Contains(clusterScoped, g.resource) {
			a.namespace = "tenant-a" // a ClusterRole's grant holds in any namespace
		}
		if !allowed(ctx, t, a) {
			t.Errorf("the ServiceAccount may not %s (%s)", a, g)
		}
	}
	for _, a := range []access{
		{namespace: "", resource: "secrets", verb: "list"},
		{namespace: "", resource: "secrets", verb: "watch"},
		{namespace: "kube-system", resource: "secrets", verb: "list"},
		{namespace: "tenant-a", resource: "secrets", verb: "update"},
		{namespace: "tenant-a", resource: "secrets", verb: "patch"},
		{namespace: "tenant-a", resource: "secrets", verb: "delete"},
		{namespace: "kube-system", resource: "secrets", verb: "update"},
		{namespace: "kube-system", group: "coordination.k8s.io", resource: "leases", verb: "get", name: "kube-controller-manager"},
		{namespace: "kube-system", group: "coordination.k8s.io", resource: "leases", verb: "create"},
		{namespace: systemNS, group: "coordination.k8s.io", resource: "leases", verb: "update", name: "another-lease"},
		{namespace: systemNS, group: "coordination.k8s.io", resource: "leases", verb: "delete", name: "millwright-manager.machine.millwright.dev"},
		{namespace: "tenant-a", resource: "events", verb: "create"},
		{namespace: "tenant-a", group: mwGroup, resource: "machines", verb: "update"},
		{namespace: "tenant-a", group: mwGroup, resource: "machines", verb: "deletecollection"},
		{namespace: "tenant-a", group: mwGroup, resource: "machineclasses", verb: "update"},
		{namespace: "tenant-a", resource: "pods", verb: "get"},
		{namespace: "tenant-a", resource: "pods", verb: "create"},
		{namespace: "tenant-a", resource: "configmaps", verb: "get"},
		{namespace: "tenant-a", resource: "serviceaccounts/token", verb: "create"},
		{resource: "nodes", verb: "update"},
		{resource: "persistentvolumes", verb: "list"},
		{group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "escalate"},
		{group: "apiextensions.k8s.io", resource: "customresourcedefinitions", verb: "update"},
		{resource: "users", verb: "impersonate"},
		{url: "/metrics", verb: "get"},
	} {
		if allowed(ctx, t, a) {
			t.Errorf("the ServiceAccount may %s, which it must not", a)
		}
	}
}

// applyRBAC applies, for real, the Namespace of config/manager, all of
// config/rbac, and the binding of the sim's ClusterRole that
// config/manager keeps beside the sim sidecar (server-side apply: running
// it twice changes nothing).
func applyRBAC(ctx context.Context, t *testing.T) {
	t.Helper()
	_, manager := render(t, "manager")
	nsYAML, err := testenv.FindObject(t, manager, "Namespace", systemNS).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	simYAML, err := testenv.FindObject(t, manager, "ClusterRoleBinding", "millwright-sim").MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	rbacYAML, _ := render(t, "rbac")
	for _, doc := range [][]byte{nsYAML, rbacYAML, simYAML} {
		if out, stderr, err := runKubectl(ctx, doc, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("applying config/rbac: %v\n%s%s", err, out, stderr)
		}
	}
}
