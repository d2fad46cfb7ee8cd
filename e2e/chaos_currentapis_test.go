package e2e

import (
	"context"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// The chaos run's platforms on the current APIs, beside the sim kind's:
// a Shopify shop over the GraphQL Admin API whose backfill slices run as
// bulk queries (jobs that take a second, half of them FAILED with
// partial data, downloads cut off, signed URLs that expire within
// seconds), and an Amazon seller over Orders v2026-01-01 (the 2-minute
// rule keeps its watermark back; the simulator's 6 requests/s, stated in
// x-amzn-RateLimit-Limit, is below the configured 20/s, so its 429s must
// be waits, not failures), and a Shopify shop on the standard 1,000-point
// bucket restoring 50 a second while its platform is configured for the
// defaults (100/s, 2,000 points), paged (no bulk) by 4 slices at once with
// orders whose lines need follow-ups: the case that once livelocked.
// Their check is the store against the simulator's ground truth with
// every order's lines.
const chaosCurrentAPIPlatforms = `
  chaos-gql:
    kind: shopify
    endpoint: "{{SIM}}/shops/gql"
    credentials: {env: ORDERSYNC_E2E_CHAOS_GQL_TOKEN}
    page_size: 50
    max_pages: 20
    options: {restore_rate: 2000, max_cost_available: 20000, bulk_min_span: 20s, bulk_poll_interval: 500ms, bulk_loopback_http: true}
  chaos-amz:
    kind: amazon
    endpoint: "{{SIM}}/shops/amz/amazon"
    credentials: {env: ORDERSYNC_E2E_CHAOS_AMZ_SECRET}
    settle: 2m5s
    options:
      marketplace_ids: [A1PA6795UKMFR9, ATVPDKIKX0DER, A1F83G8C2ARO7P]
      token_url: "{{SIM}}/shops/amz/amazon/auth/o2/token"
  chaos-std:
    kind: shopify
    endpoint: "{{SIM}}/shops/std"
    credentials: {env: ORDERSYNC_E2E_CHAOS_STD_TOKEN}
    page_size: 50
    max_pages: 20
    concurrency: 4
    options: {bulk_backfill: false}
`

// chaosCurrentAPIs are the current-API platforms' shops and how their
// versions are stored: Shopify keeps whole seconds, Amazon microseconds.
var chaosCurrentAPIs = map[string]struct {
	shop      string
	precision time.Duration
}{
	"chaos-gql": {"gql", time.Second},
	"chaos-amz": {"amz", time.Microsecond},
	"chaos-std": {"std", time.Second},
}

// withCurrentAPIShops adds the shops of the current-API platforms to the
// chaos simulator, with a points bucket that keeps up with the live rate
// and bulk jobs that misbehave.
func withCurrentAPIShops(cfg sim.Config) sim.Config {
	std := sim.ShopifyStandardBucket
	cfg.Shops = append(cfg.Shops, sim.ShopConfig{Name: "gql", Token: "chaos-gql-token"}, sim.ShopConfig{Name: "amz", Token: "chaos-amz-token"},
		// The smallest bucket ever documented (50 points/s) sustains
		// about 0.8 full orders a second (about 63 points each, lines,
		// customer, addresses, refunds and fulfilments included): a live
		// load it keeps up with (re-sweeps fetch windows again), and a
		// backlog that takes its bucket about a minute.
		sim.ShopConfig{Name: "std", Token: "chaos-std-token", ShopifyCost: &std, LiveRate: 0.05, HistoryOrders: 40})
	cfg.ShopifyCost = sim.CostLimit{RestoreRate: 2000, MaxAvailable: 20000}
	cfg.ShopifyBulk = sim.BulkConfig{Duration: time.Second, FailRate: 0.5, DropRate: 0.2, URLTTL: 3 * time.Second}
	return cfg
}

// withCurrentAPIPlatforms appends the current-API platforms to the chaos
// platforms file and returns the environment their credentials need.
func withCurrentAPIPlatforms(yaml string) (string, []string) {
	return yaml + chaosCurrentAPIPlatforms, []string{
		"ORDERSYNC_E2E_CHAOS_GQL_TOKEN=chaos-gql-token",
		"ORDERSYNC_E2E_CHAOS_STD_TOKEN=chaos-std-token",
		`ORDERSYNC_E2E_CHAOS_AMZ_SECRET={"client_id":"amzn1.application-oa2-client.chaos","client_secret":"chaos","refresh_token":"chaos-amz-token"}`,
	}
}

// verifyCurrentAPI checks a current-API platform, if p is one: every order
// the simulator shows, before the watermark, stored at its version with
// exactly its lines; nothing stored the simulator does not show.
func (r *chaosRun) verifyCurrentAPI(p config.Platform) bool {
	r.t.Helper()
	c, ok := chaosCurrentAPIs[p.Name]
	if !ok {
		return false
	}
	st, err := tryStatus(r.client, p.Name)
	require.NoError(r.t, err)
	truth, err := r.sim.TruthWithLines(c.shop, time.Time{})
	require.NoError(r.t, err)
	var expected []verify.Expected
	shown := make(map[string]bool, len(truth.Orders))
	for _, o := range truth.Orders {
		shown[o.ID] = true
		if !o.UpdatedAt.Before(st.Watermark) {
			continue
		}
		lines := make([]connectors.OrderLine, len(o.Lines))
		for j, l := range o.Lines {
			lines[j] = connectors.OrderLine{ID: sim.AmazonItemID(o.ID, j), SKU: l.SKU, Title: l.Title, Quantity: l.Quantity,
				UnitPrice: l.UnitPrice, Currency: l.Currency}
		}
		expected = append(expected, verify.Expected{ID: o.ID, UpdatedAt: o.UpdatedAt.Truncate(c.precision), HasLines: true, Lines: lines})
	}
	db, err := store.Open(context.Background(), r.storeDSN())
	require.NoError(r.t, err)
	defer db.Close()
	stored, err := db.OrderLines(context.Background(), p.Name)
	require.NoError(r.t, err)
	versions := make(map[string]time.Time, len(stored))
	for id, v := range stored {
		versions[id] = v.UpdatedAt
	}
	rep := verify.TrimExtra(verify.CompareLines(p.Name, expected, stored), versions, st.Watermark, shown)

	pr := r.report.platform(p.Name)
	pr.Checked, pr.Missing, pr.Stale, pr.Extra = rep.Checked, len(rep.Missing), len(rep.Stale), len(rep.Extra)
	if !rep.OK() {
		pr.VerifyExit = 1
	}
	pr.SlicesCompleted, pr.SlicesFailed, pr.SlicesSplit, pr.Pages = st.Counts.SlicesCompleted, st.Counts.SlicesFailed, st.Counts.SlicesSplit, st.Counts.Pages
	pr.Watermark, pr.CursorRuns = st.Watermark, st.Runs
	pr.Truth = len(truth.Orders)
	shop := r.sim.Stats().Shops[c.shop]
	r.logf("%s against the ground truth with lines: %d checked, %d missing, %d stale, %d lines differ, %d extra (truth holds %d orders; bulk queries %d, failed %d, downloads %d, cut off %d, expired URLs %d)",
		p.Name, rep.Checked, len(rep.Missing), len(rep.Stale), len(rep.LinesDiffer), len(rep.Extra), pr.Truth,
		shop.BulkOperations, shop.BulkFailed, shop.BulkDownloads, shop.BulkDropped, shop.BulkURLExpired)
	require.Empty(r.t, rep.LinesDiffer, "%s: orders whose stored lines differ", p.Name)
	if p.Name == "chaos-gql" {
		require.Positive(r.t, shop.BulkOperations, "the Shopify backfill ran no bulk query")
	}
	if p.Name == "chaos-std" {
		r.logf("%s: %d THROTTLED answers on the standard bucket", p.Name, shop.Throttled)
	}
	return true
}

// storeDSN is the order store the chaos workers share.
func (r *chaosRun) storeDSN() string {
	for _, kv := range r.env {
		if dsn, ok := strings.CutPrefix(kv, "ORDERSYNC_STORE_DSN="); ok {
			return dsn
		}
	}
	r.t.Fatal("the chaos workers' environment names no ORDERSYNC_STORE_DSN")
	return ""
}
