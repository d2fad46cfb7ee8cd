package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/mock/gomock"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/store"
)

// Platform data is untrusted: these tests run FetchPage into a real SQLite
// store and check what ends up there, what is counted and what is logged.
func TestFetchPageSetsAsideUntrustedOrders(t *testing.T) {
	now := time.Now().UTC()
	year2999 := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	order := func(id string, updated time.Time) connectors.Order {
		return connectors.Order{ID: id, Status: "paid", Total: "123.45", Currency: "EUR",
			CreatedAt: t0, UpdatedAt: updated, Raw: json.RawMessage(`{"email":"buyer@example.com"}`)}
	}
	tests := []struct {
		name      string
		skew      time.Duration
		prestored []connectors.Order // in the store before the page
		page      []connectors.Order
		want      FetchPageResult
		stored    map[string]time.Time // id -> updated_at in the store afterwards
		lines     map[string]int       // id -> lines stored with it, where checked
		logs      []string             // in the warning, besides platform, slice and page
	}{
		{
			name: "far-future versions set aside, the rest stored",
			page: []connectors.Order{
				order("good", t0.Add(time.Minute)),
				order("pinned", year2999),
				order("ahead", now.Add(time.Hour)),
				order("slightly-ahead", now.Add(time.Minute)), // within the skew: stored, outside the window
			},
			want:   FetchPageResult{Fetched: 4, Inserted: 2, OutsideRange: 1, FutureStamped: 2},
			stored: map[string]time.Time{"good": t0.Add(time.Minute), "slightly-ahead": now.Add(time.Minute)},
			logs:   []string{"stamped in the future", "pinned", "ahead", "allowed_skew=5m0s"},
		},
		{
			name:   "a wider skew lets the hour-ahead version in",
			skew:   2 * time.Hour,
			page:   []connectors.Order{order("ahead", now.Add(time.Hour)), order("pinned", year2999)},
			want:   FetchPageResult{Fetched: 2, Inserted: 1, OutsideRange: 1, FutureStamped: 1},
			stored: map[string]time.Time{"ahead": now.Add(time.Hour)},
			logs:   []string{"pinned", "allowed_skew=2h0m0s"},
		},
		{
			name:      "a pin stored before the fix heals with the real version",
			prestored: []connectors.Order{order("pinned", year2999)},
			page:      []connectors.Order{order("pinned", t0.Add(2*time.Minute))},
			want:      FetchPageResult{Fetched: 1, Updated: 1},
			stored:    map[string]time.Time{"pinned": t0.Add(2 * time.Minute)},
		},
		{
			name: "orders without updated_at or id rejected alone",
			page: []connectors.Order{
				order("good", t0.Add(time.Minute)),
				order("no-time", time.Time{}),
				order("", t0.Add(time.Minute)),
				order("also-good", t0.Add(2*time.Minute)),
			},
			want:   FetchPageResult{Fetched: 4, Inserted: 2, Rejected: 2},
			stored: map[string]time.Time{"good": t0.Add(time.Minute), "also-good": t0.Add(2 * time.Minute)},
			logs:   []string{"cannot be stored", "no-time (no updated_at)", "order 2 on the page: no id"},
		},
		{
			name: "an order whose lines the store refuses is rejected alone",
			page: []connectors.Order{
				order("good", t0.Add(time.Minute)),
				withLines(order("too-many", t0.Add(time.Minute)), 10001),
				func() connectors.Order {
					o := withLines(order("bad-price", t0.Add(time.Minute)), 2)
					o.Lines[1].UnitPrice = "123.45 EUR"
					return o
				}(),
				withLines(order("lined", t0.Add(2*time.Minute)), 3),
			},
			want:   FetchPageResult{Fetched: 4, Inserted: 2, Rejected: 2},
			stored: map[string]time.Time{"good": t0.Add(time.Minute), "lined": t0.Add(2 * time.Minute)},
			lines:  map[string]int{"good": 0, "lined": 3},
			logs:   []string{"cannot be stored", "too-many (10001 lines, at most 10000)", "bad-price (line 2: unit price is not a plain decimal)"},
		},
		{
			// PostgreSQL refuses these (NUL in text, an id past its index's
			// limit) and failed the whole page; both stores now refuse them
			// alone, before the write (issue 24, item 6).
			name: "an order with a NUL byte or an id too long is rejected alone",
			page: []connectors.Order{
				order("good", t0.Add(time.Minute)),
				func() connectors.Order { o := order("nul", t0.Add(time.Minute)); o.Status = "paid\x00"; return o }(),
				order(strings.Repeat("7", 3000), t0.Add(time.Minute)),
				order("also-good", t0.Add(2*time.Minute)),
			},
			want:   FetchPageResult{Fetched: 4, Inserted: 2, Rejected: 2},
			stored: map[string]time.Time{"good": t0.Add(time.Minute), "also-good": t0.Add(2 * time.Minute)},
			logs:   []string{"cannot be stored", "nul (status holds a NUL byte)", "order 2 on the page: id is 3000 bytes, at most 1024"},
		},
		{
			name:   "a page of nothing storable",
			page:   []connectors.Order{order("no-time", time.Time{}), order("pinned", year2999)},
			want:   FetchPageResult{Fetched: 2, Rejected: 1, FutureStamped: 1},
			stored: map[string]time.Time{},
			logs:   []string{"no-time", "pinned"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
			require.NoError(t, err)
			defer st.Close()
			for _, o := range tt.prestored {
				o.Platform = "shop"
				_, err := st.UpsertOrders(ctx, []connectors.Order{o})
				require.NoError(t, err)
			}
			var logs bytes.Buffer
			rec := metrics.New()
			ctrl := gomock.NewController(t)
			conn := NewMockConnector(ctrl)
			conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{Orders: tt.page}, nil)
			src := NewMockConnectorSource(ctrl)
			src.EXPECT().Connector(gomock.Any()).Return(conn, nil)
			acts := &Activities{Store: st, Connectors: src, Limiters: NewLimiters(), FutureSkew: tt.skew, Metrics: rec,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivity(acts)

			val, err := env.ExecuteActivity(acts.FetchPage, input())
			require.NoError(t, err, "bad orders must not fail the page")
			var res FetchPageResult
			require.NoError(t, val.Get(&res))
			require.Equal(t, tt.want, res)

			got, err := st.OrderVersions(ctx, "shop")
			require.NoError(t, err)
			want := map[string]time.Time{}
			for id, at := range tt.stored {
				want[id] = at.Truncate(time.Microsecond)
			}
			require.Equal(t, want, got)
			for id, n := range tt.lines {
				o, ok, err := st.GetOrder(ctx, "shop", id)
				require.NoError(t, err)
				require.True(t, ok, id)
				require.Len(t, o.Lines, n, id)
			}

			if len(tt.logs) == 0 {
				require.Empty(t, logs.String())
			} else {
				for _, s := range append([]string{"platform=shop", "slice=slice/shop/a-b", "page=2"}, tt.logs...) {
					require.Contains(t, logs.String(), s)
				}
			}
			for _, private := range []string{"123.45", "buyer@example.com", "2999", "Espresso", strings.Repeat("7", 100)} {
				require.NotContains(t, logs.String(), private, "logs carry order ids, never order data")
			}

			scrape := httptest.NewRecorder()
			rec.Handler().ServeHTTP(scrape, httptest.NewRequest("GET", "/metrics", nil))
			require.Contains(t, scrape.Body.String(),
				`ordersync_orders_not_stored_total{platform="shop",reason="rejected"} `+strconv.Itoa(tt.want.Rejected))
			require.Contains(t, scrape.Body.String(),
				`ordersync_orders_not_stored_total{platform="shop",reason="future_stamped"} `+strconv.Itoa(tt.want.FutureStamped))
		})
	}
}

// withLines gives o n lines, titled like a product (order data that must
// stay out of logs).
func withLines(o connectors.Order, n int) connectors.Order {
	o.HasLines, o.LineCount = true, n
	o.Lines = make([]connectors.OrderLine, n)
	for i := range o.Lines {
		o.Lines[i] = connectors.OrderLine{ID: strconv.Itoa(i + 1), SKU: "MUG", Title: "Espresso Cup", Quantity: 1, UnitPrice: "7.50"}
	}
	return o
}
