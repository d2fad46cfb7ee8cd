package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/sim"
)

// rateResult is B2: how close ordersync gets to a platform's request limit
// without going over it.
type rateResult struct {
	Shops          int              `json:"shops"`
	LimitRPS       float64          `json:"limit_rps_per_shop"`
	LimitBurst     int              `json:"limit_burst"`
	OrdersPerShop  int              `json:"orders_per_shop"`
	Settings       platformSettings `json:"settings"`
	Worker         string           `json:"worker"`
	WarmupSeconds  float64          `json:"warmup_seconds"`
	WindowSeconds  float64          `json:"window_seconds"`
	Accepted       int64            `json:"accepted_requests"`
	AchievedRPS    float64          `json:"achieved_rps_per_shop"`
	Ratio          float64          `json:"ratio"`
	MinShopRatio   float64          `json:"min_shop_ratio"`
	RateLimited    int64            `json:"rate_limited_in_window"`
	RateLimitedAll int64            `json:"rate_limited_total"`
	PeakRPS        int              `json:"peak_requests_in_one_second"`
	Note           string           `json:"note,omitempty"`
}

// runRateLimited runs B2: a backfill far bigger than the window can drain,
// against a simulator that answers 429 above R requests/s per shop, with the
// platforms configured at that same rate (what an operator copies from the
// platform's documentation). The worker is the `ordersync worker` binary,
// so the request pacing measured is the shipped one.
func runRateLimited(ctx context.Context, env *benchEnv, p *params) (rateResult, error) {
	res := rateResult{Shops: p.B2Shops, LimitRPS: p.B2RPS, LimitBurst: p.B2Burst, OrdersPerShop: p.B2OrdersPerShop,
		WarmupSeconds: p.B2Warmup.Seconds(), WindowSeconds: p.B2Window.Seconds(), Worker: "in-process"}
	settings := platformSettings{
		Interval: "6h", Overlap: "2m", Settle: "1m", Timeout: "30s", Concurrency: 4,
		RPS: p.B2RPS, Burst: p.B2Burst, PageSize: p.B2PageSize, MaxPages: 100,
	}
	bp := backfillParams{Shops: p.B2Shops, OrdersPerShop: p.B2OrdersPerShop, History: 30 * 24 * time.Hour,
		UpdateSpread: "24h", MaxUpdates: 3, Settings: settings}
	interval, _ := time.ParseDuration(settings.Interval)
	simCfg, from, _ := backfillWorld(bp, interval)
	simCfg.RateLimit = sim.RateLimit{RPS: p.B2RPS, Burst: p.B2Burst}
	settings.Start = from
	res.Settings = settings
	opts := systemOptions{sim: simCfg, settings: settings, serverDB: env.serverDB}
	if env.workerBin != "" {
		opts.childBin = env.workerBin
		res.Worker = "ordersync worker process"
	}
	sys, err := startSystem(ctx, env.caseDir("b2"), opts)
	if err != nil {
		return res, err
	}
	defer sys.stop()
	env.logf("B2: %d shops limited to %g requests/s (burst %d), worker: %s", p.B2Shops, p.B2RPS, p.B2Burst, res.Worker)
	if err := sys.startCursors(ctx); err != nil {
		return res, err
	}
	if err := sleep(ctx, p.B2Warmup); err != nil {
		return res, err
	}
	before := sys.sim.Stats()
	t0 := time.Now()
	if err := sleep(ctx, p.B2Window); err != nil {
		return res, err
	}
	after := sys.sim.Stats()
	window := time.Since(t0).Seconds()
	res.WindowSeconds = window
	res.MinShopRatio = -1
	for name, a := range after.Shops {
		b := before.Shops[name]
		accepted := (a.Requests - a.RateLimited - a.Unauthorized - a.BadRequests) - (b.Requests - b.RateLimited - b.Unauthorized - b.BadRequests)
		res.Accepted += accepted
		res.RateLimited += a.RateLimited - b.RateLimited
		res.RateLimitedAll += a.RateLimited
		res.PeakRPS = max(res.PeakRPS, a.PeakRequestsPerSecond)
		r := float64(accepted) / window / p.B2RPS
		if res.MinShopRatio < 0 || r < res.MinShopRatio {
			res.MinShopRatio = r
		}
	}
	res.AchievedRPS = float64(res.Accepted) / window / float64(p.B2Shops)
	res.Ratio = res.AchievedRPS / p.B2RPS
	if sys.queryErrors > 0 {
		res.Note = fmt.Sprintf("%d status queries failed: %s", sys.queryErrors, sys.lastQueryError)
	}
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
