package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/sim"
)

// scaleResult is B4: many quiet platforms on one worker process.
type scaleResult struct {
	Platforms       int              `json:"platforms"`
	LiveRate        float64          `json:"live_orders_per_second_per_shop"`
	Settings        platformSettings `json:"settings"`
	Worker          string           `json:"worker"`
	StartSeconds    float64          `json:"cursor_start_seconds"`
	CatchUpSeconds  float64          `json:"catch_up_seconds"`
	WindowSeconds   float64          `json:"window_seconds"`
	LagSamples      int              `json:"lag_samples"`
	LagP50          float64          `json:"lag_p50_seconds"`
	LagP99          float64          `json:"lag_p99_seconds"`
	LagMax          float64          `json:"lag_max_seconds"`
	Slices          int64            `json:"slices_completed_in_window"`
	SlicesPerSecond float64          `json:"slices_per_second"`
	Pages           int64            `json:"pages_in_window"`
	WorkerProc      processStats     `json:"worker_process"`
	Server          processStats     `json:"server_process"`
	QueryErrors     int              `json:"query_errors"`
	// CPU milliseconds per completed slice, lag queries included.
	ServerCPUPerSlice float64 `json:"server_cpu_ms_per_slice"`
	WorkerCPUPerSlice float64 `json:"worker_cpu_ms_per_slice"`
	Note              string  `json:"note,omitempty"`
}

// processStats are a process's memory and CPU over the measurement window.
type processStats struct {
	PID          int     `json:"pid"`
	What         string  `json:"what"`
	RSSMeanMiB   float64 `json:"rss_mean_mib"`
	RSSMaxMiB    float64 `json:"rss_max_mib"`
	PeakRSSMiB   float64 `json:"peak_rss_mib"` // VmHWM over the process's life
	CPUCores     float64 `json:"cpu_cores"`    // CPU seconds per second in the window
	rssSum       float64
	rssN         int
	cpuAtStart   float64
	startSampled time.Time
}

func (ps *processStats) sample() {
	m, err := readMemory(ps.PID)
	if err != nil {
		return
	}
	ps.rssSum += m.RSSMiB
	ps.rssN++
	ps.RSSMaxMiB = max(ps.RSSMaxMiB, m.RSSMiB)
	ps.PeakRSSMiB = m.PeakMiB
	ps.RSSMeanMiB = ps.rssSum / float64(ps.rssN)
}

func (ps *processStats) startCPU() { ps.cpuAtStart, ps.startSampled = procCPU(ps.PID), time.Now() }
func (ps *processStats) endCPU() {
	ps.CPUCores = (procCPU(ps.PID) - ps.cpuAtStart) / time.Since(ps.startSampled).Seconds()
}

// runScale runs B4: N platforms with live orders, each following the
// present in `interval` slices, all served by one worker process.
func runScale(ctx context.Context, env *benchEnv, p *params) (scaleResult, error) {
	res := scaleResult{Platforms: p.B4Platforms, LiveRate: p.B4LiveRate}
	simCfg := fleetSim(17, p.B4Platforms, p.B4LiveRate, 5*time.Minute, time.Now().Add(-p.B4Backlog))
	res.Settings = platformSettings{
		Start: time.Now().UTC().Add(-p.B4Backlog).Truncate(time.Second), Interval: p.B4Interval, Overlap: "10s", Settle: "5s",
		Timeout: "30s", Concurrency: 2, RPS: 2, Burst: 4, PageSize: 100, MaxPages: 100, SharedQueue: p.B4Queue,
	}
	sys, err := startFleetSystem(ctx, env, "b4", simCfg, res.Settings, &res.Worker, &res.Server, &res.WorkerProc)
	if err != nil {
		return res, err
	}
	defer sys.stop()
	interval, err := time.ParseDuration(p.B4Interval)
	if err != nil {
		return res, err
	}
	env.logf("B4: %d platforms, %s intervals, queue %q, worker: %s", p.B4Platforms, p.B4Interval, p.B4Queue, res.Worker)

	t0 := time.Now()
	if err := sys.startCursors(ctx); err != nil {
		return res, err
	}
	res.StartSeconds = time.Since(t0).Seconds()
	env.logf("B4: %d cursors started in %.1fs; catching up the %s backlog", p.B4Platforms, res.StartSeconds, p.B4Backlog)
	// Catch up: every cursor has finished the backlog slices.
	caughtUp := res.Settings.Start.Add(p.B4Backlog / interval * interval) // the end of the last backlog slice
	if _, err := sys.waitWatermarks(ctx, caughtUp, p.B4CatchUp); err != nil {
		res.Note = "catch-up: " + err.Error()
	}
	res.CatchUpSeconds = time.Since(t0).Seconds()

	env.logf("B4: caught up after %.1fs; measuring for %s", res.CatchUpSeconds, p.B4Window)
	w, err := measureFleet(ctx, env, sys, "b4", &res.Server, &res.WorkerProc, p.B4Window, p.B4LagSample, rand.New(rand.NewPCG(1, 2)), &res.QueryErrors)
	if err != nil {
		return res, err
	}
	res.WindowSeconds, res.Pages, res.Slices, res.SlicesPerSecond = w.seconds, w.pages, w.slices, w.slicesPerSecond()
	if w.countErr != nil {
		res.Note = "count slices: " + w.countErr.Error()
	}
	res.ServerCPUPerSlice, res.WorkerCPUPerSlice = w.cpuPerSlice(res.Server), w.cpuPerSlice(res.WorkerProc)
	res.LagSamples, res.LagP50, res.LagP99, res.LagMax = w.lagStats()
	return res, nil
}

// fleetSim is the simulator of B4 and B5: one quiet shop per platform with
// live orders (a few updates each) from start on, no history, no faults.
func fleetSim(seed int64, platforms int, liveRate float64, updateSpread time.Duration, start time.Time) sim.Config {
	simCfg := sim.DefaultConfig()
	simCfg.Seed = seed
	simCfg.Shops = shops(platforms)
	simCfg.AdminToken = "bench-admin"
	simCfg.HistoryOrders, simCfg.History = 0, 0
	simCfg.LiveRate = liveRate
	simCfg.MaxUpdates = 2
	simCfg.UpdateSpread = updateSpread
	simCfg.Late = 5 * time.Second
	simCfg.RateLimit = sim.RateLimit{RPS: 2, Burst: 4}
	simCfg.Faults = sim.Faults{}
	simCfg.Start = start
	return simCfg
}

// startFleetSystem starts B4's or B5's system, its worker in a child
// process when the bench has a worker binary, and sets which worker ran and
// the two processes to measure (also when it fails, for the report).
func startFleetSystem(ctx context.Context, env *benchEnv, caseName string, simCfg sim.Config, settings platformSettings,
	worker *string, server, workerProc *processStats) (*system, error) {
	*worker = "in-process (worker and server measured together)"
	opts := systemOptions{sim: simCfg, settings: settings, serverDB: env.serverDB}
	if env.workerBin != "" {
		opts.childBin = env.workerBin
		*worker = "ordersync worker process"
	}
	sys, err := startSystem(ctx, env.caseDir(caseName), opts)
	if err != nil {
		return nil, err
	}
	*server = processStats{PID: os.Getpid(), What: "benchmark process: embedded Temporal server + simulator + driver"}
	*workerProc = processStats{PID: os.Getpid(), What: "in process"}
	if sys.child != nil {
		*workerProc = processStats{PID: sys.child.Process.Pid, What: "ordersync worker"}
	}
	return sys, nil
}

// fleetWindow is what measureFleet saw over its window.
type fleetWindow struct {
	seconds  float64
	lags     []float64 // sorted
	pages    int64
	slices   int64
	countErr error // counting the slices failed
}

// measureFleet measures a running fleet (B4, B5) for window: every 10 s
// the lag (now minus the watermark) of lagSample random cursors, and over
// the window the memory and CPU of server and worker, the pages fetched
// and the slices completed. Queries cost the server and the worker too,
// so only a few per second; failed ones count in queryErrors.
func measureFleet(ctx context.Context, env *benchEnv, sys *system, caseName string, server, worker *processStats,
	window time.Duration, lagSample int, rng *rand.Rand, queryErrors *int) (fleetWindow, error) {
	var w fleetWindow
	names := sys.file.Names()
	pagesBefore := totalPages(sys.sim.Stats())
	stopProfile := env.profile(caseName)
	defer stopProfile()
	server.startCPU()
	worker.startCPU()
	start := time.Now()
	for time.Since(start) < window {
		server.sample()
		worker.sample()
		perm := rng.Perm(len(names))[:min(len(names), lagSample)]
		sample := make([]string, len(perm))
		for i, j := range perm {
			sample[i] = names[j]
		}
		at := time.Now()
		sts, err := sys.statuses(ctx, sample)
		if err != nil {
			*queryErrors++
		}
		for _, st := range sts {
			w.lags = append(w.lags, at.Sub(st.Watermark).Seconds())
		}
		if err := sleep(ctx, 10*time.Second-time.Since(at)); err != nil {
			return w, err
		}
	}
	end := time.Now()
	w.seconds = end.Sub(start).Seconds()
	server.endCPU()
	worker.endCPU()
	stopProfile()
	w.pages = totalPages(sys.sim.Stats()) - pagesBefore
	w.slices, w.countErr = sys.countSlices(ctx, start, end)
	sort.Float64s(w.lags)
	return w, nil
}

func (w fleetWindow) slicesPerSecond() float64 { return float64(w.slices) / w.seconds }

// cpuPerSlice is a process's CPU milliseconds per completed slice (0 with
// no slice).
func (w fleetWindow) cpuPerSlice(ps processStats) float64 {
	if w.slices == 0 {
		return 0
	}
	return ps.CPUCores * w.seconds / float64(w.slices) * 1000
}

// lagStats are the number of lag samples and their p50, p99 and maximum.
func (w fleetWindow) lagStats() (n int, p50, p99, maxLag float64) {
	if len(w.lags) == 0 {
		return 0, 0, 0, 0
	}
	return len(w.lags), quantile(w.lags, 0.5), quantile(w.lags, 0.99), w.lags[len(w.lags)-1]
}

func totalPages(st sim.Stats) int64 {
	var n int64
	for _, s := range st.Shops {
		n += s.Pages
	}
	return n
}

// countSlices asks the server's visibility store how many slices completed
// in [from, to), so counting costs one request rather than a query per cursor.
func (s *system) countSlices(ctx context.Context, from, to time.Time) (int64, error) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Completed' AND CloseTime >= '%s' AND CloseTime < '%s'",
		api.SliceWorkflowType, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
	resp, err := s.client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: s.srv.Namespace(), Query: q})
	if err != nil {
		return 0, err
	}
	return resp.GetCount(), nil
}
