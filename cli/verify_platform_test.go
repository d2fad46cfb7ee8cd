package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// cursorClient answers the status query of one platform's cursor.
type cursorClient struct {
	client.Client
	status api.CursorStatus
}

func (c *cursorClient) QueryWorkflow(_ context.Context, id, _, query string, _ ...any) (converter.EncodedValue, error) {
	if id != api.CursorWorkflowID(c.status.Platform) || query != api.QueryStatus {
		return nil, serviceerror.NewNotFound("workflow not found for ID: " + id)
	}
	b, err := json.Marshal(c.status)
	if err != nil {
		return nil, err
	}
	return jsonValue(b), nil
}

func (c *cursorClient) Close() {}

// fillStore stores every order conn lists in [from, to), as the cursor's
// slices would, and returns their ids.
func fillStore(t *testing.T, st store.Store, conn connectors.Connector, platform string, from, to time.Time) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for token, page := "", 1; ; page++ {
		pg, err := conn.ListOrders(ctx, connectors.PageRequest{From: from, To: to, Token: token, PageSize: 25, Page: page})
		require.NoError(t, err)
		for i := range pg.Orders {
			pg.Orders[i].Platform = platform
			ids = append(ids, pg.Orders[i].ID)
		}
		_, err = st.UpsertOrders(ctx, pg.Orders)
		require.NoError(t, err)
		if token = pg.NextToken; token == "" {
			return ids
		}
	}
}

// TestVerifyJudgesFromTheCursorsStart plays the demo's second `make run`:
// the simulator shows orders updated before the cursor's start, which the
// cursor never fetched. verify judges only [start, watermark) and finds
// nothing missing; main counted those orders as missing.
func TestVerifyJudgesFromTheCursorsStart(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, file, dsn := startVerifySim(t, now)
	st, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer st.Close()

	start := now.Add(-24 * time.Hour)
	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	before := 0
	for _, o := range truth.Orders {
		if o.UpdatedAt.Before(start) {
			before++
		}
	}
	require.Positive(t, before, "the simulator shows orders updated before the cursor's start")

	f, err := config.LoadFile(file)
	require.NoError(t, err)
	p, _ := f.Get("sim-acme")
	conn, err := connectors.New(p)
	require.NoError(t, err)
	ids := fillStore(t, st, conn, "sim-acme", start, now)
	require.Greater(t, len(ids), 10)

	cursor := &cursorClient{status: api.CursorStatus{Platform: "sim-acme", Kind: "sim", Start: start, Watermark: now}}
	code, out, errOut := runCommand(t, cursor, "verify", "--platform", "sim-acme", "--sim-admin-token", "admin-token", "-f", file)
	require.Equal(t, ExitOK, code, out+errOut)
	require.Contains(t, out, fmt.Sprintf("sim-acme: judged orders updated in [%s, %s): from the cursor's start, until the cursor's watermark",
		start.Format(time.RFC3339), now.Format(time.RFC3339)))
	require.Contains(t, out, fmt.Sprintf("sim-acme: %d orders updated before %s (since %s) checked: 0 missing, 0 stale, 0 lines differ, 0 extra",
		len(ids), now.Format(time.RFC3339), start.Format(time.RFC3339)))

	code, out, _ = runCommand(t, cursor, "verify", "--platform", "sim-acme", "--sim-admin-token", "admin-token", "-f", file, "-o", "json")
	require.Equal(t, ExitOK, code)
	var doc verifyOutcome
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.True(t, doc.Complete)
	require.Equal(t, start, doc.Report.Judged.From)
	require.Equal(t, now, doc.Report.Judged.To)
	require.Equal(t, len(ids), doc.Report.Checked)

	// Right after a restart the new cursor's watermark is still its start:
	// nothing is due, so nothing is missing.
	fresh := &cursorClient{status: api.CursorStatus{Platform: "sim-acme", Kind: "sim", Start: now, Watermark: now}}
	code, out, errOut = runCommand(t, fresh, "verify", "--platform", "sim-acme", "--sim-admin-token", "admin-token", "-f", file)
	require.Equal(t, ExitOK, code, out+errOut)
	require.Contains(t, out, "sim-acme: nothing to judge yet")
	require.Contains(t, out, "checked: 0 missing, 0 stale, 0 lines differ, 0 extra")

	// A cursor that started earlier owes those orders: they are missing.
	cursor.status.Start = now.Add(-72 * time.Hour)
	code, out, _ = runCommand(t, cursor, "verify", "--platform", "sim-acme", "--sim-admin-token", "admin-token", "-f", file)
	require.Equal(t, ExitFailure, code)
	require.Contains(t, out, fmt.Sprintf("checked: %d missing, 0 stale", before))
}

// shopifyFront stands in front of the simulator's Shopify surface and
// answers some orders queries itself: the throttling Shopify documents
// (THROTTLED with the bucket's state; HTTP 429 with Retry-After), or a
// hang until the client gives up.
type shopifyFront struct {
	next http.Handler
	mu   sync.Mutex
	// answer decides the n-th orders query (1-based) while set: "" passes
	// it on.
	answer     func(n int) string
	n          int
	throttled  int
	tooMany    int
	ordersSeen int
}

func (f *shopifyFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !strings.Contains(string(body), `"operationName":"OrdersUpdatedInWindow"`) {
		f.next.ServeHTTP(w, r)
		return
	}
	f.mu.Lock()
	f.ordersSeen++
	what := ""
	if f.answer != nil {
		f.n++
		what = f.answer(f.n)
	}
	switch what {
	case "throttled":
		f.throttled++
	case "429":
		f.tooMany++
	}
	f.mu.Unlock()
	switch what {
	case "throttled":
		// Shopify's answer to a query the bucket cannot hold: HTTP 200, the
		// THROTTLED error, actualQueryCost null and the bucket's state.
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}],`+
			`"extensions":{"cost":{"requestedQueryCost":800,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":20000.0,"currentlyAvailable":790,"restoreRate":2000.0}}}}`)
	case "429":
		w.Header().Set("Retry-After", "1.0")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"errors":"Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."}`)
	case "hang":
		<-r.Context().Done()
	default:
		f.next.ServeHTTP(w, r)
	}
}

const shopifyOnSimPlatforms = `
platforms:
  shopify-acme:
    kind: shopify
    endpoint: %s/shops/acme
    credentials: {env: ORDERSYNC_TEST_SHOPIFY_TOKEN}
    start: %s
    page_size: 10
    interval: 1h
    rate_limit: {rps: 20, burst: 1}
    # A Plus-sized bucket: full orders cost about 63 points each, and the
    # test is about the waits for THROTTLED and 429, not the bucket's pace.
    options: {restore_rate: 2000, max_cost_available: 20000}
`

// startShopifyFront starts a simulator (its clock still at now) behind a
// shopifyFront, stores what the shop lists in [from, now) and returns the
// front with the platforms file and the stored ids.
func startShopifyFront(t *testing.T, now, from time.Time) (*shopifyFront, string, []string) {
	t.Helper()
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	s, err := sim.New(sim.Config{Seed: 9, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-token"}}, AdminToken: "admin-token",
		History: 48 * time.Hour, HistoryOrders: 60, MaxUpdates: 3, UpdateSpread: 24 * time.Hour, Late: time.Minute,
		Clock: func() time.Time { return now }})
	require.NoError(t, err)
	front := &shopifyFront{next: s.Handler()}
	ts := httptest.NewServer(front)
	t.Cleanup(ts.Close)
	t.Setenv("ORDERSYNC_TEST_SHOPIFY_TOKEN", "acme-token")
	file := writePlatforms(t, fmt.Sprintf(shopifyOnSimPlatforms, ts.URL, from.Format(time.RFC3339)))
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	st, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	defer st.Close()
	f, err := config.LoadFile(file)
	require.NoError(t, err)
	p, _ := f.Get("shopify-acme")
	conn, err := connectors.New(p)
	require.NoError(t, err)
	ids := fillStore(t, st, conn, "shopify-acme", from, now)
	require.Greater(t, len(ids), 10)
	return front, file, ids
}

// TestVerifyWaitsOutThrottling: Shopify answers verify's listing with
// THROTTLED, then with HTTP 429 and Retry-After; verify waits both out,
// completes, and finds nothing missing. main stopped at the first with
// exit 1. It paces at the lower rate the shop stated to the cursor.
func TestVerifyWaitsOutThrottling(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	start := now.Add(-24 * time.Hour)
	front, file, ids := startShopifyFront(t, now, start)
	front.answer = func(n int) string {
		switch n {
		case 1:
			return "throttled"
		case 3:
			return "429"
		}
		return ""
	}
	// The shop stated 10 requests/s to the fleet, below the configured 20.
	cursor := &cursorClient{status: api.CursorStatus{Platform: "shopify-acme", Kind: "shopify", Start: start, Watermark: now, StatedRate: 10}}
	code, out, errOut := runCommand(t, cursor, "verify", "--platform", "shopify-acme", "-f", file)
	require.Equal(t, ExitOK, code, out+errOut)
	t.Log(out)
	require.Contains(t, out, "paced at 10/s with the workers")
	require.Equal(t, 1, front.throttled)
	require.Equal(t, 1, front.tooMany)
	require.Contains(t, out, "waited out 2 rate-limit answers")
	require.Contains(t, out, fmt.Sprintf("shopify-acme: %d orders updated before %s (since %s) checked: 0 missing, 0 stale, 0 lines differ, 0 extra",
		len(ids), now.Format(time.RFC3339), start.Format(time.RFC3339)))
}

// TestVerifyIncompleteReportsTheRangeCovered: the shop stops answering
// mid-listing; at --timeout verify judges the windows it listed, prints
// that range, and exits 3 (incomplete).
func TestVerifyIncompleteReportsTheRangeCovered(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	start := now.Add(-24 * time.Hour)
	front, file, _ := startShopifyFront(t, now, start)
	front.answer = func(n int) string {
		if n >= 3 {
			return "hang"
		}
		return ""
	}
	cursor := &cursorClient{status: api.CursorStatus{Platform: "shopify-acme", Kind: "shopify", Start: start, Watermark: now}}
	code, out, errOut := runCommand(t, cursor, "verify", "--platform", "shopify-acme", "-f", file, "--timeout", "2s", "-o", "json")
	require.Equal(t, ExitIncomplete, code, out+errOut)
	var doc verifyOutcome
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.False(t, doc.Complete)
	require.Equal(t, "--timeout reached", doc.Stopped)
	require.Equal(t, start, doc.Report.Judged.From)
	require.True(t, doc.Report.Judged.To.After(start) && doc.Report.Judged.To.Before(now), "part of the range: %s", doc.Report.Judged)
	require.Equal(t, doc.Progress.Reached, doc.Report.Judged.To)
	require.Equal(t, verify.Range{From: start, To: now}, doc.Asked)
	require.Empty(t, doc.Report.Missing)
	require.Empty(t, doc.Report.Extra, "stored orders past the range covered are not judged")
	require.Contains(t, errOut, "incomplete: judged "+doc.Report.Judged.String())
}

// TestVerifyProgressLine: the progress line says the window reached,
// pages, orders and waits, and escapes the platform's name.
func TestVerifyProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progressLine{w: &buf, platform: "shop\x1b[2J"}
	p.show(verify.Progress{Reached: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Windows: 3, Pages: 7, Orders: 46, RateLimited: 1, SlotWaits: 1})
	p.done()
	require.Equal(t, "\r\x1b[Kshop\\x1b[2J: listed to 2026-03-01T12:00:00Z: 3 windows, 7 pages, 46 orders, 2 rate-limit waits\n", buf.String())

	buf.Reset()
	quiet := newProgressLine(&buf, "shop") // not a terminal: no progress
	quiet.show(verify.Progress{Pages: 1})
	quiet.done()
	require.Empty(t, buf.String())
}
