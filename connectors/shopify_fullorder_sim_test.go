package connectors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/sim"
)

// fullOrderSim is a simulator with a shopify connector on shop acme, the
// connector's requests going through a proxy that records what the
// simulator charged for each query.
type fullOrderSim struct {
	s     *sim.Simulator
	conn  connectors.Connector
	mu    sync.Mutex
	costs []recordedCost
}

type recordedCost struct {
	op        string
	requested int
}

func startFullOrderSim(t *testing.T, clk *fakeClock, pageSize int, options string, cfg func(*sim.Config)) *fullOrderSim {
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
	target, err := url.Parse(srv.ShopURL("acme"))
	require.NoError(t, err)
	fs := &fullOrderSim{s: s}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
			r.Out.Host = r.In.Host // result URLs point at the proxy too
		},
		ModifyResponse: func(resp *http.Response) error {
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			var a struct {
				Extensions struct {
					Cost struct {
						RequestedQueryCost int `json:"requestedQueryCost"`
					} `json:"cost"`
				} `json:"extensions"`
			}
			if json.Unmarshal(body, &a) == nil && a.Extensions.Cost.RequestedQueryCost > 0 {
				fs.mu.Lock()
				fs.costs = append(fs.costs, recordedCost{op: resp.Request.Header.Get("X-Test-Op"), requested: a.Extensions.Cost.RequestedQueryCost})
				fs.mu.Unlock()
			}
			return nil
		},
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var q struct {
			OperationName string `json:"operationName"`
		}
		_ = json.Unmarshal(b, &q)
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.Header.Set("X-Test-Op", q.OperationName)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	yaml := fmt.Sprintf("platforms:\n  shopify-acme:\n    kind: shopify\n    endpoint: %s\n    credentials: {file: %s}\n    page_size: %d\n    timeout: 5s\n    options: {%s}\n",
		front.URL+target.Path, secretFile(t, "acme-token").File, pageSize, options)
	f, err := config.Parse([]byte(yaml))
	require.NoError(t, err)
	p, _ := f.Get("shopify-acme")
	fs.conn, err = connectors.New(p)
	require.NoError(t, err)
	return fs
}

func (fs *fullOrderSim) recorded() []recordedCost {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]recordedCost(nil), fs.costs...)
}

// costMeter records what each query booked.
type costMeter struct {
	mu     sync.Mutex
	booked []float64
}

func (m *costMeter) Book(_ context.Context, _ connectors.CostBudget, cost float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.booked = append(m.booked, cost)
	return nil
}

func (m *costMeter) Settle(context.Context, connectors.CostBudget, float64, float64) error {
	return nil
}

func listAll(t *testing.T, c connectors.Connector, m connectors.Meter, from, to time.Time) []connectors.Order {
	t.Helper()
	var all []connectors.Order
	req := connectors.PageRequest{From: from, To: to, Page: 1, Meter: m}
	for ; ; req.Page++ {
		require.Less(t, req.Page, 1000, "paging does not end")
		p, err := c.ListOrders(context.Background(), req)
		require.NoError(t, err)
		all = append(all, p.Orders...)
		if p.NextToken == "" {
			return all
		}
		req.Token = p.NextToken
	}
}

// TestShopifyRequestedCostMatchesTheSimulator: every query the connector
// sends books exactly the cost Shopify's rule gives it (the simulator
// computes it from the query it receives), for the full field set, a
// narrowed one and an added fragment; no query requests more than the
// single-query maximum, so pages of 250 asked for are lowered to fit.
func TestShopifyRequestedCostMatchesTheSimulator(t *testing.T) {
	for _, tc := range []struct{ name, options string }{
		{"every group", "line_items_page_size: 2"},
		{"no group", "line_items_page_size: 2, order_fields: []"},
		{"customer and refunds", "line_items_page_size: 3, order_fields: [customer, refunds]"},
		{"a fragment", "line_items_page_size: 2, order_fragment: 'poNumber sourceName channelInformation { channelId }'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			fs := startFullOrderSim(t, clk, 250, tc.options, func(c *sim.Config) { c.ShopifyLinePage = 2 })
			m := &costMeter{}
			orders := listAll(t, fs.conn, m, clk.Now().Add(-25*time.Hour), clk.Now())
			require.NotEmpty(t, orders)
			rec := fs.recorded()
			require.Len(t, m.booked, len(rec), "one booking a query")
			ops := map[string]int{}
			for i, r := range rec {
				ops[r.op]++
				require.Equal(t, float64(r.requested), m.booked[i], "query %d (%s): booked as Shopify charges it", i, r.op)
				require.LessOrEqual(t, r.requested, connectors.ShopifyMaxQueryCost)
			}
			require.Positive(t, ops["OrderLineItems"], "orders of more than two lines had follow-ups")
			require.Greater(t, ops["OrdersUpdatedInWindow"], 1, "pages lowered from 250 to what fits")
		})
	}
}

// TestShopifyFullOrderPagedAndBulkAlike: an order listed by page (with
// follow-ups for its lines) and the same order from a bulk result (child
// rows put back by __parentId) have the same Raw, byte for byte, and it
// carries every field group.
func TestShopifyFullOrderPagedAndBulkAlike(t *testing.T) {
	clk := newFakeClock()
	fs := startFullOrderSim(t, clk, 50, "line_items_page_size: 1, bulk_loopback_http: true", func(c *sim.Config) { c.ShopifyLinePage = 1 })
	from, to := clk.Now().Add(-25*time.Hour), clk.Now().Add(-time.Hour)
	paged := listAll(t, fs.conn, nil, from, to)
	require.NotEmpty(t, paged)

	b, ok := connectors.AsBulk(fs.conn)
	require.True(t, ok)
	ctx := context.Background()
	op, err := b.StartBulk(ctx, from, to, nil)
	require.NoError(t, err)
	require.Contains(t, op.Query, "shippingLines { edges { node {", "connections whole, without first:")
	clk.AdvanceTo(clk.Now().Add(time.Minute))
	op, err = b.BulkStatus(ctx, op.ID, nil)
	require.NoError(t, err)
	require.Equal(t, connectors.BulkCompleted, op.Status)
	bulk, _, err := readAll(t, b, op.URL, 0, 50)
	require.NoError(t, err)

	byID := map[string]connectors.Order{}
	for _, o := range bulk {
		byID[o.ID] = o
	}
	compared, multiLine, shipped := 0, 0, 0
	for _, o := range paged {
		bo, ok := byID[o.ID]
		if !ok || !bo.UpdatedAt.Equal(o.UpdatedAt) {
			continue // changed while the bulk query ran
		}
		compared++
		require.JSONEq(t, string(o.Raw), string(bo.Raw), "order %s: one Raw shape", o.ID)
		require.Equal(t, o.Lines, bo.Lines)
		var raw map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(o.Raw, &raw))
		for _, k := range []string{"customer", "email", "billingAddress", "shippingAddress", "shippingLines", "taxLines", "discountApplications",
			"discountCodes", "tags", "customAttributes", "paymentGatewayNames", "refunds", "fulfillments", "subtotalPriceSet", "totalTaxSet"} {
			require.Contains(t, raw, k, "order %s has %s", o.ID, k)
		}
		require.NotContains(t, string(raw["lineItems"]), "pageInfo")
		if len(o.Lines) > 1 {
			multiLine++
		}
		var f []any
		require.NoError(t, json.Unmarshal(raw["fulfillments"], &f))
		if len(f) > 0 {
			shipped++
		}
	}
	require.Greater(t, compared, 100)
	require.Positive(t, multiLine, "orders whose lines came by follow-ups")
	require.Positive(t, shipped, "orders with a fulfillment and its tracking")
}

// TestShopifyOrderFieldsKeepPersonalDataOut: with order_fields naming no
// customer or addresses group, no buyer data is fetched, so none is stored.
func TestShopifyOrderFieldsKeepPersonalDataOut(t *testing.T) {
	clk := newFakeClock()
	fs := startFullOrderSim(t, clk, 20, "order_fields: [shipping_lines, tax_lines, discounts, payment, fulfillments]", nil)
	orders := listAll(t, fs.conn, nil, clk.Now().Add(-25*time.Hour), clk.Now())
	require.NotEmpty(t, orders)
	for _, o := range orders {
		for _, k := range []string{`"customer"`, `"email"`, `"phone"`, `"billingAddress"`, `"shippingAddress"`, `"note"`, "@example.com"} {
			require.NotContains(t, string(o.Raw), k)
		}
		require.Contains(t, string(o.Raw), `"shippingLines"`)
		require.Nil(t, o.Canonical.Customer)
		require.Nil(t, o.Canonical.ShippingAddress)
	}
}

// TestShopifyFragmentAddsFields: options.order_fragment's fields are in
// every order's Raw.
func TestShopifyFragmentAddsFields(t *testing.T) {
	clk := newFakeClock()
	fs := startFullOrderSim(t, clk, 20, "order_fields: [], order_fragment: 'sourceName channelInformation { channelId }'", nil)
	orders := listAll(t, fs.conn, nil, clk.Now().Add(-3*time.Hour), clk.Now())
	require.NotEmpty(t, orders)
	for _, o := range orders {
		require.Contains(t, string(o.Raw), `"sourceName":"web"`)
		require.Contains(t, string(o.Raw), `"channelInformation":{"channelId":"gid://shopify/ChannelInformation/1"}`)
	}
}

// TestShopifyGetOrderAgainstTheSimulator: order(id:) gives the order as a
// page lists it (the same Raw, every line by follow-ups), booked on the
// meter; an id the shop does not have is ErrOrderNotFound.
func TestShopifyGetOrderAgainstTheSimulator(t *testing.T) {
	clk := newFakeClock()
	fs := startFullOrderSim(t, clk, 50, "line_items_page_size: 1", func(c *sim.Config) { c.ShopifyLinePage = 1 })
	listed := listAll(t, fs.conn, nil, clk.Now().Add(-25*time.Hour), clk.Now())
	var pick connectors.Order
	for _, o := range listed {
		if len(o.Lines) > 2 {
			pick = o
		}
	}
	require.NotEmpty(t, pick.ID, "an order of three lines or more")
	m := &costMeter{}
	before := len(fs.recorded())
	got, err := connectors.GetOrder(context.Background(), fs.conn, connectors.OrderRequest{ID: pick.ID, Meter: m})
	require.NoError(t, err)
	require.JSONEq(t, string(pick.Raw), string(got.Raw))
	require.Equal(t, pick.Lines, got.Lines)
	require.Equal(t, pick.UpdatedAt, got.UpdatedAt)
	require.NotNil(t, got.Canonical)
	require.Equal(t, "graphql", got.Canonical.Source)
	rec := fs.recorded()[before:]
	require.Equal(t, "OrderByID", rec[0].op)
	require.Len(t, m.booked, len(rec))
	for i := range rec {
		require.Equal(t, float64(rec[i].requested), m.booked[i])
	}

	_, err = connectors.GetOrder(context.Background(), fs.conn, connectors.OrderRequest{ID: "1000999999"})
	require.ErrorIs(t, err, connectors.ErrOrderNotFound)
	require.ErrorContains(t, err, "order(id:) is null")
	_, err = connectors.GetOrder(context.Background(), fs.conn, connectors.OrderRequest{ID: "12/../x"})
	require.True(t, connectors.IsPermanent(err))
	require.False(t, errors.Is(err, connectors.ErrOrderNotFound))

	// A bucket that cannot hold the query: THROTTLED, a wait like a page's.
	require.NoError(t, fs.s.SetShopifyCost(sim.CostLimit{RestoreRate: 1, MaxAvailable: 60}))
	_, err = connectors.GetOrder(context.Background(), fs.conn, connectors.OrderRequest{ID: pick.ID})
	var rl *connectors.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.ErrorContains(t, err, "THROTTLED")
	require.False(t, errors.Is(err, connectors.ErrOrderNotFound))
}

// TestShopifyFullOrderCanonicalFromSimulator: the canonical order of a
// simulated order carries its customer and address (the ground truth's)
// and statuses in the canonical words.
func TestShopifyFullOrderCanonicalFromSimulator(t *testing.T) {
	clk := newFakeClock()
	fs := startFullOrderSim(t, clk, 50, "", nil)
	orders := listAll(t, fs.conn, nil, clk.Now().Add(-25*time.Hour), clk.Now())
	truth, err := fs.s.Truth("acme", time.Time{})
	require.NoError(t, err)
	byID := map[string]sim.TruthOrder{}
	for _, o := range truth.Orders {
		byID[o.ID] = o
	}
	for _, o := range orders {
		c, tr := o.Canonical, byID[o.ID]
		require.Equal(t, "graphql", c.Source)
		require.True(t, strings.HasSuffix(c.Customer.Email, "@example.com"), c.Customer.Email)
		require.Equal(t, c.Customer.Name, c.ShippingAddress.Name, "the buyer's own address")
		require.NotEmpty(t, c.ShippingAddress.City)
		require.Len(t, c.ShippingAddress.CountryCode, 2)
		require.Equal(t, order.FulfillmentFulfilled == c.FulfillmentStatus, tr.Status == "shipped" || tr.Status == "delivered")
		require.Equal(t, tr.Total, c.Totals.Total)
		require.Len(t, c.Lines, len(o.Lines))
		want := map[string]string{"cancelled": order.StatusCancelled, "delivered": order.StatusCompleted, "shipped": order.StatusCompleted}[tr.Status]
		if want == "" {
			want = order.StatusOpen
		}
		require.Equal(t, want, c.Status, "order %s %s", o.ID, tr.Status)
		require.True(t, strings.HasPrefix(c.Number, "#"))
	}
}

// TestShopifyBucketBelowTheSingleQueryMaximum: a shop whose bucket
// Shopify lowered to 500 points (below the 947 a page of 7 full orders
// requests) answers the first page THROTTLED with its bucket; from then on
// every query, follow-ups included, is cut to what 500 points hold, and
// the window is listed whole.
func TestShopifyBucketBelowTheSingleQueryMaximum(t *testing.T) {
	clk := newFakeClock()
	fs := startFullOrderSim(t, clk, 50, "line_items_page_size: 2", func(c *sim.Config) {
		c.ShopifyCost = sim.CostLimit{RestoreRate: 50, MaxAvailable: 500}
		c.ShopifyLinePage = 2
	})
	from, to := clk.Now().Add(-25*time.Hour), clk.Now()
	var all []connectors.Order
	// The page's progress is kept as the activity keeps it, so a throttled
	// follow-up retries alone.
	req := connectors.PageRequest{From: from, To: to, Page: 1, Progress: &memProgress{}}
	throttled, inARow, spent := 0, 0, int64(0)
	for req.Page < 1000 {
		p, err := fs.conn.ListOrders(context.Background(), req)
		var rl *connectors.RateLimitError
		if errors.As(err, &rl) {
			throttled++
			if used := fs.s.Stats().Shops["acme"].PointsUsed; used > spent {
				spent, inARow = used, 0 // a query ran since the last throttle
			}
			inARow++
			require.Less(t, inARow, 5, "a query the bucket can never hold is throttled for ever")
			clk.AdvanceTo(clk.Now().Add(rl.RetryAfter))
			continue
		}
		require.NoError(t, err)
		inARow = 0
		all = append(all, p.Orders...)
		if p.NextToken == "" {
			break
		}
		req.Token, req.Page = p.NextToken, req.Page+1
	}
	require.Positive(t, throttled, "the first page, sent for the standard bucket, is throttled")
	rec := fs.recorded()
	over := 0
	for _, r := range rec[1:] {
		if r.requested > 500 {
			over++
		}
	}
	require.Zero(t, over, "after the shop stated its bucket no query requests more than it holds")
	truth, err := fs.s.Truth("acme", time.Time{})
	require.NoError(t, err)
	want := 0
	for _, o := range truth.Orders {
		if o.UpdatedAt.Before(to) {
			want++
		}
	}
	require.Len(t, all, want)
}

// memProgress keeps a page's progress in memory, as the store does.
type memProgress struct{ b []byte }

func (m *memProgress) Load(context.Context) ([]byte, error) { return m.b, nil }
func (m *memProgress) Save(_ context.Context, b []byte) error {
	m.b = append([]byte(nil), b...)
	return nil
}
func (m *memProgress) Clear(context.Context) error { m.b = nil; return nil }
