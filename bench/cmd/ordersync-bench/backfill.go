package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// backfillParams size B1 (and B2, which reuses the backfill to keep a
// rate-limited platform busy).
type backfillParams struct {
	Shops         int           `json:"shops"`
	OrdersPerShop int           `json:"orders_per_shop"`
	History       time.Duration `json:"history_ns"`
	HistoryText   string        `json:"history"`
	UpdateSpread  string        `json:"update_spread"`
	MaxUpdates    int           `json:"max_updates"`
	Settings      platformSettings
}

// backfillResult is one B1 measurement.
type backfillResult struct {
	Params backfillParams `json:"params"`
	From   time.Time      `json:"from"`
	To     time.Time      `json:"to"`
	// DirectWindows is how many windows per shop the direct loop paged
	// through; Slices how many slice workflows ordersync ran in all.
	DirectWindows int     `json:"direct_windows_per_shop"`
	Slices        int64   `json:"ordersync_slices"`
	Orders        int     `json:"orders"`
	DirectSeconds float64 `json:"direct_seconds"`
	DirectPages   int64   `json:"direct_pages"`
	DirectCPU     float64 `json:"direct_cpu_seconds"`
	TemporalCPU   float64 `json:"ordersync_cpu_seconds"`
	CPURatio      float64 `json:"cpu_ratio"`
	LoadBefore    float64 `json:"load_average_before"`
	LoadAfter     float64 `json:"load_average_after"`
	TemporalSecs  float64 `json:"ordersync_seconds"`
	Ratio         float64 `json:"ratio"`
	OrdersPerSec  float64 `json:"ordersync_orders_per_second"`
	DirectPerSec  float64 `json:"direct_orders_per_second"`
	SlicesPerSec  float64 `json:"ordersync_slices_per_second"`
	Pages         int64   `json:"ordersync_pages"`
	Splits        int64   `json:"ordersync_splits"`
	Missing       int     `json:"missing"`
	Stale         int     `json:"stale"`
	Note          string  `json:"note,omitempty"`
}

// backfillWorld builds the static world of B1: History of orders whose every
// update is visible before To, and the aligned range [From, To) that covers
// them all. Nothing changes while the benchmark runs, so both runs fetch
// exactly the same orders.
func backfillWorld(p backfillParams, interval time.Duration) (sim.Config, time.Time, time.Time) {
	spread, _ := time.ParseDuration(p.UpdateSpread)
	now := time.Now().UTC()
	to := now.Truncate(interval).Add(-interval)
	simStart := to.Add(-spread - time.Minute)
	from := to.Add(-time.Duration((p.History + spread + time.Minute + interval - 1) / interval * interval))
	cfg := sim.DefaultConfig()
	cfg.Seed = 11
	cfg.Shops = shops(p.Shops)
	cfg.AdminToken = "bench-admin"
	cfg.History = p.History
	cfg.HistoryOrders = p.OrdersPerShop
	cfg.LiveRate = 0
	cfg.MaxUpdates = p.MaxUpdates
	cfg.UpdateSpread = spread
	cfg.Late = 30 * time.Second
	cfg.RateLimit = sim.RateLimit{}
	cfg.Faults = sim.Faults{}
	cfg.Start = simStart
	return cfg, from, to
}

// runBackfill measures B1: the direct loop, then ordersync, on one world.
func runBackfill(ctx context.Context, env *benchEnv, p backfillParams) (backfillResult, error) {
	interval, err := time.ParseDuration(p.Settings.Interval)
	if err != nil {
		return backfillResult{}, err
	}
	simCfg, from, to := backfillWorld(p, interval)
	p.Settings.Start = from
	step := interval
	if span, err := time.ParseDuration(p.Settings.BackfillMaxSpan); err == nil && span > step {
		step = span
	}
	res := backfillResult{Params: p, From: from, To: to, DirectWindows: int((to.Sub(from) + step - 1) / step), Orders: p.Shops * p.OrdersPerShop}
	dir := env.caseDir("b1-" + p.Settings.Interval)

	// The direct loop: same simulator, connector and store code, same
	// slices, page size and per-platform concurrency, no Temporal.
	sys, err := startSystem(ctx, filepath.Join(dir, "direct"), systemOptions{sim: simCfg, settings: p.Settings, serverDB: "none"})
	if err != nil {
		return res, err
	}
	env.logf("B1 %s: direct loop over %d windows/shop, %d shops", p.Settings.Interval, res.DirectWindows, p.Shops)
	res.LoadBefore = loadAverage()
	stopDirectProfile := env.profile("b1-direct-" + p.Settings.Interval)
	t0, c0 := time.Now(), cpuSeconds()
	pages, err := directBackfill(ctx, sys.store, sys.file.Platforms, from, to)
	res.DirectSeconds, res.DirectCPU = time.Since(t0).Seconds(), cpuSeconds()-c0
	stopDirectProfile()
	res.DirectPages = pages
	if err == nil {
		err = checkBackfill(ctx, sys, p, &res, "direct")
	}
	sys.stop()
	if err != nil {
		return res, fmt.Errorf("direct loop: %w", err)
	}

	sys, err = startSystem(ctx, filepath.Join(dir, "ordersync"), systemOptions{sim: simCfg, settings: p.Settings, serverDB: env.serverDB})
	if err != nil {
		return res, err
	}
	defer sys.stop()
	env.logf("B1 %s: ordersync (direct took %.1fs)", p.Settings.Interval, res.DirectSeconds)
	stopProfile := env.profile("b1-" + p.Settings.Interval)
	t0, c0 = time.Now(), cpuSeconds()
	if err := sys.startCursors(ctx); err != nil {
		return res, err
	}
	sts, err := sys.waitWatermarks(ctx, to, env.caseTimeout)
	res.TemporalSecs, res.TemporalCPU = time.Since(t0).Seconds(), cpuSeconds()-c0
	res.LoadAfter = loadAverage()
	stopProfile()
	for _, st := range sts {
		res.Pages += st.Counts.Pages
		res.Splits += st.Counts.SlicesSplit
		res.Slices += st.Counts.SlicesCompleted + st.Counts.SlicesSplit + st.Counts.SlicesFailed
	}
	if err != nil {
		res.Note = err.Error()
		return res, nil
	}
	if err := checkBackfill(ctx, sys, p, &res, "ordersync"); err != nil {
		return res, err
	}
	res.Ratio = res.TemporalSecs / res.DirectSeconds
	res.CPURatio = res.TemporalCPU / res.DirectCPU
	res.OrdersPerSec = float64(res.Orders) / res.TemporalSecs
	res.DirectPerSec = float64(res.Orders) / res.DirectSeconds
	res.SlicesPerSec = float64(res.Slices) / res.TemporalSecs
	return res, nil
}

// checkBackfill compares the store with the simulator's ground truth.
func checkBackfill(ctx context.Context, sys *system, p backfillParams, res *backfillResult, who string) error {
	for _, shop := range shopNames(sys.sim.Config()) {
		truth, err := sys.sim.Truth(shop, time.Time{})
		if err != nil {
			return err
		}
		exp := make([]verify.Expected, len(truth.Orders))
		for i, o := range truth.Orders {
			exp[i] = verify.Expected{ID: o.ID, UpdatedAt: o.UpdatedAt}
		}
		stored, err := sys.store.OrderVersions(ctx, shop)
		if err != nil {
			return err
		}
		r := verify.Compare(shop, exp, stored)
		res.Missing += len(r.Missing)
		res.Stale += len(r.Stale)
	}
	if res.Missing+res.Stale > 0 {
		return fmt.Errorf("%s: %d orders missing and %d stale in the store", who, res.Missing, res.Stale)
	}
	return nil
}

// directBackfill is the baseline: every platform's slices of [from, to),
// each paged through in turn by `concurrency` goroutines per platform, every
// page fetched by the platform's connector and upserted into the store, as
// the FetchPage activity does, with no Temporal in between.
func directBackfill(ctx context.Context, st store.Store, platforms []config.Platform, from, to time.Time) (int64, error) {
	var pages atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := newGroup(len(platforms) * 64)
	for _, p := range platforms {
		conn, err := connectors.New(p)
		if err != nil {
			return 0, err
		}
		next := make(chan [2]time.Time)
		// The floor pages through windows as wide as ordersync's slices may
		// grow (backfill_max_span): the fewest requests the history allows.
		step := max(p.Interval.D(), p.BackfillMaxSpan.D())
		g.Go(func() error {
			defer close(next)
			for s := from; s.Before(to); s = s.Add(step) {
				select {
				case next <- [2]time.Time{s, minTime(s.Add(step), to)}:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
		for range p.Concurrency {
			g.Go(func() error {
				for w := range next {
					n, err := directSlice(ctx, st, conn, p, w[0], w[1])
					pages.Add(int64(n))
					if err != nil {
						cancel()
						return err
					}
				}
				return nil
			})
		}
	}
	err := g.Wait()
	return pages.Load(), err
}

func directSlice(ctx context.Context, st store.Store, conn connectors.Connector, p config.Platform, start, end time.Time) (int, error) {
	token := ""
	for page := 1; ; page++ {
		pg, err := conn.ListOrders(ctx, connectors.PageRequest{
			From: start.Add(-p.Overlap.D()), To: end, Token: token, PageSize: p.PageSize, Page: page,
		})
		if err != nil {
			return page - 1, fmt.Errorf("%s [%s, %s) page %d: %w", p.Name, start, end, page, err)
		}
		for i := range pg.Orders {
			o := &pg.Orders[i]
			o.Platform = p.Name
			o.UpdatedAt, o.CreatedAt = o.UpdatedAt.UTC(), o.CreatedAt.UTC()
		}
		if len(pg.Orders) > 0 {
			if _, err := st.UpsertOrders(ctx, pg.Orders); err != nil {
				return page, err
			}
		}
		if pg.NextToken == "" {
			return page, nil
		}
		token = pg.NextToken
	}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
