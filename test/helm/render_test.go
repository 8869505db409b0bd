package helm_test

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/engine"
)

// rendered is what `helm template` would print: the crds/ files first
// (Helm installs them before the templates), then the templates.
type rendered struct {
	crds    []*unstructured.Unstructured
	objects []*unstructured.Unstructured
}

// render renders the chart with values over its defaults, as release
// "millwright" in namespace ns.
func render(t *testing.T, ns string, values map[string]any) rendered {
	t.Helper()
	files, err := tryRender(ns, values)
	if err != nil {
		t.Fatal(err)
	}
	var r rendered
	for _, crd := range millwright.CRDObjects() {
		r.crds = append(r.crds, decode(t, crd.Filename, crd.File.Data)...)
	}
	// In the order of their file names, as Helm sorts them by kind anyway.
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		r.objects = append(r.objects, decode(t, name, []byte(files[name]))...)
	}
	return r
}

// tryRender renders the templates as render does, returning the error of
// values the chart refuses.
func tryRender(ns string, values map[string]any) (map[string]string, error) {
	opts := common.ReleaseOptions{Name: "millwright", Namespace: ns, Revision: 1, IsInstall: true}
	vals, err := util.ToRenderValues(millwright, values, opts, caps)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(millwright, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering: %w", err)
	}
	return files, nil
}

// decode decodes a stream of YAML documents into objects.
func decode(t *testing.T, name string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			return objs
		} else if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(u.Object) == 0 {
			continue // an empty document (a template whose condition is off)
		}
		objs = append(objs, u)
	}
}

// warningRecorder keeps the API server's warnings (Pod Security,
// deprecations, unknown fields).
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

// take returns the warnings since the last take.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	msgs := w.msgs
	w.msgs = nil
	return msgs
}
