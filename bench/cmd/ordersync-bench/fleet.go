package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
)

// fleetQuotaParams are B5's and B6's knobs (embedded in params, so they
// are written to the JSON with the rest).
type fleetQuotaParams struct {
	B5Platforms int           `json:"b5_platforms"`
	B5Interval  time.Duration `json:"b5_interval_ns"`
	B5Settle    time.Duration `json:"b5_settle_ns"`
	B5LiveRate  float64       `json:"b5_live_rate"`
	B5Warmup    time.Duration `json:"b5_warmup_ns"`
	B5Window    time.Duration `json:"b5_window_ns"`
	B5LagSample int           `json:"b5_lag_sample"`
	B5Queue     string        `json:"b5_task_queue"`

	B6Orders       int           `json:"b6_orders"`
	B6History      time.Duration `json:"b6_history_ns"`
	B6RealWindow   time.Duration `json:"b6_real_window_ns"`
	B6Scale        float64       `json:"b6_time_scale"`
	B6ScaledWindow time.Duration `json:"b6_scaled_window_ns"`
}

func (p *fleetQuotaParams) register(fs *flag.FlagSet) {
	fs.IntVar(&p.B5Platforms, "b5-platforms", 5000, "B5: platforms (cursors; one simulator shop each)")
	fs.DurationVar(&p.B5Interval, "b5-interval", 10*time.Minute, "B5: slice interval")
	fs.DurationVar(&p.B5Settle, "b5-settle", 30*time.Second, "B5: settle")
	fs.Float64Var(&p.B5LiveRate, "b5-live-rate", 0.005, "B5: new orders per second per shop")
	fs.DurationVar(&p.B5Warmup, "b5-warmup", 30*time.Second, "B5: time after the last cursor started before measuring")
	fs.DurationVar(&p.B5Window, "b5-window", 150*time.Second, "B5: measurement window (phases are spread over the interval, so any window sees every phase of the saw-tooth)")
	fs.IntVar(&p.B5LagSample, "b5-lag-sample", 100, "B5: cursors whose lag is sampled every 10s")
	fs.StringVar(&p.B5Queue, "b5-task-queue", "orders-fleet", "B5: one task queue shared by all platforms")

	fs.IntVar(&p.B6Orders, "b6-orders", 20_000, "B6: backlog orders (pages of 100, kind amazon's page size)")
	fs.DurationVar(&p.B6History, "b6-history", 30*24*time.Hour, "B6: how far back the backlog reaches")
	fs.DurationVar(&p.B6RealWindow, "b6-real-window", 8*time.Minute, "B6: window at the real quota, from the first request (runs in the background while the other cases run; 0: skip)")
	fs.Float64Var(&p.B6Scale, "b6-scale", 6, "B6: time scale of the second run's quota (rps = 0.0167 x scale, burst 20; slots stay further apart than an attempt's timeout divided by the concurrency up to x8; 0: skip)")
	fs.DurationVar(&p.B6ScaledWindow, "b6-scaled-window", 3*time.Minute, "B6: window of the time-scaled run, from the first request (also in the background)")
}

// fleetResult is B5: the fleet the systems ordersync replaces ran, on one
// worker process and the embedded server.
type fleetResult struct {
	Platforms    int              `json:"platforms"`
	LiveRate     float64          `json:"live_orders_per_second_per_shop"`
	Settings     platformSettings `json:"settings"`
	Worker       string           `json:"worker"`
	StartSeconds float64          `json:"cursor_start_seconds"`
	WarmupSecs   float64          `json:"warmup_seconds"`
	WindowSecs   float64          `json:"window_seconds"`
	LagSamples   int              `json:"lag_samples"`
	LagP50       float64          `json:"lag_p50_seconds"`
	LagP99       float64          `json:"lag_p99_seconds"`
	LagMax       float64          `json:"lag_max_seconds"`
	// TargetLag is interval + settle + 60 s (issue 18).
	TargetLag       float64      `json:"target_lag_p99_seconds"`
	Slices          int64        `json:"slices_completed_in_window"`
	SlicesPerSecond float64      `json:"slices_per_second"`
	NeededPerSecond float64      `json:"slices_per_second_needed"`
	Pages           int64        `json:"pages_in_window"`
	WorkerProc      processStats `json:"worker_process"`
	Server          processStats `json:"server_process"`
	QueryErrors     int          `json:"query_errors"`
	// CPU milliseconds per completed slice, lag queries included.
	ServerCPUPerSlice float64 `json:"server_cpu_ms_per_slice"`
	WorkerCPUPerSlice float64 `json:"worker_cpu_ms_per_slice"`
	// SustainableSlices is what this machine's cores could carry at the
	// measured CPU per slice (server + worker), if nothing else ran:
	// nproc / (CPU seconds per slice). A lower bound, not a measured
	// saturation: the CPU per slice includes what does not grow with the
	// slice rate (idle cursors' timers, the lag queries, the server's own
	// housekeeping), so at a higher rate a slice costs less. As long as the
	// window is not saturated, (nproc - fixed) / marginal is at least this.
	// PlatformsAtInterval is it times the interval.
	SustainableSlices   float64 `json:"sustainable_slices_per_second"`
	PlatformsAtInterval float64 `json:"platforms_sustainable_at_interval"`
	LoadBefore          float64 `json:"load_average_before"`
	LoadAfter           float64 `json:"load_average_after"`
	Note                string  `json:"note,omitempty"`
	// StatusPoller is what the worker's metrics status poller did in the
	// window (workers run with metrics on, as in production).
	StatusPoller *pollerStats `json:"status_poller,omitempty"`
}

// runFleet runs B5. Every cursor starts at the present, so there is no
// backlog to catch up: each cursor's first slice is the grid interval
// holding its start, due at the grid point after it plus settle, and the
// grid's per-platform phase spreads those over the whole interval. The
// fleet is in steady state once started, and at any moment its cursors
// stand at every point of the lag's saw-tooth, so a window shorter than an
// interval samples the whole distribution: p99 lag over the sampled
// cursors, slices completed, CPU and memory over the window.
// fleetWorld is B5's world, which B13 shares: n quiet shops with no
// history, liveRate new orders/s each, up to 2 updates, 2 requests/s per
// shop, orders from one interval before now (before the first slice's
// start) on.
func fleetWorld(seed int64, n int, liveRate float64, interval time.Duration, now time.Time) sim.Config {
	c := sim.DefaultConfig()
	c.Seed = seed
	c.Shops = shops(n)
	c.AdminToken = "bench-admin"
	c.HistoryOrders, c.History = 0, 0
	c.LiveRate = liveRate
	c.MaxUpdates = 2
	c.UpdateSpread = 10 * time.Minute
	c.Late = 5 * time.Second
	c.RateLimit = sim.RateLimit{RPS: 2, Burst: 4}
	c.Faults = sim.Faults{}
	c.Start = now.Add(-interval)
	return c
}

func runFleet(ctx context.Context, env *benchEnv, p *params) (fleetResult, error) {
	res := fleetResult{Platforms: p.B5Platforms, LiveRate: p.B5LiveRate, Worker: "in-process (worker and server measured together)",
		TargetLag:       (p.B5Interval + p.B5Settle + time.Minute).Seconds(),
		NeededPerSecond: float64(p.B5Platforms) / p.B5Interval.Seconds(), LoadBefore: loadAverage()}
	if p.B5Platforms < 1 || p.B5Interval < time.Second {
		return res, fmt.Errorf("B5 needs at least 1 platform and an interval of at least 1s (got %d, %s)", p.B5Platforms, p.B5Interval)
	}
	now := time.Now().UTC()
	simCfg := fleetWorld(19, p.B5Platforms, p.B5LiveRate, p.B5Interval, now)
	res.Settings = platformSettings{
		Start: now.Truncate(time.Second), Interval: p.B5Interval.String(), Overlap: min(time.Minute, p.B5Interval/4).String(), Settle: p.B5Settle.String(),
		Timeout: "30s", Concurrency: 2, RPS: 2, Burst: 4, PageSize: 100, MaxPages: 100, SharedQueue: p.B5Queue,
	}
	opts := systemOptions{sim: simCfg, settings: res.Settings, serverDB: env.serverDB}
	if env.workerBin != "" {
		opts.childBin = env.workerBin
		res.Worker = "ordersync worker process"
	}
	sys, err := startSystem(ctx, env.caseDir("b5"), opts)
	if err != nil {
		return res, err
	}
	defer sys.stop()
	res.Server = processStats{PID: os.Getpid(), What: "benchmark process: embedded Temporal server + simulator + driver"}
	res.WorkerProc = processStats{PID: os.Getpid(), What: "in process"}
	if sys.child != nil {
		res.WorkerProc = processStats{PID: sys.child.Process.Pid, What: "ordersync worker"}
	}
	env.logf("B5: %d platforms, %s intervals, settle %s, queue %q, worker: %s", p.B5Platforms, p.B5Interval, p.B5Settle, p.B5Queue, res.Worker)

	t0 := time.Now()
	g := newGroup(16)
	for _, pl := range sys.file.Platforms {
		g.Go(func() error {
			_, err := starter.EnsureCursor(ctx, sys.client, pl, now)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.StartSeconds = time.Since(t0).Seconds()
	env.logf("B5: %d cursors started in %.1fs; warm-up %s, then measuring for %s", p.B5Platforms, res.StartSeconds, p.B5Warmup, p.B5Window)
	if err := sleep(ctx, p.B5Warmup); err != nil {
		return res, err
	}
	res.WarmupSecs = p.B5Warmup.Seconds()

	names := sys.file.Names()
	pagesBefore := totalPages(sys.sim.Stats())
	stopProfile := env.profile("b5")
	defer stopProfile()
	res.StatusPoller = sys.startPollerStats(ctx)
	win, err := lagWindow{procs: []*processStats{&res.Server, &res.WorkerProc}, names: names,
		lagSample: p.B5LagSample, rng: rand.New(rand.NewPCG(5, 5)), length: p.B5Window}.run(ctx, sys)
	if err != nil {
		return res, err
	}
	start, end := win.start, win.end
	res.WindowSecs = win.seconds()
	res.QueryErrors += win.queryErrors
	res.StatusPoller.end(ctx, sys)
	stopProfile()
	res.LoadAfter = loadAverage()
	res.Pages = totalPages(sys.sim.Stats()) - pagesBefore
	if res.Slices, err = sys.countSlices(ctx, start, end); err != nil {
		res.Note = "count slices: " + err.Error()
	}
	res.SlicesPerSecond = float64(res.Slices) / res.WindowSecs
	if res.Slices > 0 {
		res.ServerCPUPerSlice = res.Server.CPUCores * res.WindowSecs / float64(res.Slices) * 1000
		res.WorkerCPUPerSlice = res.WorkerProc.CPUCores * res.WindowSecs / float64(res.Slices) * 1000
		if perSlice := (res.ServerCPUPerSlice + res.WorkerCPUPerSlice) / 1000; perSlice > 0 {
			res.SustainableSlices = float64(runtime.NumCPU()) / perSlice
			res.PlatformsAtInterval = res.SustainableSlices * p.B5Interval.Seconds()
		}
	}
	res.LagSamples = len(win.lags)
	res.LagP50, res.LagP99, res.LagMax = win.quantiles()
	return res, nil
}

func printFleet(w io.Writer, b *fleetResult) {
	if b == nil {
		return
	}
	setting := fmt.Sprintf("%d platforms, %s intervals, settle %s, task queue %q, %s", b.Platforms, b.Settings.Interval, b.Settings.Settle, b.Settings.SharedQueue, b.Worker)
	result := fmt.Sprintf("lag p50 %.0fs, p99 %.0fs, max %.0fs (%d samples over %.0fs); %.1f slices/s (%.1f needed); worker RSS %.0f MiB (max %.0f, peak %.0f), %.2f cores; server RSS %.0f MiB, %.2f cores, %.0f ms of server + %.0f ms of worker CPU per slice: at least %.0f slices/s sustainable on %d cores = %.0f platforms at %s",
		b.LagP50, b.LagP99, b.LagMax, b.LagSamples, b.WindowSecs, b.SlicesPerSecond, b.NeededPerSecond,
		b.WorkerProc.RSSMeanMiB, b.WorkerProc.RSSMaxMiB, b.WorkerProc.PeakRSSMiB, b.WorkerProc.CPUCores,
		b.Server.RSSMeanMiB, b.Server.CPUCores, b.ServerCPUPerSlice, b.WorkerCPUPerSlice,
		b.SustainableSlices, runtime.NumCPU(), b.PlatformsAtInterval, b.Settings.Interval)
	result += b.StatusPoller.summary() + note(b.Note)
	fmt.Fprintf(w, "B5 fleet\t%s\t%s\tp99 lag <= %.0fs, worker RSS <= 1024 MiB\t%s\n", setting, result, b.TargetLag,
		yes(b.Note == "" && b.LagSamples > 0 && b.LagP99 <= b.TargetLag && max(b.WorkerProc.RSSMaxMiB, b.WorkerProc.PeakRSSMiB) <= 1024))
}
