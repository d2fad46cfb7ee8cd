package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
)

// TestWorkerNamesItsStore: a worker without ORDERSYNC_STORE_DSN silently
// created ./.ordersync/orders.db; now it warns, naming the file, and an
// error opening a store names it without the password.
func TestWorkerNamesItsStore(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("ORDERSYNC_METRICS_ADDRESS", "")
	t.Setenv("ORDERSYNC_STORE_DSN", config.DefaultStoreDSN)
	code, _, stderr := runCommand(t, nil, "worker")
	require.Equal(t, ExitFailure, code, stderr) // this test has no Temporal
	require.Contains(t, stderr, "no ORDERSYNC_STORE_DSN: using the default SQLite store")
	require.Contains(t, stderr, "store=sqlite://"+filepath.Join(dir, ".ordersync", "orders.db"))
	_, err := os.Stat(filepath.Join(dir, ".ordersync", "orders.db"))
	require.NoError(t, err)

	t.Setenv("ORDERSYNC_STORE_DSN", "sqlite://"+filepath.Join(dir, "fleet.db"))
	code, _, stderr = runCommand(t, nil, "worker")
	require.Equal(t, ExitFailure, code, stderr)
	require.NotContains(t, stderr, "default SQLite store")

	t.Setenv("ORDERSYNC_STORE_DSN", "postgres://ordersync:pa55word@127.0.0.1:1/orders?sslmode=disable")
	code, _, stderr = runCommand(t, nil, "worker")
	require.Equal(t, ExitFailure, code, stderr)
	require.Contains(t, stderr, "open store postgres://127.0.0.1:1/orders:")
	require.NotContains(t, stderr, "pa55word")
}
