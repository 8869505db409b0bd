package api_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// spreadDeployment spreads validDeployment over zones (each a name, or a
// map with name and weight) under policy ("" leaves it to the default).
func spreadDeployment(t *testing.T, policy string, zones ...any) *unstructured.Unstructured {
	u := object(t, validDeployment)
	fd := map[string]any{}
	if policy != "" {
		fd["policy"] = policy
	}
	var list []any
	for _, z := range zones {
		if name, ok := z.(string); ok {
			z = map[string]any{"name": name}
		}
		list = append(list, z)
	}
	if list != nil {
		fd["zones"] = list
	}
	set(u, fd, "spec", "failureDomains")
	return u
}

// TestInvalidFailureDomainsAreRefused: the bad input of issue 17 items 1
// and 5 that admission can see is refused with a message naming the field
// (a zone the class cannot create in is the controller's to report: the
// class may be created after the deployment).
func TestInvalidFailureDomainsAreRefused(t *testing.T) {
	weighted := func(name string, w any) map[string]any { return map[string]any{"name": name, "weight": w} }
	cases := []struct {
		name string
		u    func(t *testing.T) *unstructured.Unstructured
		want string
	}{
		{"weights under Even", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Even", weighted("a", 2), "b")
		}, "failureDomains.zones[].weight is only read under policy Weighted"},
		{"weights under the default policy", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "", weighted("a", 2), "b")
		}, "failureDomains.zones[].weight is only read under policy Weighted"},
		{"a zone name that is no label value", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Even", "zone a")
		}, "failureDomains.zones[].name must be a valid label value"},
		{"an empty zone name", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Even", "")
		}, "spec.failureDomains.zones[0].name"},
		{"a zone listed twice", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Even", "a", "b", "a")
		}, "Duplicate value"},
		{"an unknown policy", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Random", "a")
		}, "spec.failureDomains.policy: Unsupported value"},
		{"a negative weight", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Weighted", weighted("a", -1))
		}, "spec.failureDomains.zones[0].weight"},
		{"a weight over 1000", func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Weighted", weighted("a", 1001))
		}, "spec.failureDomains.zones[0].weight"},
		{"a class zone that is no label value", func(t *testing.T) *unstructured.Unstructured {
			u := object(t, validClass)
			set(u, map[string]any{"zones": []any{"local-a", "local b"}}, "spec", "nodeTemplate")
			return u
		}, "zones must be valid label values"},
		{"a class zone listed twice", func(t *testing.T) *unstructured.Unstructured {
			u := object(t, validClass)
			set(u, map[string]any{"zones": []any{"local-a", "local-a"}}, "spec", "nodeTemplate")
			return u
		}, "Duplicate value"},
		{"a set's placement without zones", func(t *testing.T) *unstructured.Unstructured {
			u := object(t, validSet)
			set(u, map[string]any{"zones": []any{}}, "spec", "failureDomains")
			return u
		}, "spec.failureDomains.zones"},
		{"a set's rebalance surge of 2", func(t *testing.T) *unstructured.Unstructured {
			u := object(t, validSet)
			set(u, map[string]any{"zones": []any{map[string]any{"name": "a", "weight": 1}}, "rebalanceSurge": 2}, "spec", "failureDomains")
			return u
		}, "spec.failureDomains.rebalanceSurge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectRefused(t, create(t, tc.u(t)), tc.want)
		})
	}
}

// TestValidFailureDomainsAreAccepted: the forms the docs show are accepted,
// and the policy defaults to Even.
func TestValidFailureDomainsAreAccepted(t *testing.T) {
	weighted := func(name string, w any) map[string]any { return map[string]any{"name": name, "weight": w} }
	for name, u := range map[string]func(t *testing.T) *unstructured.Unstructured{
		"the class's zones": func(t *testing.T) *unstructured.Unstructured { return spreadDeployment(t, "") },
		"three zones, Even": func(t *testing.T) *unstructured.Unstructured { return spreadDeployment(t, "Even", "a", "b", "c") },
		"weights, one of 0": func(t *testing.T) *unstructured.Unstructured {
			return spreadDeployment(t, "Weighted", weighted("a", 2), weighted("b", 0), "c")
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := u(t)
			if err := create(t, obj); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if p, _, _ := unstructured.NestedString(obj.Object, "spec", "failureDomains", "policy"); p == "" {
				t.Errorf("no policy defaulted: %v", obj.Object["spec"])
			}
		})
	}
}
