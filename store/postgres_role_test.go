package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
)

// restrictedRole creates a login role for the test and returns a DSN for
// it with the same search_path as dsn. grant is run for it in dsn's schema.
func restrictedRole(t *testing.T, dsn string, grants ...string) string {
	t.Helper()
	ctx := context.Background()
	var b [4]byte
	_, _ = rand.Read(b[:])
	role := "ordersync_rw_" + hex.EncodeToString(b[:])
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer admin.Close(ctx)
	var schema string
	require.NoError(t, admin.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema))
	_, err = admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN NOSUPERUSER PASSWORD 'rw'")
	require.NoError(t, err)
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, os.Getenv(postgresDSNEnv))
		if err != nil {
			return
		}
		defer admin.Close(ctx)
		_, _ = admin.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = admin.Exec(ctx, "DROP ROLE "+role)
	})
	// Only USAGE on the schema: no CREATE (PostgreSQL 15 and later grant
	// no CREATE on public either).
	for _, g := range append([]string{"GRANT USAGE ON SCHEMA " + schema + " TO "}, grants...) {
		_, err := admin.Exec(ctx, g+role)
		require.NoError(t, err, g)
	}
	_, err = admin.Exec(ctx, "REVOKE CREATE ON SCHEMA "+schema+" FROM PUBLIC")
	require.NoError(t, err)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.User = url.UserPassword(role, "rw")
	return u.String()
}

// A role with SELECT, INSERT, UPDATE and DELETE on the migrated tables,
// and no CREATE on the schema, opens the store, stores, reads and
// acknowledges changes: before, every open ran CREATE TABLE IF NOT EXISTS
// schema_migrations and failed ("permission denied for schema"), so
// `worker` and even `changes` could not start (issue 24, item 9). On a
// store that needs migrating, the error names the pending migrations and
// says how to run them with a privileged role.
func TestPostgresRestrictedRoleOpensAMigratedStore(t *testing.T) {
	b := backends[1]
	skipUnavailable(t, b)
	ctx := context.Background()

	fresh := b.fresh(t)
	rw := restrictedRole(t, fresh)
	_, err := Open(ctx, rw)
	require.Error(t, err, "an unmigrated schema needs CREATE")
	for _, want := range []string{"permission denied", "0001_orders.sql", "ordersync migrate", "CREATE on the schema", "SELECT, INSERT, UPDATE, DELETE"} {
		require.Contains(t, err.Error(), want)
	}
	require.NotContains(t, err.Error(), "'rw'")

	migrated := b.fresh(t)
	openStore(t, migrated) // migrates, as `ordersync migrate` does with the owner's role
	var schema string
	conn, err := pgx.Connect(ctx, migrated)
	require.NoError(t, err)
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema))
	conn.Close(ctx)
	rw = restrictedRole(t, migrated, "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+schema+" TO ")
	s := openStore(t, rw)
	res := upsert(t, s, version("p", "1", 1), version("p", "2", 1))
	require.Equal(t, 2, res.Inserted)
	changes, err := s.Changes(ctx, ChangeQuery{After: 0, Limit: 10})
	require.NoError(t, err)
	require.Len(t, changes, 2)
	require.NoError(t, s.AckChanges(ctx, "oms", 2))
	require.Equal(t, "v1", get(t, s, "p", "2").Status)
	// The registry's writes (its counter row, NOTIFY) need no more rights.
	reg, ok := RegistryOf(s)
	require.True(t, ok)
	rev, err := reg.Put(ctx, accounts.Entry{Class: accounts.ClassPlatform, Name: "shop", State: accounts.Active, Settings: []byte(`{}`)}, 0)
	require.NoError(t, err)
	require.Equal(t, int64(1), rev)
}
