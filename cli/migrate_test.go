package cli

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The store's role needs only SELECT, INSERT, UPDATE and DELETE once
// `ordersync migrate` has run with the schema's owner (issue 24, item 9):
// before, `changes` (and `worker`) failed at every open with "create
// schema_migrations: permission denied". Before the migration the error
// says what to do.
func TestMigrateThenARestrictedRoleRunsChanges(t *testing.T) {
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("ORDERSYNC_TEST_POSTGRES_DSN is not set")
	}
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	schema, role := "cli_migrate_"+suffix, "cli_rw_"+suffix
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, stmt := range []string{"CREATE SCHEMA " + schema, "CREATE ROLE " + role + " LOGIN NOSUPERUSER PASSWORD 'rw'",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role} {
		_, err := conn.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_, _ = conn.Exec(context.Background(), "DROP OWNED BY "+role)
		_, _ = conn.Exec(context.Background(), "DROP ROLE "+role)
	})
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	owner := u.String()
	u.User = url.UserPassword(role, "rw")
	rw := u.String()

	t.Setenv("ORDERSYNC_STORE_DSN", rw)
	code, _, stderr := runCommand(t, nil, "changes", "-o", "jsonl")
	require.NotZero(t, code)
	require.Contains(t, stderr, "ordersync migrate")
	require.NotContains(t, stderr, "rw@", "no password in the error")

	t.Setenv("ORDERSYNC_STORE_DSN", owner)
	code, out, stderr := runCommand(t, nil, "migrate")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "store schema up to date")
	_, err = conn.Exec(ctx, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+schema+" TO "+role)
	require.NoError(t, err)

	t.Setenv("ORDERSYNC_STORE_DSN", rw)
	code, out, stderr = runCommand(t, nil, "changes", "-o", "jsonl")
	require.Zero(t, code, stderr)
	require.Empty(t, out)
}
