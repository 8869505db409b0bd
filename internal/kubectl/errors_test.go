package kubectl_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// verbs is every verb on an object named "nope", which does not exist.
var verbs = [][]string{
	{"describe", "machine", "nope"},
	{"drain", "status", "nope"},
	{"rollout", "status", "nope"},
	{"rollout", "history", "nope"},
	{"rollout", "undo", "nope"},
	{"rollout", "pause", "nope"},
	{"rollout", "resume", "nope"},
	{"rollout", "restart", "nope"},
	{"preserve", "nope"},
	{"unpreserve", "nope"},
	{"freeze", "machinedeployment/nope"},
	{"unfreeze", "machineset/nope"},
}

// TestErrorPaths: each verb on an unknown object says it is not found;
// each verb run as a user without RBAC (impersonated with --as, as an
// administrator may) says it is forbidden, get included; wrong arguments
// are refused before anything is read.
func TestErrorPaths(t *testing.T) {
	const ns = "errors"
	namespace(t, ns)
	c := newCLI(t, ns)
	for _, args := range verbs {
		t.Run("not found/"+strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			c.fails(`"nope" not found`, args...)
		})
		t.Run("forbidden/"+strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			c.fails("forbidden", append([]string{"--as", "nobody"}, args...)...)
		})
	}
	t.Run("forbidden/get", func(t *testing.T) {
		c.fails("forbidden", "--as", "nobody", "get")
	})
	// A user who may read Machines but not Nodes, pods or Events still gets
	// an error from get (its table needs the Nodes), not a half table.
	t.Run("forbidden/get nodes", func(t *testing.T) {
		create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "machines-reader", Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"machine.millwright.dev"}, Resources: []string{"machines"}, Verbs: []string{"get", "list"}}}})
		create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "machines-reader"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "reader", APIGroup: "rbac.authorization.k8s.io"}}})
		machine(t, ns, "m", "small", "", "", "", nil)
		c.fails(`nodes is forbidden: User "reader"`, "--as", "reader", "get")
		// describe reads no Node for a Machine without one, and skips the
		// Events the user may not read.
		if out := c.ok("--as", "reader", "describe", "machine", "m"); !strings.Contains(out, "created") {
			t.Errorf("describe as a Machine reader:\n%s", out)
		}
	})
	for _, bad := range []struct {
		want string
		args []string
	}{
		{"unable to match a printer", []string{"get", "-o", "name"}},
		{"describe knows Machines only", []string{"describe", "node", "x"}},
		{"only MachineDeployments and MachineSets are frozen", []string{"freeze", "machine/x"}},
		{"name a machinedeployment/NAME or machineset/NAME", []string{"freeze", "x"}},
		{"rollout works on MachineDeployments only", []string{"rollout", "status", "machineset/x"}},
	} {
		t.Run("bad/"+strings.Join(bad.args, " "), func(t *testing.T) { c.fails(bad.want, bad.args...) })
	}
}
