package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/order"
)

func TestConformanceSearch(t *testing.T) {
	runConformance(t, []conformanceCase{
		{"search filters by platform, number, status and updated range", testSearchFilters},
		{"search pages by keyset without skipping or repeating", testSearchPages},
		{"search refuses bad queries and tokens", testSearchBadQuery},
		{"order changes are the order's retained versions", testOrderChanges},
	})
}

// searchOrder is version v of platform/id with a canonical number.
func searchOrder(platform, id string, v int, number, status string) order.Order {
	o := version(platform, id, v)
	o.Status = status
	if number != "" {
		o.Canonical = &order.Canonical{Schema: order.SchemaV1, Platform: platform, OrderID: id, Number: number, UpdatedAt: o.UpdatedAt}
	}
	return o
}

func ids(p SearchPage) []string {
	out := make([]string, 0, len(p.Orders))
	for _, o := range p.Orders {
		out = append(out, o.Platform+"/"+o.ID)
	}
	return out
}

func testSearchFilters(t *testing.T, dsn string) {
	ctx := context.Background()
	st := openStore(t, dsn)
	upsert(t, st,
		searchOrder("shop", "1", 1, "#1001", "paid"),
		searchOrder("shop", "2", 2, "#1002", "open"),
		searchOrder("shop", "3", 3, "", "paid"),
		searchOrder("amz", "A", 4, "A", "Shipped"),
	)
	search := func(q SearchQuery) []string {
		t.Helper()
		p, err := st.SearchOrders(ctx, q)
		require.NoError(t, err)
		require.Empty(t, p.Next)
		return ids(p)
	}
	require.Equal(t, []string{"amz/A", "shop/3", "shop/2", "shop/1"}, search(SearchQuery{}), "newest updated_at first")
	require.Equal(t, []string{"shop/3", "shop/2", "shop/1"}, search(SearchQuery{Platform: "shop"}))
	require.Equal(t, []string{"shop/1"}, search(SearchQuery{Number: "#1001"}))
	require.Equal(t, []string{"shop/1"}, search(SearchQuery{Number: "1001"}), "a number without # finds #1001")
	require.Equal(t, []string{"amz/A"}, search(SearchQuery{Number: "A"}))
	require.Empty(t, search(SearchQuery{Number: "1001", Platform: "amz"}))
	require.Equal(t, []string{"shop/3", "shop/1"}, search(SearchQuery{Status: "paid"}))
	require.Equal(t, []string{"shop/3", "shop/2"}, search(SearchQuery{UpdatedFrom: base.Add(2 * time.Minute), UpdatedTo: base.Add(4 * time.Minute)}),
		"[from, to): from included, to excluded")

	got, err := st.SearchOrders(ctx, SearchQuery{Number: "#1002"})
	require.NoError(t, err)
	require.Len(t, got.Orders, 1)
	o := got.Orders[0]
	require.Equal(t, OrderSummary{Platform: "shop", ID: "2", Number: "#1002", Status: "open", CreatedAt: base, UpdatedAt: base.Add(2 * time.Minute),
		Currency: "EUR", Total: "2.10", LineCount: 2, LastSeenAt: o.LastSeenAt}, o)

	// A newer version moves the order and its number with it.
	upsert(t, st, searchOrder("shop", "1", 9, "#1001-B", "refunded"))
	require.Empty(t, search(SearchQuery{Number: "#1001"}))
	require.Equal(t, []string{"shop/1", "amz/A"}, search(SearchQuery{UpdatedFrom: base.Add(4 * time.Minute)}))
}

func testSearchPages(t *testing.T, dsn string) {
	ctx := context.Background()
	st := openStore(t, dsn)
	var batch []order.Order
	want := map[string]bool{}
	for i := 0; i < 23; i++ {
		// Three platforms, and updated_at shared by several orders, so the
		// keyset's tie-breakers (platform, then id) decide.
		p := []string{"a", "b", "c"}[i%3]
		id := fmt.Sprintf("%02d", i)
		o := version(p, id, i/4)
		batch = append(batch, o)
		want[p+"/"+id] = true
	}
	upsert(t, st, batch...)
	var seen []string
	var last *OrderSummary
	tok := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10)
		p, err := st.SearchOrders(ctx, SearchQuery{Limit: 5, After: tok})
		require.NoError(t, err)
		require.LessOrEqual(t, len(p.Orders), 5)
		for i := range p.Orders {
			o := p.Orders[i]
			if last != nil {
				require.False(t, o.UpdatedAt.After(last.UpdatedAt), "newest first across pages")
			}
			last = &o
		}
		seen = append(seen, ids(p)...)
		if p.Next == "" {
			break
		}
		tok = p.Next
	}
	require.Len(t, seen, len(want), "every order once")
	for _, id := range seen {
		require.True(t, want[id], id)
		delete(want, id)
	}
	// A page ending exactly at the last order has no next page.
	p, err := st.SearchOrders(ctx, SearchQuery{Platform: "a", Limit: 8})
	require.NoError(t, err)
	require.Len(t, p.Orders, 8)
	require.Empty(t, p.Next)
	// The default and the largest page.
	p, err = st.SearchOrders(ctx, SearchQuery{Limit: MaxSearchLimit})
	require.NoError(t, err)
	require.Len(t, p.Orders, 23)
}

func testSearchBadQuery(t *testing.T, dsn string) {
	ctx := context.Background()
	st := openStore(t, dsn)
	for _, q := range []SearchQuery{
		{Limit: -1},
		{Limit: MaxSearchLimit + 1},
		{UpdatedFrom: base, UpdatedTo: base},
		{After: "not a token"},
		{After: "eyJ4IjoxfQ"}, // {"x":1}
		{Status: "a\x00b"},
	} {
		_, err := st.SearchOrders(ctx, q)
		require.Error(t, err, "%+v", q)
		require.True(t, errors.Is(err, ErrBadQuery), "%+v: %v", q, err)
	}
}

func testOrderChanges(t *testing.T, dsn string) {
	ctx := context.Background()
	st := openStore(t, dsn)
	upsert(t, st, version("p", "1", 1), version("p", "2", 1))
	upsert(t, st, version("p", "1", 2))
	upsert(t, st, version("p", "1", 2)) // unchanged: no change
	upsert(t, st, version("q", "1", 3))
	got, err := st.OrderChanges(ctx, "p", "1")
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, ChangeCreated, got[0].Kind)
	require.Equal(t, ChangeUpdated, got[1].Kind)
	require.Less(t, got[0].Seq, got[1].Seq)
	require.True(t, got[1].UpdatedAt.Equal(base.Add(2*time.Minute)))
	require.False(t, got[1].CommittedAt.IsZero())
	require.Equal(t, "p", got[1].Platform)
	none, err := st.OrderChanges(ctx, "p", "nope")
	require.NoError(t, err)
	require.Empty(t, none)
}
