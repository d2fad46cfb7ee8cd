package api_test

import (
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAPIDoesNotImportConfig: the wire contract takes nothing from the
// platforms file's schema. Settings and their types come from
// internal/tuning, which must not reach config either. No file is an
// exception: destinations travel by reference too (DestinationSettings).
func TestAPIDoesNotImportConfig(t *testing.T) {
	const cfg = "github.com/ordersync/ordersync/config"
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			require.NotEqual(t, cfg, path, "%s imports config", f)
		}
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/ordersync/ordersync/internal/tuning").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, strings.Fields(string(out)), cfg, "internal/tuning depends on config")
}
