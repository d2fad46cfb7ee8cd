package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// The backstop behind CheckOrder: rows PostgreSQL itself refuses (here a
// NUL byte and a 3,000-byte id, sent past the checks) are left out alone,
// under savepoints, and counted in Rejected; their neighbours are stored
// with their changes, where before the whole batch failed ("invalid byte
// sequence for encoding UTF8: 0x00", "index row size exceeds btree
// maximum") and the page was retried until the breaker opened.
func TestPostgresRefusedRowsAreLeftOutAlone(t *testing.T) {
	b := backends[1]
	require.Equal(t, "postgres", b.name)
	skipUnavailable(t, b)
	ctx := context.Background()
	s := openStore(t, b.fresh(t)).(*postgresStore)

	nul := version("p", "nul", 1)
	nul.Status = "paid\x00"
	// Incompressible: PostgreSQL compresses an index entry before it
	// compares it with the limit, so "999..." would fit.
	var rnd [1500]byte
	_, _ = rand.Read(rnd[:])
	long := version("p", hex.EncodeToString(rnd[:]), 1)
	upsert(t, s, version("p", "c", 1)) // stored before: the batch updates it
	batch := []connectors.Order{version("p", "a", 1), nul, version("p", "c", 2), long, version("p", "a", 2), version("p", "z", 1)}
	res, err := s.upsert(ctx, batch) // past validate, as something CheckOrder missed would be
	require.NoError(t, err)
	require.Equal(t, 2, res.Inserted, "a and z: %+v", res)
	require.Equal(t, 2, res.Updated, "c, and a's second version")
	require.Len(t, res.Rejected, 2)
	reasons := map[string]string{}
	for _, r := range res.Rejected {
		reasons[r.ID] = r.Reason
	}
	require.Contains(t, reasons["nul"], "22021")
	require.Contains(t, reasons[long.ID], "54000")
	require.NotContains(t, reasons[long.ID], long.ID[:16], "the reason quotes no value")

	require.Equal(t, "v2", get(t, s, "p", "a").Status)
	require.Equal(t, "v2", get(t, s, "p", "c").Status)
	get(t, s, "p", "z")
	_, ok, err := s.GetOrder(ctx, "p", "nul")
	require.NoError(t, err)
	require.False(t, ok)
	n, err := s.CountOrders(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, 3, n)
	changes, err := s.Changes(ctx, ChangeQuery{After: 0, Limit: 100, KeysOnly: true})
	require.NoError(t, err)
	var ids []string
	for _, c := range changes {
		ids = append(ids, c.OrderID)
	}
	require.Equal(t, []string{"c", "a", "c", "z", "a"}, ids, "one change per accepted version, in applyBatch's order")
}
