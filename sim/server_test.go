package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBadRequests(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(1, clk))
	now := clk.Now()
	from, to := now.Add(-48*time.Hour), now
	// A real token of this window, for the wrong-window and wrong-shop cases.
	_, _, body := get(t, listURL(ts.URL, "acme", from, to, 1, ""), "acme-token")
	var lb listBody
	require.NoError(t, json.Unmarshal(body, &lb))
	require.NotEmpty(t, lb.NextPageToken)
	q := func(from, to, limit, token string) string {
		return "?updated_from=" + from + "&updated_to=" + to + "&limit=" + limit + "&page_token=" + token
	}
	f, tt := from.Format(time.RFC3339), to.Format(time.RFC3339)
	tests := []struct {
		name, path, token string
		status            int
		msg               string
	}{
		{"ok", "/shops/acme/orders" + q(f, tt, "5", ""), "acme-token", 200, ""},
		{"default limit", "/shops/acme/orders?updated_from=" + f + "&updated_to=" + tt, "acme-token", 200, ""},
		{"unknown shop", "/shops/nope/orders" + q(f, tt, "5", ""), "acme-token", 404, `unknown shop "nope"`},
		{"unknown path", "/orders", "acme-token", 404, "no endpoint"},
		{"no token", "/shops/acme/orders" + q(f, tt, "5", ""), "", 401, "bearer token"},
		{"other shop's token", "/shops/acme/orders" + q(f, tt, "5", ""), "globex-token", 401, "bearer token"},
		{"missing from", "/shops/acme/orders?updated_to=" + tt, "acme-token", 400, "updated_from is required"},
		{"malformed to", "/shops/acme/orders" + q(f, "yesterday", "5", ""), "acme-token", 400, `updated_to "yesterday" is not an RFC3339 time`},
		{"from after to", "/shops/acme/orders" + q(tt, f, "5", ""), "acme-token", 400, "updated_from must be before updated_to"},
		{"empty window", "/shops/acme/orders" + q(f, f, "5", ""), "acme-token", 400, "updated_from must be before updated_to"},
		{"limit 0", "/shops/acme/orders" + q(f, tt, "0", ""), "acme-token", 400, "limit must be an integer between 1 and 50"},
		{"limit over max", "/shops/acme/orders" + q(f, tt, "51", ""), "acme-token", 400, "limit must be an integer between 1 and 50"},
		{"garbage token", "/shops/acme/orders" + q(f, tt, "5", "xyz"), "acme-token", 400, "not a token issued by this API"},
		{"token of another window", "/shops/acme/orders" + q(from.Add(time.Second).Format(time.RFC3339), tt, "5", lb.NextPageToken), "acme-token", 400, "different window"},
		{"token of another shop", "/shops/globex/orders" + q(f, tt, "5", lb.NextPageToken), "globex-token", 400, "different shop"},
		{"admin without token", "/admin/stats", "", 401, "admin bearer token"},
		{"admin with shop token", "/admin/shops/acme/truth", "acme-token", 401, "admin bearer token"},
		{"truth of unknown shop", "/admin/shops/nope/truth", "admin-token", 404, "unknown shop"},
		{"truth in the future", "/admin/shops/acme/truth?as_of=2100-01-01T00:00:00Z", "admin-token", 400, "after the simulator's now"},
		{"truth at a bad time", "/admin/shops/acme/truth?as_of=noon", "admin-token", 400, "not an RFC3339 time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := get(t, ts.URL+tc.path, tc.token)
			require.Equal(t, tc.status, code, string(body))
			require.Equal(t, "application/json", hdr.Get("Content-Type"))
			var e errorBody
			require.NoError(t, json.Unmarshal(body, &e), "always JSON")
			require.Contains(t, e.Error, tc.msg)
		})
	}
	st := (&AdminClient{BaseURL: ts.URL, Token: "admin-token"})
	stats, err := st.Stats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 2, stats.Shops["acme"].Unauthorized)
	require.EqualValues(t, 8, stats.Shops["acme"].BadRequests)
}

func TestRateLimit(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(1, clk)
	cfg.RateLimit = RateLimit{RPS: 0.5, Burst: 3}
	s, ts := startTest(t, cfg)
	u := listURL(ts.URL, "acme", clk.Now().Add(-time.Hour), clk.Now(), 5, "")
	for i := 0; i < 3; i++ {
		code, hdr, _ := get(t, u, "acme-token")
		require.Equal(t, 200, code, "request %d is within the burst", i)
		require.Equal(t, "0.5", hdr.Get("X-RateLimit-Limit"))
	}
	code, hdr, body := get(t, u, "acme-token")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "2", hdr.Get("Retry-After"), "one token takes 2s at 0.5/s")
	require.Contains(t, string(body), "rate limit exceeded")
	code, _, _ = get(t, strings.Replace(u, "/acme/", "/globex/", 1), "globex-token")
	require.Equal(t, 200, code, "buckets are per shop")

	clk.Add(1500 * time.Millisecond)
	code, hdr, _ = get(t, u, "acme-token")
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "1", hdr.Get("Retry-After"), "0.5s left, rounded up")
	clk.Add(500 * time.Millisecond)
	code, _, _ = get(t, u, "acme-token")
	require.Equal(t, 200, code, "refilled")

	require.NoError(t, s.SetRateLimit(RateLimit{}))
	for i := 0; i < 10; i++ {
		code, _, _ = get(t, u, "acme-token")
		require.Equal(t, 200, code, "unlimited")
	}
	st := s.Stats().Shops["acme"]
	require.EqualValues(t, 2, st.RateLimited)
	require.EqualValues(t, 16, st.Requests)
	require.Equal(t, 12, st.PeakRequestsPerSecond, "(t0+1s, t0+2s] holds the request at 1.5s and the 11 at 2s")
}

func TestPeakRate(t *testing.T) {
	var p peakRate
	sec := int64(time.Second / time.Microsecond)
	for _, at := range []int64{0, 1, sec - 1, sec, sec + 1, 3 * sec, 3 * sec} {
		p.add(at)
	}
	// (0, 1s] holds 1, 1s-1 and 1s; (1, 1s+1] holds 1s-1, 1s and 1s+1: never 4,
	// because 0 and 1s are a full second apart.
	require.Equal(t, 3, p.peak)
	p.add(3*sec + 5)
	require.Equal(t, 3, p.peak)
	p.add(4*sec - 1)
	require.Equal(t, 4, p.peak, "3s, 3s, 3s+5µs and 4s-1µs lie within one second")
}

func TestFaults(t *testing.T) {
	clk := newFakeClock()
	s, ts := startTest(t, testConfig(1, clk))
	from, to := clk.Now().Add(-24*time.Hour), clk.Now()
	u := listURL(ts.URL, "acme", from, to, 10, "")
	_, _, clean := get(t, u, "acme-token")

	require.NoError(t, s.SetFaults(Faults{Err5xx: 1}))
	code, _, body := get(t, u, "acme-token")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, string(body), `"error"`)

	require.NoError(t, s.SetFaults(Faults{Malformed: 1}))
	for i := 0; i < 20; i++ {
		code, _, body = get(t, u, "acme-token")
		require.Equal(t, http.StatusOK, code)
		require.False(t, json.Valid(body), "malformed body %d: %q", i, body)
	}

	require.NoError(t, s.SetFaults(Faults{EmptyPageWithToken: 1}))
	code, _, body = get(t, u, "acme-token")
	require.Equal(t, http.StatusOK, code)
	var empty listBody
	require.NoError(t, json.Unmarshal(body, &empty))
	require.Empty(t, empty.Orders)
	require.NotEmpty(t, empty.NextPageToken)
	require.NoError(t, s.SetFaults(Faults{}))
	_, _, resumed := get(t, listURL(ts.URL, "acme", from, to, 10, empty.NextPageToken), "acme-token")
	require.JSONEq(t, string(clean), string(resumed), "the empty page's token resumes where it started")

	require.NoError(t, s.SetFaults(Faults{Hang: 1, HangFor: 2 * time.Second}))
	client := &http.Client{Timeout: 100 * time.Millisecond}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer acme-token")
	started := time.Now()
	_, err := client.Do(req)
	require.Error(t, err)
	require.Less(t, time.Since(started), time.Second)

	require.Error(t, s.SetFaults(Faults{Err5xx: 0.6, Hang: 0.6}), "rates sum over 1")
	st := s.Stats().Shops["acme"]
	require.Equal(t, FaultStats{Err5xx: 1, Hang: 1, Malformed: 20, EmptyPage: 1}, st.Faults)
	require.EqualValues(t, 2, st.Pages)
}

// TestFaultRates: faults are drawn at their configured rates.
func TestFaultRates(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(9, clk)
	cfg.Faults = Faults{Err5xx: 0.1, Malformed: 0.2, EmptyPageWithToken: 0.3}
	s, ts := startTest(t, cfg)
	u := listURL(ts.URL, "globex", clk.Now().Add(-time.Hour), clk.Now(), 1, "")
	for i := 0; i < 1000; i++ {
		get(t, u, "globex-token")
	}
	f := s.Stats().Shops["globex"].Faults
	require.InDelta(t, 100, f.Err5xx, 40)
	require.InDelta(t, 200, f.Malformed, 50)
	require.InDelta(t, 300, f.EmptyPage, 60)
	require.Zero(t, f.Hang)
}

// TestConcurrent hammers the simulator from many goroutines while the clock
// moves; run with -race to check the locking.
func TestConcurrent(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(2, clk)
	cfg.LiveRate = 5
	s, ts := startTest(t, cfg)
	admin := &AdminClient{BaseURL: ts.URL, Token: "admin-token"}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				clk.Add(time.Second)
				shop := []string{"acme", "globex"}[(g+i)%2]
				listAll(t, ts.URL, shop, shop+"-token", epoch, farAway, 50)
				if i%5 == 0 {
					_, err := admin.Truth(context.Background(), shop)
					require.NoError(t, err)
				}
			}
		}()
	}
	wg.Wait()
	tr, err := admin.Truth(context.Background(), "acme")
	require.NoError(t, err)
	require.Equal(t, briefsOfTruth(tr), briefsOfList(listAll(t, ts.URL, "acme", "acme-token", epoch, farAway, 50)))
	_ = s
}

func TestAdminClient(t *testing.T) {
	clk := newFakeClock()
	s, ts := startTest(t, testConfig(4, clk))
	ctx := context.Background()
	admin := &AdminClient{BaseURL: ts.URL, Token: "admin-token"}
	tr, err := admin.Truth(ctx, "acme")
	require.NoError(t, err)
	want, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	require.Equal(t, want, tr)
	past := clk.Now().Add(-time.Hour)
	tr, err = admin.TruthAsOf(ctx, "acme", past)
	require.NoError(t, err)
	require.Equal(t, past, tr.AsOf)
	require.Less(t, len(tr.Orders), len(want.Orders))
	for _, o := range want.Orders {
		require.Nil(t, o.Lines, "lines only when asked")
	}

	// With lines: the same orders, each with the line items the list shows.
	withLines, err := admin.TruthWithLines(ctx, "acme", time.Time{})
	require.NoError(t, err)
	inProcess, err := s.TruthWithLines("acme", time.Time{})
	require.NoError(t, err)
	require.Equal(t, inProcess, withLines)
	require.Equal(t, briefsOfTruth(want), briefsOfTruth(withLines))
	listed := map[string]wireOrder{}
	for _, o := range listAll(t, ts.URL, "acme", "acme-token", epoch, farAway, 50) {
		listed[o.ID] = o
	}
	require.Len(t, withLines.Orders, len(listed))
	for _, o := range withLines.Orders {
		items := listed[o.ID].LineItems
		require.Len(t, o.Lines, len(items), o.ID)
		for j, li := range items {
			require.Equal(t, TruthLine{SKU: li.SKU, Title: li.Title, Quantity: li.Qty, UnitPrice: li.Price, Currency: listed[o.ID].Currency},
				o.Lines[j], "%s line %d", o.ID, j+1)
		}
	}
	code, _, body := get(t, ts.URL+"/admin/shops/acme/truth?lines=maybe", "admin-token")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, string(body), `lines \"maybe\" is not true or false`)

	_, err = (&AdminClient{BaseURL: ts.URL, Token: "wrong"}).Stats(ctx)
	require.ErrorContains(t, err, "HTTP 401: invalid or missing admin bearer token")

	cfg := testConfig(4, clk)
	cfg.AdminToken = ""
	_, ts2 := startTest(t, cfg)
	_, err = (&AdminClient{BaseURL: ts2.URL}).Stats(ctx)
	require.ErrorContains(t, err, "admin API disabled")
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no shops", func(c *Config) { c.Shops = nil }, "at least one shop"},
		{"bad name", func(c *Config) { c.Shops[0].Name = "a/b" }, `name "a/b"`},
		{"duplicate", func(c *Config) { c.Shops[1].Name = "acme" }, "listed twice"},
		{"no token", func(c *Config) { c.Shops[0].Token = "" }, "has no token"},
		{"history", func(c *Config) { c.History = 0 }, "History > 0"},
		{"updates", func(c *Config) { c.MaxUpdates = 16 }, "MaxUpdates must be in [0,15]"},
		{"fault rate", func(c *Config) { c.Faults.Hang = 1.5 }, "fault rate Hang"},
		{"rate limit", func(c *Config) { c.RateLimit.RPS = -1 }, "rate limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(1, newFakeClock())
			tc.mutate(&cfg)
			_, err := New(cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
	shops, err := ParseShops("a:x, b:y")
	require.NoError(t, err)
	require.Equal(t, []ShopConfig{{Name: "a", Token: "x"}, {Name: "b", Token: "y"}}, shops)
	_, err = ParseShops("a")
	require.Error(t, err)
	_, err = New(DefaultConfig())
	require.NoError(t, err)
}

func TestStartServer(t *testing.T) {
	clk := newFakeClock()
	s, err := New(testConfig(1, clk))
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	require.True(t, strings.HasPrefix(srv.ShopURL("acme"), "http://127.0.0.1:"))
	code, _, _ := get(t, listURL(srv.URL, "acme", epoch, farAway, 5, ""), "acme-token")
	require.Equal(t, 200, code)
	stats, err := srv.Admin("admin-token").Stats(context.Background())
	require.NoError(t, err)
	require.EqualValues(t, 1, stats.Shops["acme"].Pages)
}
