package quota_test

import (
	"context"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/quota"
)

// A worker's role with only SELECT, INSERT, UPDATE and DELETE on the
// tables (no CREATE on the schema) opens the slots once the table exists:
// before, every open ran CREATE TABLE IF NOT EXISTS and was refused
// (issue 24, item 9).
func TestOpenWithARoleThatCannotCreate(t *testing.T) {
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("ORDERSYNC_TEST_POSTGRES_DSN is not set")
	}
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	schema, role := "quota_role_"+suffix, "quota_rw_"+suffix
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, stmt := range []string{"CREATE SCHEMA " + schema, "CREATE ROLE " + role + " LOGIN NOSUPERUSER PASSWORD 'rw'",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role} {
		_, err = conn.Exec(ctx, stmt)
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

	_, err = quota.Open(ctx, rw)
	require.ErrorContains(t, err, "ordersync migrate", "no table yet, and this role may not create it")

	s, err := quota.Open(ctx, owner) // as `ordersync migrate` does
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = conn.Exec(ctx, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+schema+" TO "+role)
	require.NoError(t, err)
	s, err = quota.Open(ctx, rw)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Reserve(ctx, "k", 10, 1, time.Second)
	require.NoError(t, err)
}
