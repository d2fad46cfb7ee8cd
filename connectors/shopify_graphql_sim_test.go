package connectors_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/sim"
)

// shopifyOnSim is a platform of kind shopify (GraphQL, the default) on the
// simulator's Shopify surface, as a platforms file has it.
const shopifyOnSim = `
platforms:
  shopify-acme:
    kind: shopify
    endpoint: %s
    credentials: {file: %s}
    page_size: %d
    timeout: 5s
    options: {line_items_page_size: %d}
`

// startShopifySim starts a simulator and returns it with a shopify
// connector on shop acme.
func startShopifySim(t *testing.T, clk *fakeClock, pageSize, linesPageSize int, cfg func(*sim.Config)) (*sim.Simulator, connectors.Connector) {
	t.Helper()
	c := simConfig(11, clk)
	if cfg != nil {
		cfg(&c)
	}
	s, err := sim.New(c)
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	f, err := config.Parse(fmt.Appendf(nil, shopifyOnSim, srv.ShopURL("acme"), secretFile(t, "acme-token").File, pageSize, linesPageSize))
	require.NoError(t, err)
	p, _ := f.Get("shopify-acme")
	conn, err := connectors.New(p)
	require.NoError(t, err)
	return s, conn
}

// TestShopifyConnectorAgainstTheSimulator lists windows through the
// connector against the simulator's Shopify surface and compares with the
// simulator's ground truth: every order of the window, once, at its
// visible version, with every line.
func TestShopifyConnectorAgainstTheSimulator(t *testing.T) {
	clk := newFakeClock()
	s, conn := startShopifySim(t, clk, 7, 2, nil) // nested pages of 2: orders of 3 to 5 lines need follow-ups
	now := clk.Now()
	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	byID := map[string]sim.TruthOrder{}
	for _, o := range truth.Orders {
		byID[o.ID] = o
	}
	status := map[string]string{"pending": "pending", "paid": "paid", "shipped": "paid", "delivered": "paid", "refunded": "refunded", "cancelled": "cancelled"}
	for _, w := range [][2]time.Time{
		{now.Add(-25 * time.Hour), now}, // the whole history
		{now.Add(-6*time.Hour - 500*time.Millisecond), now.Add(-2*time.Hour + 123456789)}, // sub-second bounds
		{now.Add(-3 * time.Hour), now.Add(-3*time.Hour + 10*time.Minute)},                 // a short slice
	} {
		t.Run(w[1].Sub(w[0]).String(), func(t *testing.T) {
			got := fetchWindow(t, conn, w[0], w[1])
			seen := map[string]bool{}
			for _, o := range got {
				require.False(t, seen[o.ID], "order %s listed twice", o.ID)
				seen[o.ID] = true
				tr, ok := byID[o.ID]
				require.True(t, ok, "order %s is the simulator's, by the list endpoint's id", o.ID)
				require.Equal(t, tr.UpdatedAt.Truncate(time.Second), o.UpdatedAt, "its visible version, in whole seconds")
				require.False(t, o.UpdatedAt.Before(w[0].Truncate(time.Second)), "within the window rounded outwards")
				require.True(t, o.UpdatedAt.Before(connectors.CeilTime(w[1], time.Second)))
				require.Equal(t, tr.Total, o.Total)
				require.Equal(t, status[tr.Status], o.Status)
				lines, err := s.LineItems("acme", o.ID)
				require.NoError(t, err)
				require.True(t, o.HasLines)
				require.Len(t, o.Lines, len(lines), "order %s has all its lines", o.ID)
				require.Equal(t, len(lines), o.LineCount)
				for i, l := range lines {
					require.Equal(t, connectors.OrderLine{ID: l.ID, SKU: l.SKU, Title: l.Title, Quantity: l.Quantity, UnitPrice: l.Price, Currency: o.Currency},
						o.Lines[i], "order %s line %d", o.ID, i)
				}
			}
			want := 0
			for _, tr := range truth.Orders {
				if !tr.UpdatedAt.Before(w[0]) && tr.UpdatedAt.Before(w[1]) {
					want++
					require.True(t, seen[tr.ID], "order %s updated at %s is in the window: not listed", tr.ID, tr.UpdatedAt)
				}
			}
			require.Positive(t, want)
		})
	}
	st := s.Stats().Shops["acme"]
	require.Zero(t, st.Throttled, "the default bucket holds this much")
}

// TestShopifyConnectorThrottledBySimulator: the simulator's bucket runs
// dry; the connector says how long to wait, and after that wait the query
// goes through.
func TestShopifyConnectorThrottledBySimulator(t *testing.T) {
	clk := newFakeClock()
	// 40 orders with up to 5 lines each: 802 points requested, and no
	// follow-up queries, so the second page is the one that does not fit.
	s, conn := startShopifySim(t, clk, 40, 5, func(c *sim.Config) {
		c.ShopifyCost = sim.CostLimit{RestoreRate: 2, MaxAvailable: 1000}
		c.ShopifyLinePage = 5
	})
	req := connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now(), Page: 1}
	p, err := conn.ListOrders(context.Background(), req)
	require.NoError(t, err, "a full bucket holds the first page")
	req.Token, req.Page = p.NextToken, 2
	_, err = conn.ListOrders(context.Background(), req)
	var rl *connectors.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.Greater(t, rl.RetryAfter, time.Minute, "802 points minus what is left, at 2 points a second")
	require.True(t, strings.Contains(err.Error(), "THROTTLED"), err.Error())
	require.Equal(t, int64(1), s.Stats().Shops["acme"].Throttled)

	clk.AdvanceTo(clk.Now().Add(rl.RetryAfter))
	_, err = conn.ListOrders(context.Background(), req)
	require.NoError(t, err, "after the wait the bucket holds the query")
}

// simClockMeter books points on in-process books and, instead of sleeping,
// moves the simulator's clock by the wait: simulated time.
type simClockMeter struct {
	clk    *fakeClock
	books  *quota.Memory
	waited time.Duration
}

func (m *simClockMeter) Book(ctx context.Context, b connectors.CostBudget, cost float64) error {
	d, err := m.books.ReservePoints(ctx, "points/shopify-acme", quota.Budget(b), cost, time.Hour)
	if err != nil {
		return err
	}
	m.waited += d
	m.clk.AdvanceTo(m.clk.Now().Add(d))
	return nil
}

func (m *simClockMeter) Settle(ctx context.Context, b connectors.CostBudget, delta, deficit float64) error {
	return m.books.SettlePoints(ctx, "points/shopify-acme", quota.Budget(b), delta, deficit)
}

// TestShopifyConnectorPacedByPoints: booking each query's cost before it
// goes keeps the simulator's bucket from ever running dry, however many
// queries a backfill takes.
func TestShopifyConnectorPacedByPoints(t *testing.T) {
	clk := newFakeClock()
	s, conn := startShopifySim(t, clk, 50, 2, func(c *sim.Config) {
		c.ShopifyCost = sim.CostLimit{RestoreRate: 10, MaxAvailable: 1000}
		c.LiveRate = 0 // the world moves with the clock; keep it to the backlog
	})
	meter := &simClockMeter{clk: clk, books: quota.NewMemory(clk.Now)}
	req := connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now(), Page: 1, Meter: meter}
	n := 0
	for ; ; req.Page++ {
		p, err := conn.ListOrders(context.Background(), req)
		require.NoError(t, err, "page %d", req.Page)
		n += len(p.Orders)
		if p.NextToken == "" {
			break
		}
		req.Token = p.NextToken
	}
	st := s.Stats().Shops["acme"]
	require.Zero(t, st.Throttled, "never THROTTLED")
	require.Greater(t, st.Requests, int64(req.Page), "follow-up queries ran too")
	require.Positive(t, meter.waited, "the budget, not luck, kept the bucket from running dry")
	require.GreaterOrEqual(t, n, 250)
}
