// Package pgtest gives tests a PostgreSQL schema of their own and a role
// limited to it, as a production store's role is (docs: deploy/README,
// "PostgreSQL store roles"): the role may use the schema but not create in
// it, and gets table rights only when the test grants them.
package pgtest

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

// Restricted is a fresh schema and a login role with USAGE on it only.
type Restricted struct {
	// Admin is a connection as ORDERSYNC_TEST_POSTGRES_DSN's user, the
	// schema's owner, for grants.
	Admin  *pgx.Conn
	Schema string
	Role   string
	// OwnerDSN connects as the owner with the schema as search_path (what
	// `ordersync migrate` runs with); RoleDSN as the restricted role.
	OwnerDSN string
	RoleDSN  string
}

// NewRestricted makes a schema and a role named after prefix, dropped when
// the test ends; it skips the test without ORDERSYNC_TEST_POSTGRES_DSN.
func NewRestricted(t *testing.T, prefix string) *Restricted {
	t.Helper()
	base := os.Getenv("ORDERSYNC_TEST_POSTGRES_DSN")
	if base == "" {
		t.Skip("ORDERSYNC_TEST_POSTGRES_DSN is not set")
	}
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	r := &Restricted{Schema: prefix + "_schema_" + suffix, Role: prefix + "_rw_" + suffix}
	conn, err := pgx.Connect(ctx, base)
	require.NoError(t, err)
	r.Admin = conn
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = conn.Exec(ctx, "DROP SCHEMA "+r.Schema+" CASCADE")
		_, _ = conn.Exec(ctx, "DROP OWNED BY "+r.Role)
		_, _ = conn.Exec(ctx, "DROP ROLE "+r.Role)
		_ = conn.Close(ctx)
	})
	for _, stmt := range []string{"CREATE SCHEMA " + r.Schema, "CREATE ROLE " + r.Role + " LOGIN NOSUPERUSER PASSWORD 'rw'",
		"GRANT USAGE ON SCHEMA " + r.Schema + " TO " + r.Role} {
		_, err := conn.Exec(ctx, stmt)
		require.NoError(t, err, stmt)
	}
	u, err := url.Parse(base)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", r.Schema)
	u.RawQuery = q.Encode()
	r.OwnerDSN = u.String()
	u.User = url.UserPassword(r.Role, "rw")
	r.RoleDSN = u.String()
	return r
}

// GrantTables gives the role SELECT, INSERT, UPDATE and DELETE on every
// table the schema holds now, as an operator does after a migration.
func (r *Restricted) GrantTables(t *testing.T) {
	t.Helper()
	_, err := r.Admin.Exec(context.Background(), "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+r.Schema+" TO "+r.Role)
	require.NoError(t, err)
}
