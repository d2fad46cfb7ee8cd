package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

// B13 fleet-prod (issue 29's B10): a middleman's fleet on the
// production-shaped stack. The Temporal server on PostgreSQL as its own
// process, a PostgreSQL order store, several `ordersync worker` processes
// that follow the account registry alone (no platforms file), N active
// accounts at 10-minute intervals, each a simulator shop, added through
// accounts.Service as `ordersync platform add` and the HTTP API do, plus M
// accounts registered paused (a bulk registry write, as B10's fill). It
// measures the time to bring the fleet up, then over a window: each
// sampled account's lag (now minus its watermark), every process's memory
// and CPU (server, workers, the PostgreSQL backends, from /proc), the
// databases' growth, and what PostgreSQL was asked (pg_stat_database).
// Long, so not in the default set: -cases b13 (or fleet-prod), `make
// bench-fleet`.

type fleetProdParams struct {
	Active   int           `json:"active_accounts"`
	Paused   int           `json:"paused_accounts"`
	Interval time.Duration `json:"interval_ns"`
	Settle   time.Duration `json:"settle_ns"`
	LiveRate float64       `json:"live_orders_per_second_per_shop"`
	Workers  int           `json:"worker_processes"`
	// AddConcurrency is how many accounts are added at once.
	AddConcurrency int           `json:"add_concurrency"`
	Warmup         time.Duration `json:"warmup_ns"`
	Window         time.Duration `json:"window_ns"`
	LagSample      int           `json:"lag_sample"`
	Queue          string        `json:"task_queue"`
	// LiveWindows is the accounts' live_windows ("": the default).
	LiveWindows string `json:"live_windows,omitempty"`
	// MetricsQueryRate, when not 0, is the workers'
	// ORDERSYNC_METRICS_QUERY_RATE (0: the production default).
	MetricsQueryRate float64 `json:"metrics_query_rate,omitempty"`
}

func (p *fleetProdParams) register(fs *flag.FlagSet) {
	fs.IntVar(&p.Active, "b13-active", 20000, "B13: active accounts (one simulator shop each)")
	fs.IntVar(&p.Paused, "b13-paused", 80000, "B13: accounts registered paused (a bulk registry write, no cursor)")
	fs.DurationVar(&p.Interval, "b13-interval", 10*time.Minute, "B13: slice interval")
	fs.DurationVar(&p.Settle, "b13-settle", 30*time.Second, "B13: settle")
	fs.Float64Var(&p.LiveRate, "b13-live-rate", 0.005, "B13: new orders per second per shop (B5's)")
	fs.IntVar(&p.Workers, "b13-workers", 3, "B13: `ordersync worker` processes")
	fs.IntVar(&p.AddConcurrency, "b13-add-concurrency", 16, "B13: accounts added at once")
	fs.DurationVar(&p.Warmup, "b13-warmup", time.Minute, "B13: time after the last add before measuring")
	fs.DurationVar(&p.Window, "b13-window", 10*time.Minute, "B13: measurement window (one interval: every cursor's phase comes round)")
	fs.IntVar(&p.LagSample, "b13-lag-sample", 100, "B13: active accounts whose lag is sampled every 10s")
	fs.StringVar(&p.Queue, "b13-task-queue", "orders-fleet", "B13: the task queue every account shares")
	fs.StringVar(&p.LiveWindows, "b13-live-windows", "", "B13: the accounts' live_windows, inline or workflows (empty: the default)")
	fs.Float64Var(&p.MetricsQueryRate, "b13-metrics-query-rate", 0, "B13: the workers' ORDERSYNC_METRICS_QUERY_RATE (0: the default)")
}

// lagPoint is one 10-second sample of the lags.
type lagPoint struct {
	AtSeconds float64 `json:"at_seconds"`
	N         int     `json:"n"`
	P50       float64 `json:"p50_seconds"`
	P99       float64 `json:"p99_seconds"`
	Max       float64 `json:"max_seconds"`
}

// dbStats are one database's size and what PostgreSQL did for it over the
// window (pg_stat_database, per second).
type dbStats struct {
	Database   string  `json:"database"`
	What       string  `json:"what"`
	BytesStart int64   `json:"bytes_at_window_start"`
	BytesEnd   int64   `json:"bytes_at_window_end"`
	GrowthDay  float64 `json:"growth_mib_per_day"`
	XactPerSec float64 `json:"transactions_per_second"`
	InsPerSec  float64 `json:"rows_inserted_per_second"`
	UpdPerSec  float64 `json:"rows_updated_per_second"`
	DelPerSec  float64 `json:"rows_deleted_per_second"`
	FetchedSec float64 `json:"rows_fetched_per_second"`
	BlksReadS  float64 `json:"blocks_read_per_second"`
	BlksHitS   float64 `json:"blocks_hit_per_second"`
	start      pgCounters
}

type pgCounters struct{ xact, ins, upd, del, fetched, read, hit int64 }

type fleetProdResult struct {
	Started  time.Time        `json:"started"`
	Seconds  float64          `json:"seconds"`
	Machine  machine          `json:"machine"`
	Params   fleetProdParams  `json:"params"`
	Stack    string           `json:"stack"`
	Settings platformSettings `json:"settings"`
	Skipped  string           `json:"skipped,omitempty"`
	Note     string           `json:"note,omitempty"`

	// Bringing the fleet up.
	StackStartSeconds float64 `json:"stack_start_seconds"`
	// FleetUpSeconds is from the first registry write until every paused
	// account is registered and every active one added (its cursor
	// started); the two run side by side.
	FleetUpSeconds      float64   `json:"fleet_up_seconds"`
	PausedFillSeconds   float64   `json:"paused_fill_seconds"`
	PausedPutsPerSecond float64   `json:"paused_puts_per_second"`
	ActiveAddSeconds    float64   `json:"active_add_seconds"`
	AddsPerSecond       float64   `json:"active_adds_per_second"`
	AddMS               []float64 `json:"add_ms_p50_p99_max"`
	// EveryShopFetchedSeconds is from the first add until every active
	// shop had served a page (each cursor's first slice waits for its
	// phase in the interval, so it is at least about one interval); -1
	// when not by the window's end.
	EveryShopFetchedSeconds float64 `json:"every_shop_fetched_seconds"`

	// The window.
	WindowSeconds float64    `json:"window_seconds"`
	LagSamples    int        `json:"lag_samples"`
	LagP50        float64    `json:"lag_p50_seconds"`
	LagP99        float64    `json:"lag_p99_seconds"`
	LagMax        float64    `json:"lag_max_seconds"`
	LagP99Halves  [2]float64 `json:"lag_p99_first_second_half_seconds"`
	LagSeries     []lagPoint `json:"lag_series"`
	// TargetLag is interval + settle + 60 s (issue 18's B5 target).
	TargetLag    float64 `json:"target_lag_p99_seconds"`
	OverTarget   int     `json:"lag_samples_over_target"`
	QueryErrors  int     `json:"lag_query_errors"`
	LastQueryErr string  `json:"last_lag_query_error,omitempty"`

	// Fetches are the simulator's pages served in the window: a caught-up
	// window of a quiet shop is one page, so one per slice.
	Fetches          int64   `json:"fetches_in_window"`
	FetchesPerSecond float64 `json:"fetches_per_second"`
	NeededPerSecond  float64 `json:"fetches_per_second_needed"`
	RateLimited      int64   `json:"rate_limited_in_window"`
	OrdersServed     int64   `json:"orders_served_in_window"`
	// SliceWorkflows are Slice child workflows closed in the window
	// (visibility); the inline live path runs caught-up windows without one.
	SliceWorkflows int64 `json:"slice_workflows_completed_in_window"`

	Server           processStats   `json:"server_process"`
	WorkerProcs      []processStats `json:"worker_processes"`
	Workers          processStats   `json:"workers_summed"`
	WorkerHeapMiB    []float64      `json:"worker_go_heap_inuse_mib"`
	Driver           processStats   `json:"driver_process"`
	TemporalPostgres *postgresStats `json:"temporal_postgres_backends"`
	StorePostgres    *postgresStats `json:"store_postgres_backends"`
	// AllPostgres is every process of the PostgreSQL server (backends of
	// every database, WAL writer, checkpointer, autovacuum): this run's
	// and anything else the machine's other work asks of it.
	AllPostgres *postgresStats `json:"all_postgres_processes"`
	// MachineBusyCores is every process's CPU on the machine in the window
	// (/proc/stat), others' work included; OtherCores what this run's
	// processes (server, workers, driver, every PostgreSQL process) do not
	// account for.
	MachineBusyCores float64 `json:"machine_busy_cores"`
	OtherCores       float64 `json:"other_cores"`

	// CPU milliseconds per fetch (per slice).
	CPUPerFetch map[string]float64 `json:"cpu_ms_per_fetch"`

	Databases    []*dbStats   `json:"databases"`
	StoreOrders  int64        `json:"store_orders_at_end"`
	OrdersBytes  int64        `json:"store_orders_tables_bytes_at_end"`
	BytesPerOrd  float64      `json:"store_bytes_per_order"`
	StatusPoller *pollerStats `json:"status_poller,omitempty"`
	// ServerOps are the Temporal server's request counters over the window.
	ServerOps  []serverOp `json:"server_requests_per_second,omitempty"`
	LoadBefore float64    `json:"load_average_before"`
	LoadAfter  float64    `json:"load_average_after"`
}

func runFleetProd(ctx context.Context, env *benchEnv, p *fleetProdParams) (r fleetProdResult, err error) {
	r = fleetProdResult{Started: time.Now().UTC(), Params: *p, Machine: describeMachine(env.gcPercent), LoadBefore: loadAverage(),
		TargetLag: (p.Interval + p.Settle + time.Minute).Seconds(), NeededPerSecond: float64(p.Active) / p.Interval.Seconds()}
	defer func() { r.Seconds = time.Since(r.Started).Seconds() }()
	if env.workerBin == "" {
		return r, fmt.Errorf("B13 runs the server and the workers as processes: it needs the ordersync binary (-ordersync)")
	}
	if p.Active < 1 || p.Interval < time.Minute || p.Workers < 1 {
		return r, fmt.Errorf("B13 needs at least 1 active account, 1 worker and an interval of at least 1m (got %d, %d, %s)", p.Active, p.Workers, p.Interval)
	}
	pg, why := pgStackFromEnv(ctx, p.Workers)
	if pg == nil {
		r.Skipped = why
		return r, fmt.Errorf("B13: %s", why)
	}
	r.Stack = pg.describe()
	if p.MetricsQueryRate > 0 {
		os.Setenv("ORDERSYNC_METRICS_QUERY_RATE", strconv.FormatFloat(p.MetricsQueryRate, 'f', -1, 64))
	}
	now := time.Now().UTC()
	simCfg := fleetWorld(29, p.Active, p.LiveRate, p.Interval, now)
	r.Settings = platformSettings{
		Start: now.Truncate(time.Second), Interval: p.Interval.String(), Overlap: min(time.Minute, p.Interval/4).String(), Settle: p.Settle.String(),
		Timeout: "30s", Concurrency: 2, RPS: 2, Burst: 4, PageSize: 100, MaxPages: 100, SharedQueue: p.Queue,
	}
	// The platforms file holds one account: the template every registered
	// account is copied from. The workers never see it (registryOnly).
	opts := systemOptions{sim: simCfg, settings: r.Settings, childBin: env.workerBin, postgres: pg, registryOnly: true,
		platformsFile: func(url string) ([]byte, error) {
			return platformsYAML(r.Settings, url, []string{"template"})
		}}
	env.logf("B13: %d active + %d paused accounts, %s intervals, %d worker processes; %s", p.Active, p.Paused, p.Interval, p.Workers, r.Stack)
	t0 := time.Now()
	sys, err := startSystem(ctx, env.caseDir("b13"), opts)
	if err != nil {
		return r, err
	}
	defer sys.stop()
	r.StackStartSeconds = time.Since(t0).Seconds()
	reg, ok := store.RegistryOf(sys.store)
	if !ok {
		return r, fmt.Errorf("the PostgreSQL store keeps no registry")
	}
	svc := &accounts.Service{Registry: reg, Engine: starter.Engine{Client: sys.client}}
	template := sys.file.Platforms[0]
	template.LiveWindows = p.LiveWindows
	if ve := template.Validate(); ve != nil {
		return r, fmt.Errorf("-b13-live-windows %q: %w", p.LiveWindows, ve)
	}

	// The paused accounts: registered, no cursor, while the active ones
	// are added (the bring-up is both). Every Put waits for the registry's
	// revision row, so writes are serial whatever the concurrency; four
	// writers keep one waiting while another commits.
	upBegan := time.Now()
	fillDone := make(chan error, 1)
	go func() {
		var filled atomic.Int64
		fill := newGroup(4)
		for i := range p.Paused {
			fill.Go(func() error {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				q := template
				q.Name = fmt.Sprintf("paused-%06d", i)
				e, err := accounts.PlatformEntry(q, accounts.Paused)
				if err != nil {
					return err
				}
				if _, err := reg.Put(ctx, e, 0); err != nil {
					return fmt.Errorf("register paused account %s: %w", q.Name, err)
				}
				if n := filled.Add(1); n%20000 == 0 {
					env.logf("B13: %d paused accounts registered", n)
				}
				return nil
			})
		}
		err := fill.Wait()
		r.PausedFillSeconds = time.Since(upBegan).Seconds()
		fillDone <- err
	}()

	// The active accounts, added as `platform add` does: registry, then
	// the cursor. Each begins at its add, so none has history to catch up.
	names := shopNames(simCfg)
	addsBegan := time.Now()
	fetchedAll := watchFirstFetches(ctx, sys.sim, addsBegan)
	addMS := make([]float64, len(names))
	var added atomic.Int64
	g := newGroup(max(1, p.AddConcurrency))
	for i, name := range names {
		g.Go(func() error {
			q := template
			q.Name = name
			q.Endpoint = sys.simSrv.URL + "/shops/" + name
			q.Start = time.Now().UTC().Format(time.RFC3339)
			began := time.Now()
			if _, err := svc.AddPlatform(ctx, q, accounts.AddOptions{}); err != nil {
				return fmt.Errorf("add %s: %w", name, err)
			}
			addMS[i] = ms(time.Since(began))
			if n := added.Add(1); n%2000 == 0 {
				env.logf("B13: %d active accounts added", n)
			}
			return nil
		})
	}
	addErr := g.Wait()
	r.ActiveAddSeconds = time.Since(addsBegan).Seconds()
	if err := <-fillDone; err != nil {
		return r, err
	}
	if addErr != nil {
		return r, addErr
	}
	r.FleetUpSeconds = time.Since(upBegan).Seconds()
	if p.Paused > 0 {
		r.PausedPutsPerSecond = float64(p.Paused) / r.PausedFillSeconds
	}
	r.AddsPerSecond = float64(p.Active) / r.ActiveAddSeconds
	sort.Float64s(addMS)
	r.AddMS = []float64{quantile(addMS, 0.5), quantile(addMS, 0.99), addMS[len(addMS)-1]}
	env.logf("B13: %d paused accounts registered in %.0fs; %d active accounts added in %.0fs (%.0f/s; add p50 %.0f ms, p99 %.0f ms); warm-up %s, then measuring for %s",
		p.Paused, r.PausedFillSeconds, p.Active, r.ActiveAddSeconds, r.AddsPerSecond, r.AddMS[0], r.AddMS[1], p.Warmup, p.Window)
	if err := sleep(ctx, p.Warmup); err != nil {
		return r, err
	}

	if err := r.measure(ctx, env, sys, names); err != nil {
		return r, err
	}
	r.EveryShopFetchedSeconds = fetchedAll()
	r.LoadAfter = loadAverage()
	return r, nil
}

// watchFirstFetches notes when every shop of the simulator has served a
// page; the returned function gives the seconds from began (-1: not yet).
func watchFirstFetches(ctx context.Context, s *sim.Simulator, began time.Time) func() float64 {
	var at atomic.Int64 // nanoseconds after began; 0 until then
	go func() {
		for ctx.Err() == nil {
			st := s.Stats()
			all := len(st.Shops) > 0
			for _, sh := range st.Shops {
				if sh.Pages == 0 {
					all = false
					break
				}
			}
			if all {
				at.Store(int64(time.Since(began)))
				return
			}
			if sleep(ctx, 5*time.Second) != nil {
				return
			}
		}
	}()
	return func() float64 {
		if v := at.Load(); v > 0 {
			return time.Duration(v).Seconds()
		}
		return -1
	}
}

// measure runs the window: every 10 s it samples the processes' memory
// and the PostgreSQL processes' CPU, and asks LagSample random active
// accounts for their watermark.
func (r *fleetProdResult) measure(ctx context.Context, env *benchEnv, sys *system, names []string) error {
	p := r.Params
	pgConn, err := pgx.Connect(ctx, sys.pg.adminDSN)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL to measure it: %w", err)
	}
	defer pgConn.Close(context.Background())

	r.Server = processStats{PID: sys.pg.server.cmd.Process.Pid, What: "ordersync cluster --server-only: the Temporal server on PostgreSQL"}
	r.WorkerProcs = make([]processStats, len(sys.children))
	procs := []*processStats{&r.Server}
	for i, c := range sys.children {
		r.WorkerProcs[i] = processStats{PID: c.Process.Pid, What: fmt.Sprintf("ordersync worker %d", i+1)}
		procs = append(procs, &r.WorkerProcs[i])
	}
	r.Driver = processStats{PID: os.Getpid(), What: "benchmark process: simulator + lag queries + driver"}
	procs = append(procs, &r.Driver)
	r.TemporalPostgres = newPostgresStats("PostgreSQL backends of Temporal's databases", sys.pg.temporal.Database, sys.pg.temporal.VisibilityDatabase)
	r.StorePostgres = newPostgresStats("PostgreSQL backends of the order store's database", sys.pg.storeDB)
	r.AllPostgres = newPostgresStats("every process of the PostgreSQL server (shared with the machine's other work)")
	r.Databases = []*dbStats{
		{Database: sys.pg.temporal.Database, What: "Temporal persistence"},
		{Database: sys.pg.temporal.VisibilityDatabase, What: "Temporal visibility"},
		{Database: sys.pg.storeDB, What: "order store (orders, lines, change feed, registry)"},
	}
	postmaster := postmasterPID(ctx, pgConn)
	samplePG := func() {
		r.TemporalPostgres.sample(ctx, pgConn)
		r.StorePostgres.sample(ctx, pgConn)
		if postmaster > 0 {
			r.AllPostgres.record(time.Now(), processTree(postmaster))
		} else {
			r.AllPostgres.Note = "the PostgreSQL server's processes are not on this host"
		}
	}

	if err := r.readDatabases(ctx, pgConn, true); err != nil {
		return err
	}
	simBefore := sys.sim.Stats()
	serverURL, haveServerURL := serverMetricsURL(sys.pg.server.address)
	var opsBefore map[opKey]float64
	if haveServerURL {
		if opsBefore, err = scrapeServerOps(ctx, serverURL); err != nil {
			r.Note = joinNote(r.Note, "server metrics: "+err.Error())
			haveServerURL = false
		}
	}
	busyBefore := machineBusySeconds()
	r.StatusPoller = sys.startPollerStats(ctx)
	stopProfile := env.profile("b13")
	defer stopProfile()
	for _, pr := range procs {
		pr.startCPU()
	}
	samplePG()
	rng := rand.New(rand.NewPCG(13, 29))
	start := time.Now()
	var lags []float64
	for time.Since(start) < p.Window {
		for _, pr := range procs {
			pr.sample()
		}
		samplePG()
		at := time.Now()
		var got []float64
		got, err := sampleLags(ctx, sys, rng, names, p.LagSample, at, nil)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.QueryErrors++
			r.LastQueryErr = clip(err.Error(), 300)
		}
		if len(got) > 0 {
			sort.Float64s(got)
			r.LagSeries = append(r.LagSeries, lagPoint{AtSeconds: at.Sub(start).Seconds(), N: len(got),
				P50: quantile(got, 0.5), P99: quantile(got, 0.99), Max: got[len(got)-1]})
			lags = append(lags, got...)
		}
		if len(r.LagSeries)%6 == 0 && len(r.LagSeries) > 0 {
			lp := r.LagSeries[len(r.LagSeries)-1]
			env.logf("B13: %.0fs into the window: lag p50 %.0fs, p99 %.0fs; server %.0f MiB", lp.AtSeconds, lp.P50, lp.P99, r.Server.RSSMaxMiB)
		}
		if err := sleep(ctx, 10*time.Second-time.Since(at)); err != nil {
			return err
		}
	}
	end := time.Now()
	r.WindowSeconds = end.Sub(start).Seconds()
	for _, pr := range procs {
		pr.endCPU()
		pr.sample()
	}
	samplePG()
	busy := machineBusySeconds() - busyBefore
	stopProfile()
	simAfter := sys.sim.Stats()
	if haveServerURL {
		if opsAfter, err := scrapeServerOps(ctx, serverURL); err != nil {
			r.Note = joinNote(r.Note, "server metrics: "+err.Error())
		} else {
			r.ServerOps = serverOpRates(opsBefore, opsAfter, end.Sub(start).Seconds())
		}
	}
	r.StatusPoller.end(ctx, sys)
	if err := r.readDatabases(ctx, pgConn, false); err != nil {
		r.Note = joinNote(r.Note, "database stats: "+err.Error())
	}
	r.countStore(ctx, sys)
	for _, u := range sys.metricsURLs {
		h, err := heapInUse(ctx, u)
		if err != nil {
			r.Note = joinNote(r.Note, err.Error())
		}
		r.WorkerHeapMiB = append(r.WorkerHeapMiB, h)
	}

	r.Workers = sumProcesses(fmt.Sprintf("%d ordersync worker processes, summed", len(r.WorkerProcs)), r.WorkerProcs)
	r.MachineBusyCores = busy / r.WindowSeconds
	r.OtherCores = r.MachineBusyCores - r.Server.CPUCores - r.Workers.CPUCores - r.Driver.CPUCores - r.AllPostgres.CPUCores
	for name, a := range simAfter.Shops {
		b := simBefore.Shops[name]
		r.Fetches += a.Pages - b.Pages
		r.RateLimited += a.RateLimited - b.RateLimited
		r.OrdersServed += a.OrdersServed - b.OrdersServed
	}
	r.FetchesPerSecond = float64(r.Fetches) / r.WindowSeconds
	if r.SliceWorkflows, err = sys.countSlices(ctx, start, end); err != nil {
		r.Note = joinNote(r.Note, "count slices: "+err.Error())
	}
	if r.Fetches > 0 {
		per := func(cores float64) float64 { return cores * r.WindowSeconds / float64(r.Fetches) * 1000 }
		r.CPUPerFetch = map[string]float64{
			"server_process":      per(r.Server.CPUCores),
			"temporal_postgres":   per(r.TemporalPostgres.CPUCores),
			"workers":             per(r.Workers.CPUCores),
			"store_postgres":      per(r.StorePostgres.CPUCores),
			"all_postgres":        per(r.AllPostgres.CPUCores),
			"stack_total":         per(r.Server.CPUCores + r.Workers.CPUCores + r.AllPostgres.CPUCores),
			"driver_and_sim":      per(r.Driver.CPUCores),
			"machine_busy":        per(r.MachineBusyCores),
			"server_and_backends": per(r.Server.CPUCores + r.TemporalPostgres.CPUCores),
		}
	}
	sort.Float64s(lags)
	r.LagSamples = len(lags)
	if len(lags) > 0 {
		r.LagP50, r.LagP99, r.LagMax = quantile(lags, 0.5), quantile(lags, 0.99), lags[len(lags)-1]
		for _, l := range lags {
			if l > r.TargetLag {
				r.OverTarget++
			}
		}
	}
	r.LagP99Halves = lagHalves(r.LagSeries, r.WindowSeconds)
	return nil
}

// lagHalves is the p99 of the lags sampled in each half of the window: a
// fleet that falls behind shows a second half above the first.
func lagHalves(series []lagPoint, window float64) [2]float64 {
	var out [2]float64
	for h := range 2 {
		var p99s []float64
		for _, lp := range series {
			if (lp.AtSeconds < window/2) == (h == 0) {
				p99s = append(p99s, lp.P99)
			}
		}
		if len(p99s) > 0 {
			sort.Float64s(p99s)
			out[h] = quantile(p99s, 0.5) // the typical sample's p99
		}
	}
	return out
}

// readDatabases reads the databases' sizes and counters, at the window's
// start (first) or end.
func (r *fleetProdResult) readDatabases(ctx context.Context, conn *pgx.Conn, first bool) error {
	for _, d := range r.Databases {
		var size int64
		var c pgCounters
		err := conn.QueryRow(ctx, `SELECT pg_database_size(datname), xact_commit + xact_rollback, tup_inserted, tup_updated,
			tup_deleted, tup_fetched, blks_read, blks_hit FROM pg_stat_database WHERE datname = $1`, d.Database).
			Scan(&size, &c.xact, &c.ins, &c.upd, &c.del, &c.fetched, &c.read, &c.hit)
		if err != nil {
			return fmt.Errorf("database %s: %w", d.Database, err)
		}
		if first {
			d.BytesStart, d.start = size, c
			continue
		}
		d.BytesEnd = size
		secs := r.WindowSeconds
		if secs <= 0 {
			continue
		}
		rate := func(a, b int64) float64 { return float64(b-a) / secs }
		d.GrowthDay = float64(d.BytesEnd-d.BytesStart) / secs * 86400 / (1 << 20)
		d.XactPerSec, d.InsPerSec, d.UpdPerSec = rate(d.start.xact, c.xact), rate(d.start.ins, c.ins), rate(d.start.upd, c.upd)
		d.DelPerSec, d.FetchedSec = rate(d.start.del, c.del), rate(d.start.fetched, c.fetched)
		d.BlksReadS, d.BlksHitS = rate(d.start.read, c.read), rate(d.start.hit, c.hit)
	}
	return nil
}

// countStore counts the stored orders and the bytes of the order tables.
func (r *fleetProdResult) countStore(ctx context.Context, sys *system) {
	conn, err := pgx.Connect(ctx, sys.storeURL)
	if err != nil {
		r.Note = joinNote(r.Note, "count orders: "+err.Error())
		return
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM orders),
		pg_total_relation_size('orders') + pg_total_relation_size('order_lines') + pg_total_relation_size('changes')`).
		Scan(&r.StoreOrders, &r.OrdersBytes)
	if err != nil {
		r.Note = joinNote(r.Note, "count orders: "+err.Error())
		return
	}
	if r.StoreOrders > 0 {
		r.BytesPerOrd = float64(r.OrdersBytes) / float64(r.StoreOrders)
	}
}

// postmasterPID is the PostgreSQL server's main process: the parent of
// this connection's backend (0 when it is not on this host).
func postmasterPID(ctx context.Context, conn *pgx.Conn) int {
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0
	}
	ppid, _, ok := procParent(backend)
	if !ok {
		return 0
	}
	return ppid
}

// procParent reads a process's parent from /proc/<pid>/stat.
func procParent(pid int) (int, string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}

// processTree is the CPU seconds of root and its children (PostgreSQL's
// processes are all children of the postmaster).
func processTree(root int) map[int]float64 {
	out := map[int]float64{root: procCPU(root)}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procParent(pid); ok && ppid == root {
			out[pid] = procCPU(pid)
		}
	}
	return out
}

// machineBusySeconds is the CPU time every process of the machine has used
// (/proc/stat: all but idle and iowait), in seconds.
func machineBusySeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var busy float64
	for i, v := range f[1:] {
		if i >= 8 { // guest time is inside user already
			break
		}
		x, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		busy += x
	}
	return busy / 100
}

func printFleetProd(w io.Writer, r fleetProdResult) {
	if r.Skipped != "" {
		fmt.Fprintf(w, "B13 fleet-prod\tSKIPPED: %s\n", r.Skipped)
		return
	}
	if r.TemporalPostgres == nil { // it stopped before its window
		fmt.Fprintf(w, "B13 fleet-prod\tdid not reach its window: %s\n", r.Note)
		return
	}
	p := r.Params
	fmt.Fprintf(w, "B13 fleet on the production stack: %d active + %d paused accounts, %s intervals, %d worker processes\n", p.Active, p.Paused, p.Interval, p.Workers)
	fmt.Fprintf(w, "  stack: %s\n", r.Stack)
	fmt.Fprintf(w, "  bring-up: stack %.0fs; fleet up in %.0fs: %d paused registered in %.0fs (%.0f puts/s), beside it %d active added in %.0fs (%.0f/s, add p50 %.0f ms, p99 %.0f ms); every shop fetched %.0fs after the first add\n",
		r.StackStartSeconds, r.FleetUpSeconds, p.Paused, r.PausedFillSeconds, r.PausedPutsPerSecond, p.Active, r.ActiveAddSeconds, r.AddsPerSecond, at(r.AddMS, 0), at(r.AddMS, 1), r.EveryShopFetchedSeconds)
	fmt.Fprintf(w, "  lag: p50 %.0fs, p99 %.0fs, max %.0fs (%d samples over %.0fs; p99 first half %.0fs, second half %.0fs; %d over the %.0fs target; %d query errors)\n",
		r.LagP50, r.LagP99, r.LagMax, r.LagSamples, r.WindowSeconds, r.LagP99Halves[0], r.LagP99Halves[1], r.OverTarget, r.TargetLag, r.QueryErrors)
	fmt.Fprintf(w, "  fetches: %.1f/s (%.1f needed), %d Slice workflows closed, %d rate-limited\n", r.FetchesPerSecond, r.NeededPerSecond, r.SliceWorkflows, r.RateLimited)
	var rss []string
	for i, wp := range r.WorkerProcs {
		rss = append(rss, fmt.Sprintf("%.0f (heap %.0f)", wp.RSSMeanMiB, at(r.WorkerHeapMiB, i)))
	}
	fmt.Fprintf(w, "  memory: server RSS %.0f MiB (peak %.0f); workers RSS %s MiB\n", r.Server.RSSMeanMiB, r.Server.PeakRSSMiB, strings.Join(rss, ", "))
	fmt.Fprintf(w, "  cores: server %.2f, its PostgreSQL backends %.2f, workers %.2f, store backends %.2f, every PostgreSQL process %.2f, simulator + driver %.2f; machine busy %.2f of %d (others %.2f)\n",
		r.Server.CPUCores, r.TemporalPostgres.CPUCores, r.Workers.CPUCores, r.StorePostgres.CPUCores, r.AllPostgres.CPUCores, r.Driver.CPUCores, r.MachineBusyCores, r.Machine.NumCPU, r.OtherCores)
	keys := make([]string, 0, len(r.CPUPerFetch))
	for k := range r.CPUPerFetch {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var per []string
	for _, k := range keys {
		per = append(per, fmt.Sprintf("%s %.1f", k, r.CPUPerFetch[k]))
	}
	fmt.Fprintf(w, "  CPU ms per fetch: %s\n", strings.Join(per, ", "))
	for _, d := range r.Databases {
		fmt.Fprintf(w, "  %s: %.0f -> %.0f MiB (%.0f MiB/day); %.0f xact/s, %.0f ins/s, %.0f upd/s, %.0f del/s, %.0f blocks read/s\n",
			d.What, float64(d.BytesStart)/(1<<20), float64(d.BytesEnd)/(1<<20), d.GrowthDay, d.XactPerSec, d.InsPerSec, d.UpdPerSec, d.DelPerSec, d.BlksReadS)
	}
	fmt.Fprintf(w, "  store: %d orders, %.0f bytes per order (orders + lines + changes)%s\n", r.StoreOrders, r.BytesPerOrd, r.StatusPoller.summary())
	var ops []string
	for _, o := range r.ServerOps[:min(12, len(r.ServerOps))] {
		ops = append(ops, fmt.Sprintf("%s %s %.1f", o.Service, o.Operation, o.PerSecond))
	}
	fmt.Fprintf(w, "  server requests/s: %s\n", strings.Join(ops, ", "))
	if r.Note != "" {
		fmt.Fprintf(w, "  note: %s\n", r.Note)
	}
}

func at(v []float64, i int) float64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

func writeFleetProd(dir string, r fleetProdResult) error {
	name := "fleet-prod-" + r.Started.Format("20060102T150405Z") + ".json"
	fmt.Fprintf(os.Stderr, "B13 results: %s\n", filepath.Join(dir, name))
	return writeResultFile(dir, name, r)
}
