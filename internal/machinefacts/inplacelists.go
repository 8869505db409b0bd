package machinefacts

import (
	"slices"
	"strings"
)

// InPlaceNames reads a MachineSet's in-place list (the InPlaceMovingOut or
// InPlaceMovingIn annotation: Machine names, comma-separated), sorted and
// without duplicates. The deployment writes the lists; the set reads
// them.
func InPlaceNames(annotation string) []string {
	var out []string
	for _, n := range strings.Split(annotation, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// JoinInPlaceNames writes an in-place list: sorted, comma-separated, "" for none.
func JoinInPlaceNames(names []string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}
