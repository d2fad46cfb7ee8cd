package connectors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/sim"
)

// simAsHTTPKind is a platforms file that describes the simulator's API to
// the declarative http kind; it should behave exactly like kind sim.
const simAsHTTPKind = `
platforms:
  sim-acme:
    kind: http
    endpoint: %s
    credentials: {file: %s}
    page_size: %d
    timeout: %s
    options:
      path: /orders
      auth: {type: bearer}
      window: {from_param: updated_from, to_param: updated_to, format: rfc3339nano}
      page_size_param: limit
      pagination: {style: cursor, token_param: page_token, token_path: next_page_token}
      records_path: orders
      fields: {id: id, updated_at: updated_at, created_at: created_at, status: status,
               currency: currency, total: total, line_items: line_items}
      lines: {path: line_items, sku: sku, title: title, quantity: qty, unit_price: price}
      errors: {message_path: error}
`

// simPair starts two identical simulators (same seed, same clock) and
// returns a sim connector on one and a declarative http connector, loaded
// from YAML, on the other, so both see the same world and the same faults.
func simPair(t *testing.T, clk *fakeClock, cfg func(*sim.Config), token string, pageSize int, timeout time.Duration) (simConn, httpConn connectors.Connector) {
	t.Helper()
	start := func() string {
		c := simConfig(7, clk)
		if cfg != nil {
			cfg(&c)
		}
		s, err := sim.New(c)
		require.NoError(t, err)
		srv, err := s.Start("127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		return srv.ShopURL("acme")
	}
	simConn = newSimConn(t, start(), token, pageSize, timeout)
	cred := secretFile(t, token)
	f, err := config.Parse(fmt.Appendf(nil, simAsHTTPKind, start(), cred.File, pageSize, timeout))
	require.NoError(t, err)
	p, ok := f.Get("sim-acme")
	require.True(t, ok)
	httpConn, err = connectors.New(p)
	require.NoError(t, err)
	return simConn, httpConn
}

func TestHTTPKindReproducesTheSimConnector(t *testing.T) {
	clk := newFakeClock()
	now := clk.Now()
	simConn, httpConn := simPair(t, clk, nil, "acme-token", 7, 5*time.Second)
	windows := [][2]time.Time{
		{now.Add(-25 * time.Hour), now}, // the whole history
		{now.Add(-6*time.Hour - 500*time.Millisecond), now.Add(-2*time.Hour + 123456789)}, // sub-second bounds
		{now.Add(-3 * time.Hour), now.Add(-3*time.Hour + 10*time.Minute)},                 // a short slice
	}
	ctx := context.Background()
	var pages []int
	for _, w := range windows {
		a := connectors.PageRequest{From: w[0], To: w[1], Page: 1}
		b := a
		total := 0
		for ; ; a.Page, b.Page = a.Page+1, b.Page+1 {
			require.Less(t, a.Page, 200)
			pa, err := simConn.ListOrders(ctx, a)
			require.NoError(t, err)
			pb, err := httpConn.ListOrders(ctx, b)
			require.NoError(t, err)
			require.Equal(t, pa.NextToken, pb.NextToken, "page %d: same next token", a.Page)
			require.Len(t, pb.Orders, len(pa.Orders), "page %d", a.Page)
			for i := range pa.Orders {
				oa, ob := pa.Orders[i], pb.Orders[i]
				require.Equal(t, oa.ID, ob.ID)
				require.Equal(t, oa.UpdatedAt, ob.UpdatedAt)
				// The canonical forms agree on what the http kind's
				// mapping reads (header and lines); the sim mapper knows
				// the simulator's statuses and customer besides.
				require.NotNil(t, oa.Canonical)
				require.NotNil(t, ob.Canonical)
				ca, cb := *oa.Canonical, *ob.Canonical
				require.Equal(t, []string{"sim", "http"}, []string{ca.Kind, cb.Kind})
				header := func(c order.Canonical) order.Canonical {
					return order.Canonical{Schema: c.Schema, Platform: c.Platform, OrderID: c.OrderID, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
						PlatformStatus: c.PlatformStatus, Currency: c.Currency, Totals: c.Totals, Lines: c.Lines}
				}
				require.Equal(t, header(ca), header(cb), "order %s: canonical header and lines", oa.ID)
				oa.Canonical, ob.Canonical = nil, nil
				require.Equal(t, oa, ob, "order %s: every field, Raw included", oa.ID)
			}
			total += len(pa.Orders)
			if pa.NextToken == "" {
				break
			}
			a.Token, b.Token = pa.NextToken, pb.NextToken
		}
		require.Positive(t, total)
		pages = append(pages, a.Page)
	}
	require.Greater(t, pages[0], 10, "the whole history takes many pages")
}

func TestHTTPKindMatchesSimErrorClasses(t *testing.T) {
	tests := []struct {
		name     string
		cfg      func(*sim.Config)
		token    string
		pageSize int
		timeout  time.Duration
		warmup   int
		check    func(t *testing.T, a, b error)
	}{
		{"429", func(c *sim.Config) { c.RateLimit = sim.RateLimit{RPS: 0.5, Burst: 1} }, "", 0, 0, 1, func(t *testing.T, a, b error) {
			var ra, rb *connectors.RateLimitError
			require.ErrorAs(t, a, &ra)
			require.ErrorAs(t, b, &rb)
			require.Equal(t, ra, rb)
			require.Equal(t, 2*time.Second, rb.RetryAfter)
			require.Equal(t, 0.5, rb.Limit)
		}},
		{"5xx", func(c *sim.Config) { c.Faults.Err5xx = 1 }, "", 0, 0, 0, func(t *testing.T, a, b error) {
			var ta, tb *connectors.TransientError
			require.ErrorAs(t, a, &ta)
			require.ErrorAs(t, b, &tb)
			require.Equal(t, ta.Msg, tb.Msg)
		}},
		{"bad token", nil, "wrong-token", 0, 0, 0, func(t *testing.T, a, b error) {
			var pa, pb *connectors.PermanentError
			require.ErrorAs(t, a, &pa)
			require.ErrorAs(t, b, &pb)
			require.Equal(t, pa.Status, pb.Status)
			require.Contains(t, pb.Msg, "authentication failed: "+pa.Msg+" (check the credentials in file:")
			require.NotContains(t, b.Error(), "wrong-token")
		}},
		{"malformed page", func(c *sim.Config) { c.Faults.Malformed = 1 }, "", 0, 0, 0, func(t *testing.T, a, b error) {
			var ma, mb *connectors.MalformedError
			require.ErrorAs(t, a, &ma)
			require.ErrorAs(t, b, &mb)
			require.Equal(t, ma.Page, mb.Page)
		}},
		{"page size over the maximum", nil, "", 51, 0, 0, func(t *testing.T, a, b error) {
			var pa, pb *connectors.PermanentError
			require.ErrorAs(t, a, &pa)
			require.ErrorAs(t, b, &pb)
			require.Equal(t, pa, pb)
		}},
		{"hang past the timeout", func(c *sim.Config) { c.Faults = sim.Faults{Hang: 1, HangFor: 5 * time.Second} }, "", 0, 150 * time.Millisecond, 0, func(t *testing.T, a, b error) {
			var ta, tb *connectors.TransientError
			require.ErrorAs(t, a, &ta)
			require.ErrorAs(t, b, &tb)
			require.Equal(t, "request timed out", tb.Msg)
			require.Equal(t, ta.Msg, tb.Msg)
		}},
		{"empty page with a token", func(c *sim.Config) { c.Faults.EmptyPageWithToken = 1 }, "", 0, 0, 0, func(t *testing.T, a, b error) {
			require.NoError(t, a)
			require.NoError(t, b)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			token, size, timeout := "acme-token", 10, 5*time.Second
			if tc.token != "" {
				token = tc.token
			}
			if tc.pageSize != 0 {
				size = tc.pageSize
			}
			if tc.timeout != 0 {
				timeout = tc.timeout
			}
			simConn, httpConn := simPair(t, clk, tc.cfg, token, size, timeout)
			req := connectors.PageRequest{From: clk.Now().Add(-time.Hour), To: clk.Now(), Page: 3}
			for range tc.warmup {
				_, err := simConn.ListOrders(context.Background(), req)
				require.NoError(t, err)
				_, err = httpConn.ListOrders(context.Background(), req)
				require.NoError(t, err)
			}
			pa, errA := simConn.ListOrders(context.Background(), req)
			pb, errB := httpConn.ListOrders(context.Background(), req)
			require.Equal(t, pa.NextToken, pb.NextToken)
			tc.check(t, errA, errB)
		})
	}
}
