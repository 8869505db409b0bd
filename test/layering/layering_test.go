// Package layering checks that imports point one way (issue 35, item 4):
// each controller talks to the others only through the API objects, and
// what a Machine's fields mean sits in pure packages below every
// controller (docs/architecture.md, "Packages").
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/repo"
)

const module = "github.com/millwright-dev/millwright/"

// controllers are the packages under internal/controller that reconcile a
// kind (with their subpackages, such as machinedeployment/plan): none
// imports another.
var controllers = []string{
	"machine", "machineclass", "machinedeployment", "machinedisruptionbudget",
	"machinehealthcheck", "machineset", "safety",
}

// helpers are the packages under internal/controller below every
// controller: any controller may import them, and they import no
// controller.
var helpers = []string{
	"changed",     // what a reconcile kept, and the objects changed since
	"classlimit",  // the per-class create and delete slots
	"classsecret", // what a MachineClass hands its driver
	"enqueue",     // mapping events to requests
	"finalizer",   // writing a finalizer at once
	"ownerindex",  // the cache index of objects by their controller
	"requeue",     // requeue delays
	"statuspace",  // when each object's status was last written
}

// harnesses are the packages under internal/controller that only tests
// import: they wire controllers together, so they may import any.
var harnesses = []string{"controllertest"}

// pure packages decide from the API objects (the disruption gate also
// writes a budget's status, through internal/patch): they import no
// controller and not the driver SDK (a driver's facts that the API
// records, such as an error code's name, are machinefacts').
var pure = []string{
	"internal/machinefacts",
	"internal/disruption",
	"internal/spread",
	"internal/controller/machinedeployment/plan",
}

// below are the other packages under the controllers that must import
// none of them.
var below = []string{"internal/patch", "internal/ownwrites"}

// crossings are the imports between controllers that remain, each with
// why. The test fails when one is no longer made, so the list only
// shrinks.
var crossings = map[[2]string]string{}

// imports maps each package of the repository (its path below the module)
// to what it imports from the module, from its non-test files: a test may
// start several controllers to check how they meet.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(dir)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, spec := range f.Imports {
			p, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[pkg], rest) {
				out[pkg] = append(out[pkg], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 50 {
		t.Fatalf("found only %d packages under internal/: the check would prove nothing", len(out))
	}
	return out
}

// under reports the package of internal/controller that pkg is or is in
// ("machinedeployment" for internal/controller/machinedeployment/plan),
// or "" when pkg is not under internal/controller.
func under(pkg string) string {
	rest, ok := strings.CutPrefix(pkg, "internal/controller/")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

// within reports whether pkg is p or one of its subpackages.
func within(pkg, p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") }

func TestControllersImportNoOtherController(t *testing.T) {
	seen := map[[2]string]bool{}
	for pkg, imps := range imports(t) {
		from := under(pkg)
		switch {
		case from == "":
			continue
		case slices.Contains(harnesses, from):
			continue
		case !slices.Contains(controllers, from) && !slices.Contains(helpers, from):
			t.Errorf("%s is neither a controller nor a helper below them: list it in this test", pkg)
			continue
		}
		for _, imp := range imps {
			to := under(imp)
			if to == "" || to == from || slices.Contains(helpers, to) {
				continue
			}
			if slices.Contains(helpers, from) {
				t.Errorf("%s (a helper below the controllers) imports %s", pkg, imp)
				continue
			}
			if _, ok := crossings[[2]string{from, to}]; ok {
				seen[[2]string{from, to}] = true
				continue
			}
			t.Errorf("%s imports %s: controllers talk to each other only through the API objects; move the fact they share below them (internal/machinefacts)", pkg, imp)
		}
	}
	for c, why := range crossings {
		if !seen[c] {
			t.Errorf("the %s controller no longer imports %s (%s): drop it from crossings", c[0], c[1], why)
		}
	}
}

func TestPurePackagesImportNoControllerNorDriver(t *testing.T) {
	all := imports(t)
	for _, p := range append(slices.Clone(pure), below...) {
		if _, ok := all[p]; !ok {
			t.Errorf("%s has no Go files: update this test", p)
		}
	}
	for pkg, imps := range all {
		isPure := slices.ContainsFunc(pure, func(p string) bool { return within(pkg, p) })
		isBelow := slices.ContainsFunc(below, func(p string) bool { return within(pkg, p) })
		if !isPure && !isBelow {
			continue
		}
		for _, imp := range imps {
			// A pure package may be under a controller's directory (the
			// deployment's planner): its own subpackages are not the
			// controller.
			if slices.ContainsFunc(pure, func(p string) bool { return within(imp, p) }) {
				continue
			}
			switch {
			case within(imp, "internal/controller"):
				t.Errorf("%s imports %s: it sits below every controller", pkg, imp)
			case isPure && within(imp, "pkg/driver"):
				t.Errorf("%s imports %s: a pure package reads the API objects, not the driver SDK", pkg, imp)
			}
		}
	}
}
