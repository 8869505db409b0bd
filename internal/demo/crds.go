package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitEstablished waits until every CustomResourceDefinition of
// Millwright's groups is Established and its kind in the API server's
// discovery: the manager starts its informers at once and exits on a kind
// discovery does not list yet, which a loaded machine shows (a CRD took
// seconds to be served after it was created there).
func waitEstablished(ctx context.Context, c client.Client) error {
	var pending []string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("apiextensions.k8s.io/v1")
		list.SetKind("CustomResourceDefinitionList")
		if err := c.List(ctx, list); err != nil {
			return false, nil // the API server may be busy; try again
		}
		pending = pending[:0]
		for _, crd := range list.Items {
			if !strings.HasSuffix(crd.GetName(), "millwright.dev") {
				continue
			}
			if !established(crd) || !discovered(c, crd) {
				pending = append(pending, crd.GetName())
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("CRDs not Established: %v: %w", pending, err)
	}
	return nil
}

func established(crd unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// discovered reports whether the API server's discovery has the CRD's
// kind, as the manager's REST mapper will look it up.
func discovered(c client.Client, crd unstructured.Unstructured) bool {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	_, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind})
	return err == nil
}
