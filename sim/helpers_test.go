package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

func testConfig(seed int64, clk *fakeClock) Config {
	return Config{
		Seed:          seed,
		Shops:         []ShopConfig{{Name: "acme", Token: "acme-token"}, {Name: "globex", Token: "globex-token"}},
		AdminToken:    "admin-token",
		History:       24 * time.Hour,
		HistoryOrders: 200,
		LiveRate:      0.02,
		MaxUpdates:    4,
		UpdateSpread:  6 * time.Hour,
		Late:          5 * time.Minute,
		MaxPageSize:   50,
		Clock:         clk.Now,
	}
}

func startTest(t *testing.T, cfg Config) (*Simulator, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts
}

// get performs a GET with a bearer token and returns status, headers and body.
func get(t *testing.T, u, token string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func listURL(base, shop string, from, to time.Time, limit int, token string) string {
	q := url.Values{}
	q.Set("updated_from", from.Format(time.RFC3339Nano))
	q.Set("updated_to", to.Format(time.RFC3339Nano))
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if token != "" {
		q.Set("page_token", token)
	}
	return base + "/shops/" + shop + "/orders?" + q.Encode()
}

// listAll pages through [from, to) and returns every order in page order.
func listAll(t *testing.T, base, shop, token string, from, to time.Time, limit int) []wireOrder {
	t.Helper()
	var all []wireOrder
	next := ""
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10000, "paging does not end")
		code, _, body := get(t, listURL(base, shop, from, to, limit, next), token)
		require.Equal(t, http.StatusOK, code, string(body))
		var lb listBody
		require.NoError(t, json.Unmarshal(body, &lb))
		all = append(all, lb.Orders...)
		if lb.NextPageToken == "" {
			return all
		}
		next = lb.NextPageToken
	}
}

// brief is the part of an order the truth covers, for comparisons.
type brief struct {
	ID, UpdatedAt, Status, Total string
}

func briefsOfList(orders []wireOrder) map[string]brief {
	m := map[string]brief{}
	for _, o := range orders {
		m[o.ID] = brief{o.ID, o.UpdatedAt, o.Status, o.Total}
	}
	return m
}

func briefsOfTruth(tr *Truth) map[string]brief {
	m := map[string]brief{}
	for _, o := range tr.Orders {
		m[o.ID] = brief{o.ID, o.UpdatedAt.Format(time.RFC3339Nano), o.Status, o.Total}
	}
	return m
}

var (
	epoch   = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	farAway = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
)
