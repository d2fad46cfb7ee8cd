package main

import (
	"flag"
	"strings"
	"time"
)

// params are every knob of a run; all of them are written to the JSON.
type params struct {
	B1Shops         int           `json:"b1_shops"`
	B1OrdersPerShop int           `json:"b1_orders_per_shop"`
	B1History       time.Duration `json:"b1_history_ns"`
	B1Interval      string        `json:"b1_intervals"`
	B1PageSize      int           `json:"b1_page_size"`
	B1Concurrency   int           `json:"b1_concurrency"`
	B1MaxPages      int           `json:"b1_max_pages"`
	B1MaxSpan       string        `json:"b1_backfill_max_span"`

	B2Shops         int           `json:"b2_shops"`
	B2RPS           float64       `json:"b2_rps"`
	B2Burst         int           `json:"b2_burst"`
	B2OrdersPerShop int           `json:"b2_orders_per_shop"`
	B2PageSize      int           `json:"b2_page_size"`
	B2Warmup        time.Duration `json:"b2_warmup_ns"`
	B2Window        time.Duration `json:"b2_window_ns"`

	B3Shops    int           `json:"b3_shops"`
	B3LiveRate float64       `json:"b3_live_rate"`
	B3Interval string        `json:"b3_interval"`
	B3Settle   string        `json:"b3_settle"`
	B3Overlap  string        `json:"b3_overlap"`
	B3Late     string        `json:"b3_late"`
	B3Spread   time.Duration `json:"b3_update_spread_ns"`
	B3Warmup   time.Duration `json:"b3_warmup_ns"`
	B3Window   time.Duration `json:"b3_window_ns"`

	B4Platforms int           `json:"b4_platforms"`
	B4Interval  string        `json:"b4_interval"`
	B4LiveRate  float64       `json:"b4_live_rate"`
	B4Backlog   time.Duration `json:"b4_backlog_ns"`
	B4Window    time.Duration `json:"b4_window_ns"`
	B4Queue     string        `json:"b4_task_queue"`
	B4CatchUp   time.Duration `json:"b4_catch_up_ns"`
	B4LagSample int           `json:"b4_lag_sample"`
	B4PGWorkers int           `json:"b4pg_workers"`

	fleetQuotaParams // B5 and B6 (fleet.go)
}

func (p *params) register(fs *flag.FlagSet) {
	fs.IntVar(&p.B1Shops, "b1-shops", 10, "B1: shops (platforms)")
	fs.IntVar(&p.B1OrdersPerShop, "b1-orders", 50_000, "B1: history orders per shop")
	fs.DurationVar(&p.B1History, "b1-history", 90*24*time.Hour, "B1: how far back the history reaches")
	fs.StringVar(&p.B1Interval, "b1-interval", "15m", "B1: slice intervals, comma-separated (each is one run)")
	fs.IntVar(&p.B1PageSize, "b1-page-size", 250, "B1: page size (the simulator's maximum is 250)")
	fs.IntVar(&p.B1Concurrency, "b1-concurrency", 4, "B1: slices in flight per platform (direct loop: goroutines per platform)")
	fs.IntVar(&p.B1MaxPages, "b1-max-pages", 100, "B1: pages before a slice splits")
	fs.StringVar(&p.B1MaxSpan, "b1-max-span", "720h", "B1: backfill_max_span, how wide backfill slices may grow (0: one interval each); the direct loop pages through windows this wide")

	fs.IntVar(&p.B2Shops, "b2-shops", 4, "B2: shops")
	fs.Float64Var(&p.B2RPS, "b2-rps", 5, "B2: the simulator's limit R, requests/s per shop (the platforms are configured with the same)")
	fs.IntVar(&p.B2Burst, "b2-burst", 5, "B2: burst of the simulator's limit (and of the platforms')")
	fs.IntVar(&p.B2OrdersPerShop, "b2-orders", 20_000, "B2: history orders per shop (more than the window can fetch)")
	fs.IntVar(&p.B2PageSize, "b2-page-size", 25, "B2: page size (small, so every slice takes several requests)")
	fs.DurationVar(&p.B2Warmup, "b2-warmup", 10*time.Second, "B2: time before measuring")
	fs.DurationVar(&p.B2Window, "b2-window", 45*time.Second, "B2: measurement window")

	fs.IntVar(&p.B3Shops, "b3-shops", 10, "B3: shops")
	fs.Float64Var(&p.B3LiveRate, "b3-live-rate", 2, "B3: new orders per second per shop")
	fs.DurationVar(&p.B3Spread, "b3-update-spread", 10*time.Minute, "B3: each order gets up to 3 updates within this time after creation")
	fs.StringVar(&p.B3Interval, "b3-interval", "10s", "B3: slice interval")
	fs.StringVar(&p.B3Settle, "b3-settle", "2s", "B3: settle")
	fs.StringVar(&p.B3Overlap, "b3-overlap", "5s", "B3: overlap")
	fs.StringVar(&p.B3Late, "b3-late", "3s", "B3: the simulator's maximum visibility delay (at most settle + overlap)")
	fs.DurationVar(&p.B3Warmup, "b3-warmup", 20*time.Second, "B3: time before the measured window")
	fs.DurationVar(&p.B3Window, "b3-window", 60*time.Second, "B3: window whose visible versions are measured")

	fs.IntVar(&p.B4Platforms, "b4-platforms", 1000, "B4: platforms (one simulator shop each)")
	fs.StringVar(&p.B4Interval, "b4-interval", "60s", "B4: slice interval")
	fs.Float64Var(&p.B4LiveRate, "b4-live-rate", 0.02, "B4: new orders per second per shop")
	fs.DurationVar(&p.B4Backlog, "b4-backlog", time.Minute, "B4: each cursor starts this far in the past")
	fs.DurationVar(&p.B4CatchUp, "b4-catch-up", 2*time.Minute, "B4: longest wait for every cursor to reach the present before measuring")
	fs.IntVar(&p.B4LagSample, "b4-lag-sample", 50, "B4: cursors whose lag is sampled every 10s")
	fs.DurationVar(&p.B4Window, "b4-window", 150*time.Second, "B4: measurement window after the catch-up")
	fs.StringVar(&p.B4Queue, "b4-task-queue", "orders-fleet", "B4: one task queue shared by all platforms (empty: one queue per platform)")
	fs.IntVar(&p.B4PGWorkers, "b4pg-workers", 3, "B4PG (B4 on the PostgreSQL stack; B4's other flags apply): `ordersync worker` processes")

	p.fleetQuotaParams.register(fs)
}

func (p *params) b1Intervals() []string {
	var out []string
	for _, s := range strings.Split(p.B1Interval, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (p *params) b1Settings(interval string) platformSettings {
	return platformSettings{
		Interval: interval, Overlap: "2m", Settle: "1m", Timeout: "30s",
		// The highest rate_limit allows: B1 measures throughput, and its
		// ~10 requests/s per shop never wait for it.
		Concurrency: p.B1Concurrency, RPS: 1000, Burst: 1000,
		PageSize: p.B1PageSize, MaxPages: p.B1MaxPages, BackfillMaxSpan: p.B1MaxSpan,
	}
}
