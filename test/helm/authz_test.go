package helm_test

import (
	"context"
	"fmt"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// checkAccess asks the API server, once the release is applied, what its
// ServiceAccounts may do: the manager holds its Lease in the release's
// namespace and bootstrap-token Secrets in kube-system, and the driver's
// ClusterRole goes to the driver's identity only — a separate driver's
// permissions are not the manager's.
func checkAccess(ctx context.Context, t *testing.T, ns string, values map[string]any) {
	t.Helper()
	type req struct {
		sa                                     string
		namespace, group, resource, verb, name string
		want                                   bool
	}
	manager, driver := "millwright-manager", "millwright-driver"
	reqs := []req{
		{sa: manager, namespace: ns, group: "coordination.k8s.io", resource: "leases", verb: "update", name: "millwright-manager.machine.millwright.dev", want: true},
		{sa: manager, namespace: ns, group: "coordination.k8s.io", resource: "leases", verb: "update", name: "another-lease", want: false},
		{sa: manager, namespace: "kube-system", resource: "secrets", verb: "delete", want: true},
		{sa: manager, namespace: ns, resource: "secrets", verb: "list", want: false},
		{sa: manager, group: "machine.millwright.dev", resource: "machines", verb: "create", namespace: "tenant", want: true},
	}
	// Secrets are read in every namespace, or with watchNamespace only
	// there and in kube-system (a bootstrap token read back); created
	// outside kube-system only by the token bootstrap provider.
	provider := value(values, "manager.tokenBootstrapProvider") == true
	if w, _ := value(values, "manager.watchNamespace").(string); w != "" {
		reqs = append(reqs,
			req{sa: manager, namespace: w, resource: "secrets", verb: "get", want: true},
			req{sa: manager, namespace: "kube-system", resource: "secrets", verb: "get", want: true},
			req{sa: manager, namespace: "tenant", resource: "secrets", verb: "get", want: false},
			req{sa: manager, namespace: w, resource: "secrets", verb: "create", want: provider},
			req{sa: manager, namespace: "tenant", resource: "secrets", verb: "create", want: false})
	} else {
		reqs = append(reqs,
			req{sa: manager, namespace: "tenant", resource: "secrets", verb: "get", want: true},
			req{sa: manager, namespace: "tenant", resource: "secrets", verb: "create", want: provider})
	}
	reqs = append(reqs, req{sa: manager, namespace: "kube-system", resource: "secrets", verb: "patch", want: provider})
	// The sim's ClusterRole lets it create Nodes; the manager's does not.
	switch value(values, "driver.mode") {
	case "sidecar":
		reqs = append(reqs, req{sa: manager, resource: "nodes", verb: "create", want: true})
	case "deployment":
		reqs = append(reqs,
			req{sa: driver, resource: "nodes", verb: "create", want: true},
			req{sa: driver, group: "machine.millwright.dev", resource: "machines", verb: "create", namespace: "tenant", want: false},
			req{sa: manager, resource: "nodes", verb: "create", want: false})
	case "none":
		reqs = append(reqs, req{sa: manager, resource: "nodes", verb: "create", want: false})
	}
	for _, r := range reqs {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   fmt.Sprintf("system:serviceaccount:%s:%s", ns, r.sa),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: r.namespace, Group: r.group, Resource: r.resource, Verb: r.verb, Name: r.name,
			},
		}}
		if err := env.Client.Create(ctx, sar); err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		if sar.Status.Allowed != r.want {
			t.Errorf("%s may %s %s.%s %q in %q: %v, want %v", r.sa, r.verb, r.resource, r.group, r.name, r.namespace, sar.Status.Allowed, r.want)
		}
	}
}
