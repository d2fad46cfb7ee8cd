package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// B7 bulk: a Shopify backfill of the same history twice in one run, once
// with bulk queries (options.bulk_backfill, the GraphQL default) and once
// paging the orders query, each on its own shop of one simulator with the
// same number of orders. It counts the requests each made (GraphQL
// queries plus result downloads), the query cost points Shopify charged
// and the wall time to the watermark. Bulk should need at least 10x fewer
// requests; the number is reported, not asserted.

// bulkParams size B7; flags -b7-*.
type bulkParams struct {
	Orders       int           `json:"orders_per_shop"`
	Days         int           `json:"history_days"`
	RestoreRate  float64       `json:"restore_rate"`
	JobDuration  time.Duration `json:"bulk_job_duration_ns"`
	JobPerOrder  time.Duration `json:"bulk_job_per_order_ns"`
	Timeout      time.Duration `json:"timeout_ns"`
	Out          string        `json:"-"`
	PageSize     int           `json:"page_size"`
	Concurrency  int           `json:"concurrency"`
	BulkMinSpan  string        `json:"bulk_min_span"`
	BackfillSpan string        `json:"backfill_max_span"`
}

var b7 bulkParams

func init() {
	fs := flag.CommandLine
	fs.IntVar(&b7.Orders, "b7-orders", 50_000, "B7: history orders per shop")
	fs.IntVar(&b7.Days, "b7-days", 90, "B7: days of history")
	fs.Float64Var(&b7.RestoreRate, "b7-restore-rate", 1000, "B7: the shops' points restored a second (100 standard, 1000 Plus)")
	fs.DurationVar(&b7.JobDuration, "b7-bulk-duration", 5*time.Second, "B7: how long a bulk job runs at least")
	fs.DurationVar(&b7.JobPerOrder, "b7-bulk-per-order", 100*time.Microsecond, "B7: bulk job time per order")
	fs.DurationVar(&b7.Timeout, "b7-timeout", 2*time.Hour, "B7: give up on one backfill after this long")
	fs.StringVar(&b7.Out, "b7-out", "bench/results", "B7: directory for its JSON result (bulk-<time>.json)")
	fs.IntVar(&b7.PageSize, "b7-page-size", 50, "B7: orders per page of the paged backfill")
	fs.IntVar(&b7.Concurrency, "b7-concurrency", 4, "B7: slices in flight per platform")
	fs.StringVar(&b7.BulkMinSpan, "b7-bulk-min-span", "24h", "B7: options.bulk_min_span of the bulk platform")
	fs.StringVar(&b7.BackfillSpan, "b7-backfill-max-span", "168h", "B7: backfill_max_span of both platforms")
}

// bulkRun is one backfill's numbers.
type bulkRun struct {
	Platform       string  `json:"platform"`
	Requests       int64   `json:"requests"`
	Queries        int64   `json:"graphql_queries"`
	Downloads      int64   `json:"result_downloads"`
	Throttled      int64   `json:"throttled"`
	Points         int64   `json:"cost_points"`
	BulkOperations int64   `json:"bulk_operations"`
	Seconds        float64 `json:"wall_seconds"`
	Slices         int64   `json:"slices"`
	Stored         int     `json:"orders_stored"`
	Missing        int     `json:"missing"`
	Stale          int     `json:"stale"`
}

// bulkResult is B7's report.
type bulkResult struct {
	Params       bulkParams `json:"params"`
	From         time.Time  `json:"from"`
	To           time.Time  `json:"to"`
	Bulk         bulkRun    `json:"bulk"`
	Paged        bulkRun    `json:"paged"`
	RequestRatio float64    `json:"paged_to_bulk_requests"`
	PointRatio   float64    `json:"paged_to_bulk_points"`
	TenXFewer    bool       `json:"bulk_10x_fewer_requests"`
	Note         string     `json:"note,omitempty"`
}

const bulkPlatformsYAML = `default:
  kind: shopify
  credentials: {env: ` + tokenEnv + `}
  start: %q
  interval: 1h
  backfill_max_span: %s
  timeout: 30s
  retries: 10
  retry_interval: 200ms
  retry_backoff: 2
  max_retry_interval: 5s
  concurrency: %d
  rate_limit: {rps: 1000, burst: 100}
  page_size: %d
  max_pages: 100
platforms:
  bulk:
    endpoint: "%s/shops/bulk"
    options: {restore_rate: %v, max_cost_available: %v, bulk_backfill: true, bulk_min_span: %s, bulk_poll_interval: 1s, bulk_loopback_http: true}
  paged:
    endpoint: "%s/shops/paged"
    options: {restore_rate: %v, max_cost_available: %v, bulk_backfill: false}
`

// runBulkBench runs B7: the bulk backfill, then the paged one.
func runBulkBench(ctx context.Context, env *benchEnv) (bulkResult, error) {
	p := b7
	res := bulkResult{Params: p}
	history := time.Duration(p.Days) * 24 * time.Hour
	spread := 24 * time.Hour
	now := time.Now().UTC()
	res.To = now.Truncate(time.Hour).Add(-time.Hour)
	res.From = res.To.Add(-history - spread - time.Hour)
	cfg := sim.DefaultConfig()
	cfg.Seed = 7
	cfg.Shops = []sim.ShopConfig{{Name: "bulk", Token: shopToken}, {Name: "paged", Token: shopToken}}
	cfg.AdminToken = "bench-admin"
	cfg.History, cfg.HistoryOrders = history, p.Orders
	cfg.LiveRate, cfg.MaxUpdates, cfg.UpdateSpread, cfg.Late = 0, 3, spread, 30*time.Second
	cfg.RateLimit, cfg.Faults = sim.RateLimit{}, sim.Faults{}
	cfg.Start = res.To.Add(-spread - time.Minute) // every update visible before To
	cfg.ShopifyCost = sim.CostLimit{RestoreRate: p.RestoreRate, MaxAvailable: 20 * p.RestoreRate}
	cfg.ShopifyBulk = sim.BulkConfig{Duration: p.JobDuration, PerOrder: p.JobPerOrder}

	s := &system{dir: env.caseDir("b7-bulk")}
	defer s.stop()
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return res, err
	}
	os.Setenv(tokenEnv, shopToken)
	var err error
	if s.sim, err = sim.New(cfg); err != nil {
		return res, err
	}
	if s.simSrv, err = s.sim.Start("127.0.0.1:0"); err != nil {
		return res, err
	}
	s.fileRaw = fmt.Appendf(nil, bulkPlatformsYAML, res.From.Format(time.RFC3339), p.BackfillSpan, p.Concurrency, p.PageSize,
		s.simSrv.URL, p.RestoreRate, 20*p.RestoreRate, p.BulkMinSpan, s.simSrv.URL, p.RestoreRate, 20*p.RestoreRate)
	if s.file, err = config.Parse(s.fileRaw); err != nil {
		return res, fmt.Errorf("B7 platforms file: %w", err)
	}
	if s.store, err = store.Open(ctx, s.storeDSN()); err != nil {
		return res, err
	}
	if s.srv, err = devserver.Start(devserver.Options{DatabasePath: filepath.Join(s.dir, "temporal.db"), FrontendPort: -1, UIPort: 0,
		LogFile: filepath.Join(s.dir, "temporal.log"), LogLevel: "error"}); err != nil {
		return res, err
	}
	if s.client, err = client.Dial(client.Options{HostPort: s.srv.FrontendAddress(), Namespace: s.srv.Namespace(), Logger: quietLogger{}}); err != nil {
		return res, err
	}
	rec, err := s.inProcessMetrics()
	if err != nil {
		return res, err
	}
	if s.workers, err = worker.Start(worker.Options{Client: s.client, Store: s.store, Platforms: s.file.Platforms, Metrics: rec,
		StopTimeout: 5 * time.Second, Alerter: activities.LogAlerter{Logger: discardLogger()}, Logger: discardLogger()}); err != nil {
		return res, err
	}
	for _, run := range []*bulkRun{&res.Bulk, &res.Paged} {
		name := "bulk"
		if run == &res.Paged {
			name = "paged"
		}
		if err := s.backfillOne(ctx, env, name, res.To, p.Timeout, run); err != nil {
			return res, err
		}
	}
	if res.Bulk.Requests > 0 {
		res.RequestRatio = float64(res.Paged.Requests) / float64(res.Bulk.Requests)
		res.TenXFewer = res.RequestRatio >= 10
	}
	if res.Bulk.Points > 0 {
		res.PointRatio = float64(res.Paged.Points) / float64(res.Bulk.Points)
	}
	return res, nil
}

// backfillOne starts one platform's cursor and waits until its watermark
// reaches to, then counts what its shop served and checks the store.
func (s *system) backfillOne(ctx context.Context, env *benchEnv, name string, to time.Time, timeout time.Duration, run *bulkRun) error {
	p, ok := s.file.Get(name)
	if !ok {
		return fmt.Errorf("B7: no platform %s", name)
	}
	run.Platform = name
	before := s.sim.Stats().Shops[name]
	env.logf("B7 %s: backfill %s..%s", name, p.Start, to.Format(time.RFC3339))
	t0 := time.Now()
	if _, err := starter.EnsureCursor(ctx, s.client, p, t0); err != nil {
		return err
	}
	deadline := t0.Add(timeout)
	for {
		st, err := s.status(ctx, name)
		if err == nil && !st.Watermark.Before(to) {
			run.Slices = st.Counts.SlicesCompleted
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("B7 %s: watermark did not reach %s within %s (%v)", name, to.Format(time.RFC3339), timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	run.Seconds = time.Since(t0).Seconds()
	after := s.sim.Stats().Shops[name]
	run.Queries = after.Requests - before.Requests
	run.Downloads = after.BulkDownloads - before.BulkDownloads
	run.Requests = run.Queries + run.Downloads
	run.Throttled = after.Throttled - before.Throttled
	run.Points = after.PointsUsed - before.PointsUsed
	run.BulkOperations = after.BulkOperations - before.BulkOperations

	truth, err := s.sim.Truth(name, time.Time{})
	if err != nil {
		return err
	}
	stored, err := s.store.OrderVersions(ctx, name)
	if err != nil {
		return err
	}
	run.Stored = len(stored)
	for _, o := range truth.Orders {
		at, ok := stored[o.ID]
		switch {
		case !ok:
			run.Missing++
		case !at.Equal(o.UpdatedAt.Truncate(time.Second)):
			run.Stale++
		}
	}
	env.logf("B7 %s: %d requests (%d queries, %d downloads), %d points, %.1fs, %d orders stored, %d missing, %d stale",
		name, run.Requests, run.Queries, run.Downloads, run.Points, run.Seconds, run.Stored, run.Missing, run.Stale)
	return nil
}

// printBulk prints B7's table and writes its JSON beside the other results.
func printBulk(w io.Writer, r bulkResult) error {
	fmt.Fprintf(w, "\nB7 bulk: %d orders, %d days of Shopify history, bulk query vs paged GraphQL\n", r.Params.Orders, r.Params.Days)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "backfill\trequests\tqueries\tdownloads\tcost points\twall s\tslices\tstored\tmissing\tstale")
	for _, run := range []bulkRun{r.Bulk, r.Paged} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\n", run.Platform, run.Requests, run.Queries, run.Downloads,
			run.Points, run.Seconds, run.Slices, run.Stored, run.Missing, run.Stale)
	}
	tw.Flush()
	fmt.Fprintf(w, "paged/bulk: %.1fx the requests, %.1fx the points; bulk 10x fewer requests: %v\n", r.RequestRatio, r.PointRatio, r.TenXFewer)
	if r.Params.Out == "" {
		return nil
	}
	if err := os.MkdirAll(r.Params.Out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.Params.Out, "bulk-"+time.Now().UTC().Format("20060102T150405Z")+".json"), append(b, '\n'), 0o644)
}
