package connectors_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

// The amazon connector (Orders v2026-01-01) against the simulator's Amazon
// surface: LWA, searchOrders, expiring tokens and 429s end to end, checked
// against the simulator's ground truth.

// settledAmazonSim is a simulator whose world no longer changes, so what a
// window lists can be compared with the truth exactly.
func settledAmazonSim(t *testing.T, cfg sim.Config, clk *fakeClock) (*sim.Simulator, *httptest.Server) {
	t.Helper()
	s, ts := startSim(t, cfg)
	clk.AdvanceTo(s.StopCreating())
	return s, ts
}

func newAmazonSimConn(t *testing.T, ts *httptest.Server, shop string, options map[string]any) connectors.Connector {
	t.Helper()
	base := ts.URL + "/shops/" + shop + "/amazon"
	ids := make([]any, len(sim.AmazonMarketplaceIDs)) // every shop's marketplace, as YAML would give them
	for i, id := range sim.AmazonMarketplaceIDs {
		ids[i] = id
	}
	opts := map[string]any{"marketplace_ids": ids, "token_url": base + "/auth/o2/token"}
	for k, v := range options {
		opts[k] = v
	}
	c, err := connectors.New(config.Platform{Name: "amazon-sim", Kind: "amazon", Endpoint: base, PageSize: 7,
		Timeout: config.Duration(5 * time.Second), Options: opts,
		Credentials: secretFile(t, `{"client_id":"amzn1.application-oa2-client.sim","client_secret":"sim","refresh_token":"acme-token"}`)})
	require.NoError(t, err)
	return c
}

// amazonSimStatus is the simulator's status as a FulfillmentStatus.
var amazonSimStatus = map[string]string{"pending": "PENDING", "paid": "UNSHIPPED", "shipped": "SHIPPED",
	"delivered": "SHIPPED", "cancelled": "CANCELLED", "refunded": "SHIPPED"}

// requireTruth checks that orders are exactly the truth's orders updated in
// [from, to] (to inclusive: the connector's upper bound), each with its
// status, total and lines.
func requireTruth(t *testing.T, s *sim.Simulator, orders []connectors.Order, from, to time.Time) {
	t.Helper()
	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	want := map[string]sim.TruthOrder{}
	for _, o := range truth.Orders {
		if !o.UpdatedAt.Before(from) && !o.UpdatedAt.After(to) {
			want[o.ID] = o
		}
	}
	require.NotEmpty(t, want)
	got := map[string]connectors.Order{}
	for _, o := range orders {
		got[o.ID] = o // an order read twice (a restarted window) counts once
	}
	require.Len(t, got, len(want), "every order of the window, and no other")
	for id, w := range want {
		o, ok := got[id]
		require.True(t, ok, "order %s is missing", id)
		require.Equal(t, w.UpdatedAt, o.UpdatedAt, id)
		require.Equal(t, amazonSimStatus[w.Status], o.Status, id)
		require.Equal(t, w.Total, o.Total, id)
		require.True(t, o.HasLines, id)
		lines, err := s.OrderLines("acme", id)
		require.NoError(t, err)
		require.Len(t, o.Lines, len(lines), id)
		require.Equal(t, len(lines), o.LineCount)
		for j, l := range lines {
			require.Equal(t, connectors.OrderLine{ID: sim.AmazonItemID(id, j), SKU: l.SKU, Title: l.Title,
				Quantity: l.Quantity, UnitPrice: l.UnitPrice, Currency: o.Currency}, o.Lines[j], "%s line %d", id, j)
		}
	}
}

func TestAmazonAgainstTheSimulator(t *testing.T) {
	clk := newFakeClock()
	s, ts := settledAmazonSim(t, simConfig(11, clk), clk)
	from, to := clk.Now().Add(-25*time.Hour), clk.Now().Add(-3*time.Minute)

	t.Run("a window lists every order with its lines", func(t *testing.T) {
		orders := fetchWindow(t, newAmazonSimConn(t, ts, "acme", nil), from, to)
		require.Greater(t, len(orders), 7, "several pages")
		requireTruth(t, s, orders, from, to)
		for _, o := range orders {
			require.NotContains(t, string(o.Raw), `"buyer"`, "no personal data unless asked")
			require.NotContains(t, string(o.Raw), `"recipient"`)
		}
	})
	t.Run("buyer and recipient when asked", func(t *testing.T) {
		c := newAmazonSimConn(t, ts, "acme", map[string]any{"included_data": []any{"BUYER", "RECIPIENT"}})
		p, err := c.ListOrders(context.Background(), connectors.PageRequest{From: from, To: to, Page: 1})
		require.NoError(t, err)
		require.NotEmpty(t, p.Orders)
		for _, o := range p.Orders {
			require.Contains(t, string(o.Raw), `"buyerEmail"`)
			require.Contains(t, string(o.Raw), `"deliveryAddress"`)
		}
	})
}

// TestAmazonAgainstTheSimulatorTokenExpiry: a slice stalls past its page
// token's lifetime, and the simulator refuses the token with each text
// sellers report; meanwhile the access token lapses before its stated
// expiry. The window restarts (one request per call: the refused token's
// page is empty and hands back a restart token), the access token is
// refreshed, and the window ends with every order.
func TestAmazonAgainstTheSimulatorTokenExpiry(t *testing.T) {
	for _, text := range sim.AmazonTokenErrors {
		t.Run(text, func(t *testing.T) {
			clk := newFakeClock()
			cfg := simConfig(12, clk)
			cfg.AmazonTokenTTL, cfg.AmazonTokenError, cfg.AmazonAccessTTL = time.Minute, text, 90*time.Second
			s, ts := settledAmazonSim(t, cfg, clk)
			c := newAmazonSimConn(t, ts, "acme", nil)
			from, to := clk.Now().Add(-25*time.Hour), clk.Now().Add(-3*time.Minute)
			ctx := context.Background()

			req := connectors.PageRequest{From: from, To: to, Page: 1}
			first, err := c.ListOrders(ctx, req)
			require.NoError(t, err)
			require.NotEmpty(t, first.NextToken)
			second, err := c.ListOrders(ctx, connectors.PageRequest{From: from, To: to, Token: first.NextToken, Page: 2})
			require.NoError(t, err)
			all := append(first.Orders, second.Orders...)

			clk.AdvanceTo(clk.Now().Add(2 * time.Minute)) // the slice stalls past both tokens' lifetimes
			before := s.Stats().Shops["acme"].Requests
			req = connectors.PageRequest{From: from, To: to, Token: second.NextToken, Page: 3}
			restart, err := c.ListOrders(ctx, req)
			require.NoError(t, err, "a refused token is no failure")
			require.Empty(t, restart.Orders)
			require.NotEmpty(t, restart.NextToken)
			st := s.Stats().Shops["acme"]
			require.EqualValues(t, 1, st.BadRequests)
			require.EqualValues(t, 1, st.Unauthorized, "the lapsed access token was refused once, then refreshed")
			require.EqualValues(t, before+2, st.Requests, "the 403 and the 400: no restart in the same call")

			req.Token, req.Page = restart.NextToken, 4
			restarted, err := c.ListOrders(ctx, req)
			require.NoError(t, err)
			require.Equal(t, orderIDs(first.Orders), orderIDs(restarted.Orders), "the window starts over")
			all = append(all, restarted.Orders...)
			for req.Token, req.Page = restarted.NextToken, 5; req.Token != ""; req.Page++ {
				require.Less(t, req.Page, 1000)
				p, err := c.ListOrders(ctx, req)
				require.NoError(t, err)
				all = append(all, p.Orders...)
				req.Token = p.NextToken
			}
			requireTruth(t, s, all, from, to)
			require.EqualValues(t, 1, s.Stats().Shops["acme"].BadRequests, "one refused token, no other refusal")
		})
	}
}

func TestAmazonAgainstTheSimulatorRateLimit(t *testing.T) {
	clk := newFakeClock()
	cfg := simConfig(13, clk)
	cfg.RateLimit = sim.RateLimit{RPS: 0.5, Burst: 1}
	_, ts := settledAmazonSim(t, cfg, clk)
	c := newAmazonSimConn(t, ts, "acme", nil)
	req := connectors.PageRequest{From: clk.Now().Add(-time.Hour), To: clk.Now().Add(-3 * time.Minute), Page: 1}
	p, err := c.ListOrders(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, 0.5, p.RateLimit)
	_, err = c.ListOrders(context.Background(), req)
	var rl *connectors.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 0.5, rl.Limit)
	require.Equal(t, 2*time.Second, rl.RetryAfter, "a request's worth at the reported rate")
	clk.AdvanceTo(clk.Now().Add(rl.RetryAfter))
	_, err = c.ListOrders(context.Background(), req)
	require.NoError(t, err)
}
