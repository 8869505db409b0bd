package controllertest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoConstantWaitConditions finds, in every test of the module, a call
// of an Eventually or Consistently helper whose condition is a constant
// (func() (bool, error) { return true, nil }). Eventually returns at once
// on such a condition, so a loop "waiting a tick" with it is a busy loop of
// reads, and Consistently on one checks nothing.
func TestNoConstantWaitConditions(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "hack" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isWaitHelper(call.Fun) {
				return true
			}
			for _, arg := range call.Args {
				if lit, ok := arg.(*ast.FuncLit); ok && constantBody(lit.Body) {
					t.Errorf("%s: a wait helper with a constant condition: Eventually returns at once, Consistently checks nothing; wait for a real condition",
						fset.Position(call.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func isWaitHelper(fun ast.Expr) bool {
	var name string
	switch f := fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	}
	return name == "Eventually" || name == "Consistently"
}

// constantBody reports whether body is a lone return of constants.
func constantBody(body *ast.BlockStmt) bool {
	if len(body.List) != 1 {
		return false
	}
	ret, ok := body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) == 0 {
		return false
	}
	for _, r := range ret.Results {
		switch v := r.(type) {
		case *ast.BasicLit:
		case *ast.Ident:
			if v.Name != "true" && v.Name != "false" && v.Name != "nil" {
				return false
			}
		default:
			return false
		}
	}
	return true
}
