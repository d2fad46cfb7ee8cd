package workflows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChangeIDsLiveInVersionsGo: workflow code asks workflow.GetVersion
// only for change IDs declared in versions.go, by name, and every ID
// declared there is asked somewhere.
func TestChangeIDsLiveInVersionsGo(t *testing.T) {
	fset := token.NewFileSet()
	declared := map[string]bool{}
	f, err := parser.ParseFile(fset, "versions.go", nil, 0)
	require.NoError(t, err)
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					declared[n.Name] = false
				}
			}
		}
	}
	require.NotEmpty(t, declared)

	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "GetVersion" || len(call.Args) < 2 {
				return true
			}
			id, ok := call.Args[1].(*ast.Ident)
			require.True(t, ok, "%s: GetVersion names its change ID by a constant of versions.go", fset.Position(call.Pos()))
			_, known := declared[id.Name]
			require.True(t, known, "%s: GetVersion with a change ID not declared in versions.go", fset.Position(call.Pos()))
			declared[id.Name] = true
			return true
		})
	}
	for id, used := range declared {
		require.True(t, used, "%s is declared in versions.go but never asked", id)
	}
}
