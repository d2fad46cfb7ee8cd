package quota_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/pgtest"
	"github.com/ordersync/ordersync/internal/quota"
)

// A worker's role with only SELECT, INSERT, UPDATE and DELETE on the
// tables (no CREATE on the schema) opens the slots once the table exists:
// before, every open ran CREATE TABLE IF NOT EXISTS and was refused
// (issue 24, item 9).
func TestOpenWithARoleThatCannotCreate(t *testing.T) {
	r := pgtest.NewRestricted(t, "quota_role")
	ctx := context.Background()
	owner, rw := r.OwnerDSN, r.RoleDSN

	_, err := quota.Open(ctx, rw)
	require.ErrorContains(t, err, "ordersync migrate", "no table yet, and this role may not create it")

	s, err := quota.Open(ctx, owner) // as `ordersync migrate` does
	require.NoError(t, err)
	require.NoError(t, s.Close())
	r.GrantTables(t)
	s, err = quota.Open(ctx, rw)
	require.NoError(t, err)
	defer s.Close()
	_, err = s.Reserve(ctx, "k", 10, 1, time.Second)
	require.NoError(t, err)
}
