package connectors_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// AdvanceTo moves the clock forward to t; it never goes back.
func (c *fakeClock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.t) {
		c.t = t
	}
}

func simConfig(seed int64, clk *fakeClock) sim.Config {
	return sim.Config{
		Seed:          seed,
		Shops:         []sim.ShopConfig{{Name: "acme", Token: "acme-token"}},
		AdminToken:    "admin-token",
		History:       24 * time.Hour,
		HistoryOrders: 300,
		LiveRate:      0.01,
		MaxUpdates:    3,
		UpdateSpread:  6 * time.Hour,
		Late:          2 * time.Minute,
		MaxPageSize:   50,
		Clock:         clk.Now,
	}
}

func startSim(t *testing.T, cfg sim.Config) (*sim.Simulator, *httptest.Server) {
	t.Helper()
	s, err := sim.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// newSimConn builds a sim connector through the registry, with its token in
// a file (t.Setenv would forbid parallel tests).
func newSimConn(t *testing.T, endpoint, token string, pageSize int, timeout time.Duration) connectors.Connector {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(token+"\n"), 0o600))
	c, err := connectors.New(config.Platform{
		Name:        "sim-acme",
		Kind:        "sim",
		Endpoint:    endpoint,
		Credentials: config.CredentialRef{File: file},
		Timeout:     config.Duration(timeout),
		PageSize:    pageSize,
	})
	require.NoError(t, err)
	return c
}

// fetchWindow pages through [from, to) and returns every order.
func fetchWindow(t *testing.T, c connectors.Connector, from, to time.Time) []connectors.Order {
	t.Helper()
	var all []connectors.Order
	req := connectors.PageRequest{From: from, To: to, Page: 1}
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

func TestSimPaging(t *testing.T) {
	clk := newFakeClock()
	s, ts := startSim(t, simConfig(1, clk))
	c := newSimConn(t, ts.URL+"/shops/acme/", "acme-token", 7, 5*time.Second)
	from, to := clk.Now().Add(-25*time.Hour), clk.Now()
	orders := fetchWindow(t, c, from, to)

	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	require.Len(t, orders, len(truth.Orders))
	byID := map[string]sim.TruthOrder{}
	for _, o := range truth.Orders {
		byID[o.ID] = o
	}
	for i, o := range orders {
		want, ok := byID[o.ID]
		require.True(t, ok, "order %s is in the truth", o.ID)
		require.Equal(t, want.UpdatedAt, o.UpdatedAt)
		require.Equal(t, want.Status, o.Status)
		require.Equal(t, want.Total, o.Total)
		require.Equal(t, "sim-acme", o.Platform)
		require.Equal(t, time.UTC, o.UpdatedAt.Location())
		require.Equal(t, time.UTC, o.CreatedAt.Location())
		require.False(t, o.UpdatedAt.Before(o.CreatedAt))
		require.True(t, !o.UpdatedAt.Before(from) && o.UpdatedAt.Before(to), "inside the window")
		require.Positive(t, o.LineCount)
		require.Contains(t, []string{"EUR", "USD", "GBP", "CHF"}, o.Currency)
		lines, err := s.OrderLines("acme", o.ID)
		require.NoError(t, err)
		require.True(t, o.HasLines)
		require.Len(t, o.Lines, len(lines))
		require.Equal(t, len(lines), o.LineCount)
		for j, l := range lines {
			require.Equal(t, connectors.OrderLine{ID: connectors.PositionLineID(j), SKU: l.SKU, Title: l.Title, Quantity: l.Quantity,
				UnitPrice: l.UnitPrice, Currency: o.Currency}, o.Lines[j], "%s line %d: id by position, the order's currency", o.ID, j)
		}
		var raw map[string]any
		require.NoError(t, json.Unmarshal(o.Raw, &raw))
		require.Equal(t, o.ID, raw["id"])
		require.Contains(t, raw, "customer")
		if i > 0 {
			prev := orders[i-1]
			require.True(t, prev.UpdatedAt.Before(o.UpdatedAt) || (prev.UpdatedAt.Equal(o.UpdatedAt) && prev.ID < o.ID), "sorted")
		}
	}
}

func TestSimErrorClasses(t *testing.T) {
	type setup struct {
		cfg      func(*sim.Config)
		token    string
		pageSize int
		timeout  time.Duration
		shop     string
		req      func(*connectors.PageRequest)
		warmup   int // requests before the one that is checked
	}
	tests := []struct {
		name  string
		setup setup
		check func(t *testing.T, p connectors.Page, err error)
	}{
		{"429 is a RateLimitError with Retry-After", setup{cfg: func(c *sim.Config) { c.RateLimit = sim.RateLimit{RPS: 0.5, Burst: 1} }, warmup: 1},
			func(t *testing.T, _ connectors.Page, err error) {
				var rl *connectors.RateLimitError
				require.ErrorAs(t, err, &rl)
				require.Equal(t, 2*time.Second, rl.RetryAfter)
				require.Equal(t, 0.5, rl.Limit)
				require.Equal(t, "sim-acme", rl.Platform)
			}},
		{"5xx is transient", setup{cfg: func(c *sim.Config) { c.Faults.Err5xx = 1 }},
			func(t *testing.T, _ connectors.Page, err error) {
				var te *connectors.TransientError
				require.ErrorAs(t, err, &te)
				require.Contains(t, te.Msg, "HTTP 503")
				require.False(t, connectors.IsPermanent(err))
			}},
		{"hang past the timeout is transient", setup{cfg: func(c *sim.Config) { c.Faults = sim.Faults{Hang: 1, HangFor: 5 * time.Second} }, timeout: 150 * time.Millisecond},
			func(t *testing.T, _ connectors.Page, err error) {
				var te *connectors.TransientError
				require.ErrorAs(t, err, &te)
				require.Equal(t, "request timed out", te.Msg)
			}},
		{"malformed JSON names page and offset", setup{cfg: func(c *sim.Config) { c.Faults.Malformed = 1 }},
			func(t *testing.T, _ connectors.Page, err error) {
				var me *connectors.MalformedError
				require.ErrorAs(t, err, &me)
				require.Equal(t, 3, me.Page)
				require.Positive(t, me.Offset)
				require.Contains(t, err.Error(), "sim-acme: malformed response on page 3 at byte")
			}},
		{"empty page with a token is not an error", setup{cfg: func(c *sim.Config) { c.Faults.EmptyPageWithToken = 1 }},
			func(t *testing.T, p connectors.Page, err error) {
				require.NoError(t, err)
				require.Empty(t, p.Orders)
				require.NotEmpty(t, p.NextToken)
			}},
		{"bad token is permanent with the platform's message", setup{token: "wrong"},
			func(t *testing.T, _ connectors.Page, err error) {
				var pe *connectors.PermanentError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, http.StatusUnauthorized, pe.Status)
				require.Equal(t, "invalid or missing bearer token", pe.Msg)
				require.NotContains(t, err.Error(), "wrong", "the token is never in errors")
			}},
		{"page size over the maximum is permanent", setup{pageSize: 51},
			func(t *testing.T, _ connectors.Page, err error) {
				var pe *connectors.PermanentError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, http.StatusBadRequest, pe.Status)
				require.Contains(t, pe.Msg, "limit must be an integer between 1 and 50")
			}},
		{"window the platform rejects is permanent", setup{req: func(r *connectors.PageRequest) { r.From = time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC) }},
			func(t *testing.T, _ connectors.Page, err error) {
				var pe *connectors.PermanentError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, http.StatusBadRequest, pe.Status)
				require.Contains(t, pe.Msg, "outside 1970..2200")
			}},
		{"reversed window is permanent", setup{req: func(r *connectors.PageRequest) { r.From, r.To = r.To, r.From }},
			func(t *testing.T, _ connectors.Page, err error) {
				require.True(t, connectors.IsPermanent(err))
				require.ErrorContains(t, err, "empty window")
			}},
		{"foreign page token is permanent", setup{req: func(r *connectors.PageRequest) { r.Token = "bm90LWEtdG9rZW4" }},
			func(t *testing.T, _ connectors.Page, err error) {
				var pe *connectors.PermanentError
				require.ErrorAs(t, err, &pe)
				require.Contains(t, pe.Msg, "not a token issued by this API")
			}},
		{"unknown shop is permanent", setup{shop: "nope"},
			func(t *testing.T, _ connectors.Page, err error) {
				var pe *connectors.PermanentError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, http.StatusNotFound, pe.Status)
				require.Equal(t, `unknown shop "nope"`, pe.Msg)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			cfg := simConfig(2, clk)
			if tc.setup.cfg != nil {
				tc.setup.cfg(&cfg)
			}
			_, ts := startSim(t, cfg)
			token, shop, size, timeout := "acme-token", "acme", 10, 5*time.Second
			if tc.setup.token != "" {
				token = tc.setup.token
			}
			if tc.setup.shop != "" {
				shop = tc.setup.shop
			}
			if tc.setup.pageSize != 0 {
				size = tc.setup.pageSize
			}
			if tc.setup.timeout != 0 {
				timeout = tc.setup.timeout
			}
			c := newSimConn(t, ts.URL+"/shops/"+shop, token, size, timeout)
			req := connectors.PageRequest{From: clk.Now().Add(-time.Hour), To: clk.Now(), Page: 3}
			if tc.setup.req != nil {
				tc.setup.req(&req)
			}
			for i := 0; i < tc.setup.warmup; i++ {
				_, err := c.ListOrders(context.Background(), req)
				require.NoError(t, err)
			}
			started := time.Now()
			p, err := c.ListOrders(context.Background(), req)
			require.Less(t, time.Since(started), 3*time.Second)
			tc.check(t, p, err)
		})
	}
}

func TestSimConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := newSimConn(t, "http://"+addr+"/shops/acme", "t", 10, time.Second)
	_, err = c.ListOrders(context.Background(), connectors.PageRequest{From: time.Unix(0, 0), To: time.Unix(10, 0), Page: 1})
	var te *connectors.TransientError
	require.ErrorAs(t, err, &te)
	require.Equal(t, "request failed", te.Msg)
}

func TestSimConstruction(t *testing.T) {
	require.Contains(t, connectors.RegisteredKinds(), "sim")
	t.Setenv("ORDERSYNC_TEST_SIM_EMPTY", "")
	tests := []struct {
		name string
		p    config.Platform
		want string
	}{
		{"unset env", config.Platform{Name: "x", Kind: "sim", Endpoint: "http://h/shops/a", Credentials: config.CredentialRef{Env: "ORDERSYNC_TEST_SIM_EMPTY"}}, "credentials env:ORDERSYNC_TEST_SIM_EMPTY"},
		{"no reference", config.Platform{Name: "x", Kind: "sim", Endpoint: "http://h/shops/a"}, "no credential reference"},
		{"bad endpoint", config.Platform{Name: "x", Kind: "sim", Endpoint: "h/shops/a"}, "is not an http(s) URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := connectors.New(tc.p)
			require.True(t, connectors.IsPermanent(err))
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestSimOrderValidation feeds the connector bodies the simulator never
// sends, to check order validation and normalisation.
func TestSimOrderValidation(t *testing.T) {
	good := `{"id":"1","status":"paid","created_at":"2026-01-01T10:00:00+02:00","updated_at":"2026-01-01T11:00:00.5+02:00","currency":"EUR","total":"10.50","line_items":[{},{}]}`
	tests := []struct {
		name, body string
		want       string // error substring; "" means success
		offset     int64
	}{
		{"valid, times normalised", `{"orders":[` + good + `]}`, "", 0},
		{"missing id", `{"orders":[` + good + `, {"updated_at":"2026-01-01T10:00:00Z","total":"1"}]}`, "order 1: missing id", int64(len(`{"orders":[`+good) + 2)},
		{"bad updated_at", `{"orders":[{"id":"7","updated_at":"yesterday","total":"1"}]}`, `order 0: id 7: updated_at "yesterday"`, 11},
		{"float total", `{"orders":[{"id":"7","updated_at":"2026-01-01T10:00:00Z","total":"1e3"}]}`, `total "1e3" is not a decimal`, 11},
		{"negative quantity", `{"orders":[{"id":"7","updated_at":"2026-01-01T10:00:00Z","total":"1","line_items":[{"qty":-1}]}]}`,
			`order 0: id 7: line_items[0]: line 1: qty -1 is negative`, 11},
		{"float line price", `{"orders":[{"id":"7","updated_at":"2026-01-01T10:00:00Z","total":"1","line_items":[{"qty":1},{"qty":1,"price":"1.5e2"}]}]}`,
			`order 0: id 7: line_items[1]: line 2: price "1.5e2" is not a decimal number`, 11},
		{"quantity of the wrong kind", `{"orders":[{"id":"7","updated_at":"2026-01-01T10:00:00Z","total":"1","line_items":[{"qty":"2"}]}]}`,
			`order 0: line_items.qty is a string, want an integer`, 93},
		{"numeric id", `{"orders":[{"id":7}]}`, "order 0: id is a number, want a string", 18},
		{"no orders field", `{"next_page_token":""}`, `field "orders" is missing`, -1},
		{"orders not an array", `{"orders":{}}`, `field "orders" is not an array`, 10},
		{"not an object", `[]`, "body is not a JSON object", 0},
		{"empty body", ``, "unexpected end of JSON input", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			c := newSimConn(t, ts.URL, "t", 10, time.Second)
			p, err := c.ListOrders(context.Background(), connectors.PageRequest{From: time.Unix(0, 0), To: time.Unix(1, 0), Page: 4})
			if tc.want == "" {
				require.NoError(t, err)
				require.Len(t, p.Orders, 1)
				o := p.Orders[0]
				require.Equal(t, time.Date(2026, 1, 1, 9, 0, 0, 5e8, time.UTC), o.UpdatedAt)
				require.Equal(t, time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC), o.CreatedAt)
				require.Equal(t, "10.50", o.Total)
				require.Equal(t, 2, o.LineCount)
				require.True(t, o.HasLines)
				require.Equal(t, []connectors.OrderLine{{ID: "1", Currency: "EUR"}, {ID: "2", Currency: "EUR"}}, o.Lines)
				require.JSONEq(t, good, string(o.Raw))
				return
			}
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.Equal(t, 4, me.Page)
			require.Equal(t, tc.offset, me.Offset)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestHTTPHelpers(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {" 120 ", 2 * time.Minute}, {"0", 0}, {"-5", 0}, {"soon", 0},
		{"1.5", 1500 * time.Millisecond},
		{"Thu, 01 Jan 2026 00:00:30 GMT", 30 * time.Second},
		{"Wed, 31 Dec 2025 23:59:00 GMT", 0},
	} {
		require.Equal(t, tc.want, connectors.ParseRetryAfter(tc.in, now), "Retry-After %q", tc.in)
	}
	for _, tc := range []struct {
		body, want string
	}{
		{`{"error":"bad token"}`, "bad token"},
		{`{"errors":"[API] Invalid API key"}`, "[API] Invalid API key"},
		{`{"errors":{"created_at_min":["is invalid"]}}`, "created_at_min: is invalid"},
		{`{"errors":[{"code":"InvalidInput","message":"CreatedAfter is bad"}]}`, "InvalidInput: CreatedAfter is bad"},
		{`{"code":"woocommerce_rest_cannot_view","message":"Sorry"}`, "woocommerce_rest_cannot_view: Sorry"},
		{`{"error":"invalid_grant","error_description":"expired"}`, "expired"},
		{"plain\ntext", "plain text"},
		{`<html>oops</html>`, "Bad Request"},
		{``, "Bad Request"},
	} {
		require.Equal(t, tc.want, connectors.ErrorMessage(400, []byte(tc.body)), "body %q", tc.body)
	}
	for in, want := range map[string]bool{"1": true, "10.50": true, "-0.5": true, "0.125": true, "": false, "1e3": false, "1.": false, ".5": false, "NaN": false, "1,5": false, "+1": false} {
		require.Equal(t, want, connectors.ValidDecimal(in), "decimal %q", in)
	}
	items, err := connectors.DecodeArrayField("p", 1, []byte(`{"a":1, "orders": [ {"x":1} ,{"y":[2]}], "z":null}`), "orders")
	require.NoError(t, err)
	require.Len(t, items, 2)
	require.Equal(t, int64(20), items[0].Offset)
	require.Equal(t, int64(29), items[1].Offset)
	require.JSONEq(t, `{"y":[2]}`, string(items[1].Raw))
	_, err = connectors.DecodeArrayField("p", 1, []byte(`{"orders": [ {"x":1} ,{"y":`), "orders")
	var me *connectors.MalformedError
	require.True(t, errors.As(err, &me))
	require.Equal(t, int64(27), me.Offset, "truncated: offset is the body length")
	_, err = connectors.DecodeArrayField("p", 1, []byte("{\"orders\": [ {\"x\":1} ,{\"y\":\x01}]}"), "orders")
	require.True(t, errors.As(err, &me))
	require.Equal(t, int64(28), me.Offset, "garbled: the offset is just past the bad byte")
}
