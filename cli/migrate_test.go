package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/pgtest"
)

// The store's role needs only SELECT, INSERT, UPDATE and DELETE once
// `ordersync migrate` has run with the schema's owner (issue 24, item 9):
// before, `changes` (and `worker`) failed at every open with "create
// schema_migrations: permission denied". Before the migration the error
// says what to do.
func TestMigrateThenARestrictedRoleRunsChanges(t *testing.T) {
	r := pgtest.NewRestricted(t, "cli_migrate")
	owner, rw := r.OwnerDSN, r.RoleDSN

	t.Setenv("ORDERSYNC_STORE_DSN", rw)
	code, _, stderr := runCommand(t, nil, "changes", "-o", "jsonl")
	require.NotZero(t, code)
	require.Contains(t, stderr, "ordersync migrate")
	require.NotContains(t, stderr, "rw@", "no password in the error")

	t.Setenv("ORDERSYNC_STORE_DSN", owner)
	code, out, stderr := runCommand(t, nil, "migrate")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "store schema up to date")
	r.GrantTables(t)

	t.Setenv("ORDERSYNC_STORE_DSN", rw)
	code, out, stderr = runCommand(t, nil, "changes", "-o", "jsonl")
	require.Zero(t, code, stderr)
	require.Empty(t, out)
}
