package connectors_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/store"
)

// An "evil platform" is an httptest server speaking the simulator's API
// (kind sim) that misbehaves in one way. The bad-input tests run it through
// the real page activity and a real SQLite store, the way FetchSlice does,
// and compare what was stored with what the platform showed.

var evilFrom = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

const evilToken = "evil-platform-token"

// evilRequest is what the platform was asked.
type evilRequest struct {
	From, To time.Time
	Limit    string
	Token    string
}

// evilPlatform serves GET /shops/evil/orders with respond, which returns the
// status and body for one request.
type evilPlatform struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []evilRequest
}

func newEvilPlatform(t *testing.T, respond func(r evilRequest) (int, string)) *evilPlatform {
	t.Helper()
	e := &evilPlatform{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		from, _ := time.Parse(time.RFC3339Nano, q.Get("updated_from"))
		to, _ := time.Parse(time.RFC3339Nano, q.Get("updated_to"))
		req := evilRequest{From: from, To: to, Limit: q.Get("limit"), Token: q.Get("page_token")}
		e.mu.Lock()
		e.requests = append(e.requests, req)
		e.mu.Unlock()
		code, body := respond(req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// platform is the settings of a sim-kind platform pointed at the server.
func (e *evilPlatform) platform(t *testing.T, name string) config.Platform {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(evilToken), 0o600))
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.Endpoint, p.TaskQueue = name, "sim", e.srv.URL+"/shops/evil", "orders-"+name
	p.Credentials = config.CredentialRef{File: file}
	p.PageSize = 10
	p.Timeout = config.Duration(5 * time.Second)
	p.RateLimit = config.RateLimit{RPS: 1000, Burst: 100}
	return p
}

// orderJSON renders one order as the simulator's API does, with
// updated_at exactly as given (any zone, any precision).
func orderJSON(id, updatedAt string) string {
	return fmt.Sprintf(`{"id":%q,"status":"paid","created_at":"2026-03-01T09:00:00Z","updated_at":%q,"currency":"EUR","total":"10.00","line_items":[{"sku":"A","qty":1}],"customer":{"email":"x@example.com"}}`, id, updatedAt)
}

// pageJSON renders a page of orders with an optional next token.
func pageJSON(token string, orders ...string) string {
	if token == "" {
		return `{"orders":[` + strings.Join(orders, ",") + `]}`
	}
	return fmt.Sprintf(`{"orders":[%s],"next_page_token":%q}`, strings.Join(orders, ","), token)
}

// pipeline is the page activity over a real SQLite store, run in
// Temporal's activity test environment.
type pipeline struct {
	t     *testing.T
	store store.Store
	env   *testsuite.TestActivityEnvironment
	acts  *activities.Activities
	// declared is the worker's platforms file: the platform under test.
	declared *config.File
}

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	quiet := slog.New(slog.DiscardHandler) // the failures here are on purpose
	declared := &config.File{}             // what the worker's platforms file declares: set by fetchSlice
	acts := &activities.Activities{Store: st, Connectors: activities.NewConnectorCache(declared), Limiters: activities.NewLimiters(), Logger: quiet}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(quiet))
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return &pipeline{t: t, store: st, env: env, acts: acts, declared: declared}
}

// fetchSlice pages through [start-overlap, end) as FetchSlice does and
// sums the page results; it stops at the first failed page.
func (pl *pipeline) fetchSlice(p config.Platform, start, end time.Time) (activities.FetchPageResult, int, error) {
	pl.t.Helper()
	pl.declared.Platforms = []config.Platform{p}
	var sum activities.FetchPageResult
	token := ""
	for page := 1; page < 100; page++ {
		val, err := pl.env.ExecuteActivity(pl.acts.FetchPage, activities.FetchPageInput{
			Platform: p.Settings(), SliceID: "slice/" + p.Name + "/test", From: start.Add(-p.Overlap.D()), To: end, Token: token, Page: page,
		})
		if err != nil {
			return sum, page, err
		}
		var r activities.FetchPageResult
		require.NoError(pl.t, val.Get(&r))
		sum.Fetched += r.Fetched
		sum.Inserted += r.Inserted
		sum.Updated += r.Updated
		sum.Unchanged += r.Unchanged
		sum.OutsideRange += r.OutsideRange
		if r.NextToken == "" {
			return sum, page, nil
		}
		token = r.NextToken
	}
	pl.t.Fatal("paging does not end")
	return sum, 0, nil
}

// requireHolds compares the store with the orders the platform showed
// (id -> newest updated_at, RFC3339 in any zone): nothing missing, nothing
// stale, and nothing newer than shown (the stored instant is the platform's).
func (pl *pipeline) requireHolds(platform string, want map[string]string) {
	pl.t.Helper()
	stored, err := pl.store.OrderVersions(context.Background(), platform)
	require.NoError(pl.t, err)
	var expected []verify.Expected
	for id, ts := range want {
		at, err := time.Parse(time.RFC3339Nano, ts)
		require.NoError(pl.t, err)
		expected = append(expected, verify.Expected{ID: id, UpdatedAt: at})
		require.True(pl.t, stored[id].Equal(at.Truncate(time.Microsecond)), "order %s: stored %s, platform shows %s", id, stored[id], at.UTC())
	}
	r := verify.Compare(platform, expected, stored)
	require.Empty(pl.t, r.Missing, "missing")
	require.Empty(pl.t, r.Stale, "stale")
}
