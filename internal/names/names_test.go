package names

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestJoinFitsAndStaysUnique(t *testing.T) {
	const max = MaxLabelValue
	hash := "7d9f8b6c5x" // a template hash at its longest
	for n := 1; n <= 253; n++ {
		base := strings.Repeat("d", n)
		got := Join(base, hash, max)
		if len(got) > max {
			t.Fatalf("Join(%d characters) = %q: %d characters, more than %d", n, got, len(got), max)
		}
		if errs := validation.IsValidLabelValue(got); len(errs) > 0 {
			t.Fatalf("Join(%d characters) = %q: not a label value: %v", n, got, errs)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("Join(%d characters) = %q: not an object name: %v", n, got, errs)
		}
		if !strings.HasSuffix(got, "-"+hash) {
			t.Fatalf("Join(%d characters) = %q lost its suffix", n, got)
		}
		if short := n+1+len(hash) <= max; short != (got == base+"-"+hash) {
			t.Fatalf("Join(%d characters) = %q: a name that fits must stay as it is, one that does not must change", n, got)
		}
	}
	// At the boundary: 52 + 1 + 10 = 63 fits, 53 does not.
	if got := Join(strings.Repeat("a", 52), hash, max); len(got) != 63 || !strings.HasPrefix(got, strings.Repeat("a", 52)) {
		t.Errorf("a name of exactly 63 characters was changed: %q", got)
	}
	// Bases that share everything Join keeps still differ.
	a, b := strings.Repeat("x", 70)+"-one", strings.Repeat("x", 70)+"-two"
	if Join(a, hash, max) == Join(b, hash, max) {
		t.Errorf("two long bases with a common prefix give the same name %q", Join(a, hash, max))
	}
	// A cut that ends in a dash does not make a double dash.
	if got := Join(strings.Repeat("ab-", 30), hash, max); strings.Contains(got, "--") {
		t.Errorf("Join = %q: a double dash", got)
	}
}
