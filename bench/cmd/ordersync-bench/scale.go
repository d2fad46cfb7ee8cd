package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
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

	// Stack is what the case ran on.
	Stack string `json:"stack"`
	// Skipped says why the case did not run (no PostgreSQL).
	Skipped string `json:"skipped,omitempty"`
	// WorkerProcs are the worker processes one by one when there are
	// several; WorkerProc is then their sum.
	WorkerProcs []processStats `json:"worker_processes,omitempty"`
	// On the PostgreSQL stack: the CPU of the PostgreSQL backends serving
	// Temporal's two databases and the order store's. ServerCPUPerSlice
	// there is the Temporal server process and its backends together;
	// ServerProcessCPUPerSlice the process alone.
	TemporalPostgres            *postgresStats `json:"temporal_postgres_backends,omitempty"`
	StorePostgres               *postgresStats `json:"store_postgres_backends,omitempty"`
	ServerProcessCPUPerSlice    float64        `json:"server_process_cpu_ms_per_slice,omitempty"`
	TemporalPostgresCPUPerSlice float64        `json:"temporal_postgres_cpu_ms_per_slice,omitempty"`
	StorePostgresCPUPerSlice    float64        `json:"store_postgres_cpu_ms_per_slice,omitempty"`
	// Driver is the benchmark process on the PostgreSQL stack: the
	// simulator and the lag queries. On the dev server it is part of
	// Server, so the two stacks' server numbers compare with it added.
	Driver *processStats `json:"driver_process,omitempty"`
	// PartitionsPolled counts the shared task queue's partitions that had
	// pollers at the end of the window (4 on the PostgreSQL stack, 1 on
	// the dev server).
	PartitionsPolled int `json:"task_queue_partitions_polled,omitempty"`
	// StatusPoller is what the workers' metrics status pollers did in the
	// window (workers run with metrics on, as in production).
	StatusPoller *pollerStats `json:"status_poller,omitempty"`
}

// scaleStack is what B4 runs on: the embedded dev server (nil postgres) or
// the production-shaped stack on PostgreSQL.
type scaleStack struct {
	name     string // the case's directory, log prefix and profile name
	postgres *pgStackOptions
}

// sumProcesses is several processes' stats as one: memory and CPU added up.
func sumProcesses(what string, ps []processStats) processStats {
	out := processStats{What: what}
	for _, p := range ps {
		out.RSSMeanMiB += p.RSSMeanMiB
		out.RSSMaxMiB += p.RSSMaxMiB
		out.PeakRSSMiB += p.PeakRSSMiB
		out.CPUCores += p.CPUCores
	}
	return out
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
// present in `interval` slices, all served by one worker process on the
// embedded dev server, or by several on the PostgreSQL stack.
func runScale(ctx context.Context, env *benchEnv, p *params, stack scaleStack) (scaleResult, error) {
	res := scaleResult{Platforms: p.B4Platforms, LiveRate: p.B4LiveRate, Worker: "in-process (worker and server measured together)"}
	if stack.postgres != nil {
		res.Stack = stack.postgres.describe()
	} else {
		res.Stack = fmt.Sprintf("embedded dev server (SQLite %s, 1 partition per task queue) in the benchmark process with the simulator; SQLite store", env.serverDB)
	}
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
	opts := systemOptions{sim: simCfg, settings: res.Settings, serverDB: env.serverDB, postgres: stack.postgres}
	if env.workerBin != "" {
		opts.childBin = env.workerBin
		res.Worker = "ordersync worker process"
	}
	if stack.postgres != nil {
		res.Worker = fmt.Sprintf("%d ordersync worker processes", stack.postgres.workers)
	}
	sys, err := startSystem(ctx, env.caseDir(stack.name), opts)
	if err != nil {
		return res, err
	}
	defer sys.stop()
	res.Server = processStats{PID: os.Getpid(), What: "benchmark process: embedded Temporal server + simulator + driver"}
	res.WorkerProc = processStats{PID: os.Getpid(), What: "in process"}
	if sys.child != nil {
		res.WorkerProc = processStats{PID: sys.child.Process.Pid, What: "ordersync worker"}
	}
	// measured are the processes sampled besides the server.
	var measured []*processStats
	var pgConn *pgx.Conn
	if sys.pg != nil {
		res.Server = processStats{PID: sys.pg.server.cmd.Process.Pid, What: "ordersync cluster --server-only: the Temporal server on PostgreSQL"}
		res.WorkerProcs = make([]processStats, len(sys.children))
		for i, c := range sys.children {
			res.WorkerProcs[i] = processStats{PID: c.Process.Pid, What: fmt.Sprintf("ordersync worker %d", i+1)}
			measured = append(measured, &res.WorkerProcs[i])
		}
		res.Driver = &processStats{PID: os.Getpid(), What: "benchmark process: simulator + driver"}
		measured = append(measured, res.Driver)
		res.TemporalPostgres = newPostgresStats("PostgreSQL backends of Temporal's databases", sys.pg.temporal.Database, sys.pg.temporal.VisibilityDatabase)
		res.StorePostgres = newPostgresStats("PostgreSQL backends of the order store's database", sys.pg.storeDB)
		if pgConn, err = pgx.Connect(ctx, sys.pg.adminDSN); err != nil {
			return res, fmt.Errorf("connect to PostgreSQL to measure its backends: %w", err)
		}
		defer pgConn.Close(context.Background())
	} else {
		measured = []*processStats{&res.WorkerProc}
	}
	label := strings.ToUpper(stack.name)
	interval, err := time.ParseDuration(p.B4Interval)
	if err != nil {
		return res, err
	}
	env.logf("%s: %d platforms, %s intervals, queue %q, worker: %s; %s", label, p.B4Platforms, p.B4Interval, p.B4Queue, res.Worker, res.Stack)

	t0 := time.Now()
	if err := sys.startCursors(ctx); err != nil {
		return res, err
	}
	res.StartSeconds = time.Since(t0).Seconds()
	env.logf("%s: %d cursors started in %.1fs; catching up the %s backlog", label, p.B4Platforms, res.StartSeconds, p.B4Backlog)
	// Catch up: every cursor has finished the backlog slices.
	caughtUp := res.Settings.Start.Add(p.B4Backlog / interval * interval) // the end of the last backlog slice
	if _, err := sys.waitWatermarksEvery(ctx, caughtUp, p.B4CatchUp, 2*time.Second); err != nil {
		res.Note = "catch-up: " + err.Error()
	}
	res.CatchUpSeconds = time.Since(t0).Seconds()

	names := sys.file.Names()
	env.logf("%s: caught up after %.1fs; measuring for %s", label, res.CatchUpSeconds, p.B4Window)
	pagesBefore := totalPages(sys.sim.Stats())
	stopProfile := env.profile(stack.name)
	defer stopProfile()
	samplePostgres := func() {
		if pgConn != nil {
			res.TemporalPostgres.sample(ctx, pgConn)
			res.StorePostgres.sample(ctx, pgConn)
		}
	}
	res.StatusPoller = sys.startPollerStats(ctx)
	win, err := lagWindow{procs: append([]*processStats{&res.Server}, measured...), more: samplePostgres,
		names: names, lagSample: p.B4LagSample, rng: rand.New(rand.NewPCG(1, 2)), length: p.B4Window}.run(ctx, sys)
	if err != nil {
		return res, err
	}
	start, end := win.start, win.end
	res.WindowSeconds = win.seconds()
	res.QueryErrors += win.queryErrors
	res.StatusPoller.end(ctx, sys)
	stopProfile()
	if len(res.WorkerProcs) > 0 {
		res.WorkerProc = sumProcesses(fmt.Sprintf("%d ordersync worker processes, summed", len(res.WorkerProcs)), res.WorkerProcs)
	}
	if res.PartitionsPolled, err = partitionsPolled(ctx, sys.client, p.B4Queue); err != nil {
		res.Note = joinNote(res.Note, "partitions: "+err.Error())
	}
	res.Pages = totalPages(sys.sim.Stats()) - pagesBefore
	if res.Slices, err = sys.countSlices(ctx, start, end); err != nil {
		res.Note = joinNote(res.Note, "count slices: "+err.Error())
	}
	res.SlicesPerSecond = float64(res.Slices) / res.WindowSeconds
	if res.Slices > 0 {
		res.ServerCPUPerSlice = res.Server.CPUCores * res.WindowSeconds / float64(res.Slices) * 1000
		res.WorkerCPUPerSlice = res.WorkerProc.CPUCores * res.WindowSeconds / float64(res.Slices) * 1000
		if res.TemporalPostgres != nil {
			perSlice := func(cores float64) float64 { return cores * res.WindowSeconds / float64(res.Slices) * 1000 }
			res.ServerProcessCPUPerSlice = res.ServerCPUPerSlice
			res.TemporalPostgresCPUPerSlice = perSlice(res.TemporalPostgres.CPUCores)
			res.StorePostgresCPUPerSlice = perSlice(res.StorePostgres.CPUCores)
			res.ServerCPUPerSlice += res.TemporalPostgresCPUPerSlice
		}
	}
	res.LagSamples = len(win.lags)
	res.LagP50, res.LagP99, res.LagMax = win.quantiles()
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
	resp, err := s.client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: s.namespace, Query: q})
	if err != nil {
		return 0, err
	}
	return resp.GetCount(), nil
}

// runScalePostgres runs B4 on the PostgreSQL stack ("b4pg"), or skips it,
// saying why, when no PostgreSQL is at hand.
func runScalePostgres(ctx context.Context, env *benchEnv, p *params) (scaleResult, error) {
	pg, why := pgStackFromEnv(ctx, p.B4PGWorkers)
	if pg == nil {
		env.logf("B4PG: SKIPPED: %s", why)
		return scaleResult{Platforms: p.B4Platforms, Skipped: why}, nil
	}
	return runScale(ctx, env, p, scaleStack{name: "b4pg", postgres: pg})
}

// printScale prints a B4 row: the dev server's or the PostgreSQL stack's.
func printScale(w io.Writer, name string, b *scaleResult) {
	if b == nil {
		return
	}
	if b.Skipped != "" {
		fmt.Fprintf(w, "%s\t%d platforms\tSKIPPED: %s\t\t-\n", name, b.Platforms, b.Skipped)
		return
	}
	iv, _ := time.ParseDuration(b.Settings.Interval)
	setting := fmt.Sprintf("%d platforms, %s intervals, task queue %q (%d partitions polled), %s; stack: %s",
		b.Platforms, b.Settings.Interval, b.Settings.SharedQueue, b.PartitionsPolled, b.Worker, b.Stack)
	if b.TemporalPostgres != nil { // its stack names the worker processes
		setting = fmt.Sprintf("%d platforms, %s intervals, task queue %q (%d partitions polled); stack: %s",
			b.Platforms, b.Settings.Interval, b.Settings.SharedQueue, b.PartitionsPolled, b.Stack)
	}
	// The RSS target is per worker process.
	workerRSS := max(b.WorkerProc.RSSMaxMiB, b.WorkerProc.PeakRSSMiB)
	workers := fmt.Sprintf("worker RSS %.0f MiB (peak %.0f), %.2f cores", b.WorkerProc.RSSMeanMiB, b.WorkerProc.PeakRSSMiB, b.WorkerProc.CPUCores)
	if len(b.WorkerProcs) > 0 {
		workerRSS = 0
		var rss []string
		for _, p := range b.WorkerProcs {
			workerRSS = max(workerRSS, p.RSSMaxMiB, p.PeakRSSMiB)
			rss = append(rss, fmt.Sprintf("%.0f", p.RSSMeanMiB))
		}
		workers = fmt.Sprintf("worker RSS %s MiB (peak of one %.0f), %.2f cores in all", strings.Join(rss, " + "), workerRSS, b.WorkerProc.CPUCores)
	}
	server := fmt.Sprintf("server RSS %.0f MiB (peak %.0f), %.2f cores, %.0f ms of server CPU per slice",
		b.Server.RSSMeanMiB, b.Server.PeakRSSMiB, b.Server.CPUCores, b.ServerCPUPerSlice)
	if b.TemporalPostgres != nil {
		server = fmt.Sprintf("server process RSS %.0f MiB (peak %.0f), %.2f cores + its PostgreSQL backends %.2f cores: %.0f ms of server CPU per slice (%.0f process + %.0f PostgreSQL); store's PostgreSQL backends %.2f cores, %.0f ms per slice",
			b.Server.RSSMeanMiB, b.Server.PeakRSSMiB, b.Server.CPUCores, b.TemporalPostgres.CPUCores,
			b.ServerCPUPerSlice, b.ServerProcessCPUPerSlice, b.TemporalPostgresCPUPerSlice, b.StorePostgres.CPUCores, b.StorePostgresCPUPerSlice)
		if b.Driver != nil {
			server += fmt.Sprintf("; simulator + driver %.2f cores (inside the dev server's number)", b.Driver.CPUCores)
		}
		server += note(joinNote(b.TemporalPostgres.Note, b.StorePostgres.Note))
	}
	result := fmt.Sprintf("lag p50 %.0fs, p99 %.0fs (%d samples); %.1f slices/s (%.1f needed); %s; %s",
		b.LagP50, b.LagP99, b.LagSamples, b.SlicesPerSecond, float64(b.Platforms)/iv.Seconds(), workers, server)
	result += b.StatusPoller.summary() + note(b.Note)
	// Issue 18: p99 lag within 1.5 intervals (90 s at 60 s intervals).
	target := 1.5 * iv.Seconds()
	fmt.Fprintf(w, "%s\t%s\t%s\tp99 lag <= %.0fs, worker RSS <= 512 MiB\t%s\n", name, setting, result, target,
		yes(b.Note == "" && b.LagSamples > 0 && b.LagP99 <= target && workerRSS <= 512))
}
