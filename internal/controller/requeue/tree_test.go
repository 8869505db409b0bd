package requeue

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/internal/repo"
)

// resultLiteral reports whether e is a reconcile.Result (or ctrl.Result)
// literal, and which fields it sets.
func resultLiteral(e ast.Expr) (map[string]bool, bool) {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, false
	}
	sel, ok := lit.Type.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Result" {
		return nil, false
	}
	fields := map[string]bool{}
	for _, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok {
				fields[id.Name] = true
			}
		}
	}
	return fields, true
}

// No reconciler in the tree asks for the deprecated Requeue: true (an
// unspecified delay: the rate limiter's), nor returns a RequeueAfter beside
// an error, which controller-runtime ignores: every requeue says its delay.
func TestReconcilersRequeueWithADelayTheyMeanIt(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var problems []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if fields, ok := resultLiteral(n); ok && fields["Requeue"] {
					problems = append(problems, fset.Position(n.Pos()).String()+": Requeue: true; use RequeueAfter with the delay the path needs")
				}
			case *ast.ReturnStmt:
				if len(n.Results) != 2 {
					return true
				}
				fields, ok := resultLiteral(n.Results[0])
				if id, isIdent := n.Results[1].(*ast.Ident); ok && fields["RequeueAfter"] && !(isIdent && id.Name == "nil") {
					problems = append(problems, fset.Position(n.Pos()).String()+": RequeueAfter returned with an error, which controller-runtime ignores")
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
