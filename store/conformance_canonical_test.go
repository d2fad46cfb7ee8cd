package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/order"
)

func TestConformanceCanonical(t *testing.T) {
	runConformance(t, []conformanceCase{
		{"canonical order round trip, in GetOrder and the feed", testCanonicalRoundTrip},
	})
}

// testCanonicalRoundTrip: the canonical form is stored beside the raw
// order and follows its version; a version without one reads as none.
func testCanonicalRoundTrip(t *testing.T, dsn string) {
	ctx := context.Background()
	st := openStore(t, dsn)
	canonical := func(v int, number string) *order.Canonical {
		o := version("p", "1", v)
		return &order.Canonical{Schema: order.SchemaV1, Platform: "p", Kind: "sim", OrderID: "1", Number: number,
			UpdatedAt: o.UpdatedAt, Status: order.StatusOpen, Currency: "EUR", Totals: order.Totals{Total: o.Total},
			Customer: &order.Customer{Email: "a@example.com"}, Lines: []order.CanonicalLine{{ID: "1", Quantity: 2, UnitPrice: "1.50"}}}
	}
	v1 := version("p", "1", 1)
	v1.Canonical = canonical(1, "#1001")
	_, err := st.UpsertOrders(ctx, []order.Order{v1})
	require.NoError(t, err)
	got, ok, err := st.GetOrder(ctx, "p", "1")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, v1.Canonical, got.Canonical)

	v2 := version("p", "1", 2)
	v2.Canonical = canonical(2, "#1001-renamed")
	_, err = st.UpsertOrders(ctx, []order.Order{v2})
	require.NoError(t, err)
	changes, err := st.Changes(ctx, ChangeQuery{})
	require.NoError(t, err)
	require.NotEmpty(t, changes)
	require.Equal(t, v2.Canonical, changes[len(changes)-1].Order.Canonical, "the feed carries the newest canonical form")

	v3 := version("p", "1", 3) // from a caller that sets none
	_, err = st.UpsertOrders(ctx, []order.Order{v3})
	require.NoError(t, err)
	got, _, err = st.GetOrder(ctx, "p", "1")
	require.NoError(t, err)
	require.Nil(t, got.Canonical, "a version without a canonical form does not keep the older version's")
}
