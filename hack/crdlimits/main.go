// Command crdlimits adds to generated CRDs the string bounds controller-gen
// has no marker for: the length of a label value inside a map of labels
// (the schema's additionalProperties), and the core API's limits on the
// fields of the core types Millwright embeds (corev1.Taint,
// corev1.SecretReference), whose Go declarations carry no markers. With
// them the API server refuses an over-long value as the core API does,
// and can afford the CEL rules that check each value's characters:
// without a bound a rule's estimated cost is far over the budget and the
// CRD is refused.
//
// Usage: go run ./hack/crdlimits DIR (rewrites every *.yaml in DIR).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// labelMaps are the properties holding label maps.
var labelMaps = map[string]bool{"labels": true, "matchLabels": true}

// The core API's limits: a label value or a DNS label; a qualified name
// (a 253-character DNS subdomain prefix, '/', a 63-character name); a
// DNS subdomain.
const (
	maxLabelValue    = 63
	maxQualifiedName = 253 + 1 + 63
	maxSubdomain     = 253
)

// coreFields bounds the fields of embedded core types, by the property
// that holds them: a list of taints, or a Secret reference.
var coreFields = map[string]struct {
	items  bool // the bounds apply to the list's items
	bounds map[string]int
}{
	"taints":               {items: true, bounds: map[string]int{"key": maxQualifiedName, "value": maxLabelValue, "effect": len("PreferNoSchedule")}},
	"secretRef":            {bounds: map[string]int{"name": maxSubdomain, "namespace": maxLabelValue}},
	"credentialsSecretRef": {bounds: map[string]int{"name": maxSubdomain, "namespace": maxLabelValue}},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdlimits DIR")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*.yaml"))
	if err != nil {
		fatal(err)
	}
	for _, f := range files {
		if err := rewrite(f); err != nil {
			fatal(fmt.Errorf("%s: %w", f, err))
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "crdlimits:", err)
	os.Exit(1)
}

// rewrite bounds the label maps of one CRD file; controller-gen writes
// sorted keys after a "---" line, so the round trip changes nothing else.
func rewrite(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return err
	}
	walk(crd)
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// walk visits every schema node; in each "properties" it bounds the
// string values of the label maps and the fields of core types.
func walk(node any) {
	switch n := node.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok {
			for name, p := range props {
				schema, _ := p.(map[string]any)
				values, _ := schema["additionalProperties"].(map[string]any)
				if labelMaps[name] && values["type"] == "string" {
					values["maxLength"] = maxLabelValue
				}
				if core, ok := coreFields[name]; ok {
					if core.items {
						schema, _ = schema["items"].(map[string]any)
					}
					fields, _ := schema["properties"].(map[string]any)
					for field, limit := range core.bounds {
						if f, ok := fields[field].(map[string]any); ok && f["type"] == "string" {
							f["maxLength"] = limit
						}
					}
				}
			}
		}
		for _, v := range n {
			walk(v)
		}
	case []any:
		for _, v := range n {
			walk(v)
		}
	}
}
