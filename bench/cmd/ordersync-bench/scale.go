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
	res := scaleResult{Platforms: p.B4Platforms, LiveRate: p.B4LiveRate, Worker: "in-process (worker and server measured together)"}
	simCfg := sim.DefaultConfig()
	simCfg.Seed = 17
	simCfg.Shops = shops(p.B4Platforms)
	simCfg.AdminToken = "bench-admin"
	simCfg.HistoryOrders, simCfg.History = 0, 0
	simCfg.LiveRate = p.B4LiveRate
	simCfg.MaxUpdates = 2
	simCfg.UpdateSpread = 5 * time.Minute
	simCfg.Late = 5 * time.Second
	simCfg.RateLimit = sim.RateLimit{RPS: 2, Burst: 4}
	simCfg.Faults = sim.Faults{}
	simCfg.Start = time.Now().Add(-p.B4Backlog)
	res.Settings = platformSettings{
		Start: time.Now().UTC().Add(-p.B4Backlog).Truncate(time.Second), Interval: p.B4Interval, Overlap: "10s", Settle: "5s",
		Timeout: "30s", Concurrency: 2, RPS: 2, Burst: 4, PageSize: 100, MaxPages: 100, SharedQueue: p.B4Queue,
	}
	opts := systemOptions{sim: simCfg, settings: res.Settings, serverDB: env.serverDB}
	if env.workerBin != "" {
		opts.childBin = env.workerBin
		res.Worker = "ordersync worker process"
	}
	sys, err := startSystem(ctx, env.caseDir("b4"), opts)
	if err != nil {
		return res, err
	}
	defer sys.stop()
	res.Server = processStats{PID: os.Getpid(), What: "benchmark process: embedded Temporal server + simulator + driver"}
	res.WorkerProc = processStats{PID: os.Getpid(), What: "in process"}
	if sys.child != nil {
		res.WorkerProc = processStats{PID: sys.child.Process.Pid, What: "ordersync worker"}
	}
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

	names := sys.file.Names()
	env.logf("B4: caught up after %.1fs; measuring for %s", res.CatchUpSeconds, p.B4Window)
	pagesBefore := totalPages(sys.sim.Stats())
	stopProfile := env.profile("b4")
	defer stopProfile()
	res.Server.startCPU()
	res.WorkerProc.startCPU()
	start := time.Now()
	var lags []float64
	rng := rand.New(rand.NewPCG(1, 2))
	for time.Since(start) < p.B4Window {
		res.Server.sample()
		res.WorkerProc.sample()
		// Lag of a few random cursors: now minus the watermark. Queries
		// cost the server and the worker too, so only a few per second.
		perm := rng.Perm(len(names))[:min(len(names), p.B4LagSample)]
		sampleNames := make([]string, len(perm))
		for i, j := range perm {
			sampleNames[i] = names[j]
		}
		at := time.Now()
		sts, err := sys.statuses(ctx, sampleNames)
		if err != nil {
			res.QueryErrors++
		}
		for _, st := range sts {
			lags = append(lags, at.Sub(st.Watermark).Seconds())
		}
		if err := sleep(ctx, 10*time.Second-time.Since(at)); err != nil {
			return res, err
		}
	}
	end := time.Now()
	res.WindowSeconds = end.Sub(start).Seconds()
	res.Server.endCPU()
	res.WorkerProc.endCPU()
	stopProfile()
	res.Pages = totalPages(sys.sim.Stats()) - pagesBefore
	if res.Slices, err = sys.countSlices(ctx, start, end); err != nil {
		res.Note = "count slices: " + err.Error()
	}
	res.SlicesPerSecond = float64(res.Slices) / res.WindowSeconds
	if res.Slices > 0 {
		res.ServerCPUPerSlice = res.Server.CPUCores * res.WindowSeconds / float64(res.Slices) * 1000
		res.WorkerCPUPerSlice = res.WorkerProc.CPUCores * res.WindowSeconds / float64(res.Slices) * 1000
	}
	sort.Float64s(lags)
	res.LagSamples = len(lags)
	if len(lags) > 0 {
		res.LagP50, res.LagP99, res.LagMax = quantile(lags, 0.5), quantile(lags, 0.99), lags[len(lags)-1]
	}
	return res, nil
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
