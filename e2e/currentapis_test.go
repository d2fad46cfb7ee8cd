package e2e

import (
	"context"
	"strings"

	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
)

// The platforms' current APIs end to end: a Shopify shop over the GraphQL
// Admin API (paced by query cost, lines paged in follow-up queries) and an
// Amazon seller over Orders v2026-01-01 (Login with Amazon, searchOrders
// with items, the 2-minute rule), both played by the simulator with faults,
// through the real worker into the store. Every order the platform showed
// before the watermark must be stored at its version, with its lines.
const currentAPIPlatforms = `
default:
  start: -6m
  interval: 20s
  overlap: 5s
  timeout: 5s
  retries: 8
  retry_interval: 200ms
  retry_backoff: 1.5
  max_retry_interval: 2s
  concurrency: 4
  rate_limit: {rps: 50, burst: 20}
  page_size: 20
  max_pages: 20
platforms:
  e2e-gql:
    kind: shopify
    endpoint: "{{SIM}}/shops/gql"
    credentials: {env: ORDERSYNC_E2E_GQL_TOKEN}
    settle: 2s
    options: {restore_rate: 2000, max_cost_available: 20000, line_items_page_size: 2}
  e2e-amz:
    kind: amazon
    endpoint: "{{SIM}}/shops/amz/amazon"
    credentials: {file: "{{AMZ_SECRET}}"}
    settle: 2m5s
    options:
      marketplace_ids: [A1PA6795UKMFR9, ATVPDKIKX0DER, A1F83G8C2ARO7P]
      token_url: "{{SIM}}/shops/amz/amazon/auth/o2/token"
`

func TestCurrentAPIsEndToEnd(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 13
	cfg.Shops = []sim.ShopConfig{{Name: "gql", Token: "gql-token"}, {Name: "amz", Token: "amz-token"}}
	cfg.History = 6 * time.Minute
	cfg.HistoryOrders = 300
	cfg.LiveRate = 2
	cfg.MaxUpdates = 2
	cfg.Late = 2 * time.Second
	cfg.RateLimit = sim.RateLimit{RPS: 100, Burst: 50}
	cfg.ShopifyCost = sim.CostLimit{RestoreRate: 2000, MaxAvailable: 20000}
	cfg.Faults = sim.Faults{Err5xx: 0.05, Malformed: 0.02}
	secret := writeTemp(t, `{"client_id":"amzn1.application-oa2-client.e2e","client_secret":"e2e","refresh_token":"amz-token"}`)
	platforms := strings.ReplaceAll(currentAPIPlatforms, "{{AMZ_SECRET}}", secret)
	s := startSystem(t, cfg, platforms)
	s.startCursors()

	// Shopify: follow the present a little, then check up to the watermark.
	// Amazon: its 2-minute rule keeps the watermark behind; the backlog up
	// to it is what is checked.
	for _, tc := range []struct {
		platform, shop string
		lag            time.Duration
		lineID         func(orderID string, i int) string
		// precision is the API's: Shopify's DateTime has whole seconds,
		// so the stored version of an order is its second.
		precision time.Duration
	}{
		{"e2e-gql", "gql", 10 * time.Second, sim.AmazonItemID, time.Second},
		{"e2e-amz", "amz", 2*time.Minute + 30*time.Second, sim.AmazonItemID, time.Microsecond},
	} {
		st := s.waitWatermark(tc.platform, time.Now().Add(-tc.lag), 3*time.Minute)
		require.Zero(t, st.Counts.SlicesFailed, "%s: %s", tc.platform, st.LastError)
		r := s.verifyAsOf(tc.platform, tc.shop, st.Watermark, tc.lineID, tc.precision)
		require.Greater(t, r.Checked, 100, "%s: the simulator made orders", tc.platform)
		require.Empty(t, r.Missing, "%s: missing", tc.platform)
		require.Empty(t, r.Stale, "%s: stale", tc.platform)
		require.Empty(t, r.LinesDiffer, "%s: lines differ", tc.platform)
		require.Empty(t, r.Extra, "%s: extra", tc.platform)
		t.Logf("%s: %d orders before %s checked with their lines: 0 missing, 0 stale, 0 lines differ (%d pages)",
			tc.platform, r.Checked, st.Watermark.Format(time.RFC3339), st.Counts.Pages)
	}
	stats, err := (&sim.AdminClient{BaseURL: s.simSrv.URL, Token: adminToken}).Stats(context.Background())
	require.NoError(t, err)
	require.Positive(t, stats.Shops["gql"].Faults.Err5xx+stats.Shops["amz"].Faults.Err5xx, "faults happened")
}

// verifyAsOf compares the store with the simulator's ground truth for the
// orders whose current version is before cutoff, lines included, with the line ids and the time precision the
// kind's API gives.
func (s *system) verifyAsOf(platform, shop string, cutoff time.Time, lineID func(string, int) string, precision time.Duration) verify.Report {
	s.t.Helper()
	admin := &sim.AdminClient{BaseURL: s.simSrv.URL, Token: adminToken}
	// The truth now, by each order's current version, as the platforms
	// list orders (see ordersync verify --help).
	truth, err := admin.TruthWithLines(context.Background(), shop, time.Time{})
	require.NoError(s.t, err)
	var expected []verify.Expected
	for _, o := range truth.Orders {
		if !o.UpdatedAt.Before(cutoff) {
			continue
		}
		lines := make([]connectors.OrderLine, len(o.Lines))
		for j, l := range o.Lines {
			lines[j] = connectors.OrderLine{ID: lineID(o.ID, j), SKU: l.SKU, Title: l.Title, Quantity: l.Quantity,
				UnitPrice: l.UnitPrice, Currency: l.Currency}
		}
		expected = append(expected, verify.Expected{ID: o.ID, UpdatedAt: o.UpdatedAt.Truncate(precision), HasLines: true, Lines: lines})
	}
	shown := make(map[string]bool, len(truth.Orders))
	for _, o := range truth.Orders {
		shown[o.ID] = true
	}
	stored, err := s.store.OrderLines(context.Background(), platform)
	require.NoError(s.t, err)
	versions := make(map[string]time.Time, len(stored))
	for id, v := range stored {
		versions[id] = v.UpdatedAt
	}
	return verify.TrimExtra(verify.CompareLines(platform, expected, stored), versions, cutoff, shown)
}
