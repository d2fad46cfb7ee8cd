// Command ordersync-bench measures ordersync end to end on one machine: an
// embedded Temporal server, the platform simulator and a SQLite store, all
// started by this program. It runs these cases and prints a table:
//
//	B1 backfill      90 days of history over 10 shops, against a direct loop
//	                 (same connector and store code, no Temporal)
//	B2 rate-limited  the simulator limits each shop to R requests/s
//	B3 freshness     steady state: update visible at the platform -> in the store
//	B4 scale         1,000 platforms with 60 s intervals on one worker process
//	B4PG             B4 on the PostgreSQL stack, 3 worker processes (not in
//	                 the default set: -cases b4pg, `make bench-cluster`)
//	B5 fleet         5,000 platforms with 10-minute intervals on one worker process
//	B6 quota         an Amazon-shaped platform at its documented quota (0.0167/s)
//	B7 bulk          a 90-day, 50,000-order Shopify backfill, bulk query vs paged
//	                 GraphQL (-cases b7; not in the default set)
//	B8 delivery      change feed -> webhook receiver / JetStream: changes/s
//	                 and commit-to-confirmation lag (-cases b8; delivery.go)
//	B9 fairness      one huge and 20 small accounts on one task queue: how
//	                 long the small ones wait, with fairness keys and without
//	                 (-cases b9; not in the default set; fairness.go)
//	B10 registry     100,000 registered accounts, one worker process: add,
//	                 first slice, remove, list, status, apply, worker memory
//	                 (-cases b10; not in the default set; registry.go)
//	B11 webhooks     Shopify accounts with webhooks and hybrid pacing (polling
//	                 every 15 minutes while live) beside accounts polled every
//	                 minute: update -> confirmed by a webhook destination, and
//	                 platform requests per order (-cases b11; not in the
//	                 default set: about 17 minutes; webhooks.go)
//	B12 cost         issue 29's B9, cost per account: Temporal actions,
//	                 history events and server + PostgreSQL CPU per caught-up
//	                 live window, empty and busy, child workflow per window
//	                 (before) against the inline path (after), and the
//	                 projection per 1,000 accounts a month (-cases b12 or
//	                 cost; not in the default set: about 12 minutes; cost.go)
//	B13 fleet-prod   issue 29's B10: 20,000 active accounts at 10-minute
//	                 intervals plus 80,000 paused, on the PostgreSQL stack
//	                 with several worker processes following the registry
//	                 (-cases b13; not in the default set: about 30 minutes;
//	                 `make bench-fleet`; fleet_prod.go)
//
// Results go to bench/results/<timestamp>.json and latest.json with the
// machine's description and every parameter. `make bench` runs it; see
// docs/performance.md for what each number means.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ordersync/ordersync/internal/gctune"
)

// benchEnv is what every case shares: where to put files, how to log and
// profile, and the options of this run.
type benchEnv struct {
	work        string
	profileDir  string
	serverDB    string
	workerBin   string
	caseTimeout time.Duration
	start       time.Time
	gcPercent   int
}

func (e *benchEnv) caseDir(name string) string { return filepath.Join(e.work, name) }

func (e *benchEnv) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
}

// profile starts a CPU profile of this process for one case when
// -cpuprofile is set; the returned function stops it and writes a heap
// profile beside it.
func (e *benchEnv) profile(name string) func() {
	if e.profileDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(e.profileDir, 0o755); err != nil {
		e.logf("profile: %v", err)
		return func() {}
	}
	f, err := os.Create(filepath.Join(e.profileDir, name+".pprof"))
	if err != nil {
		e.logf("profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		e.logf("profile: %v", err)
		f.Close()
		return func() {}
	}
	// Cases stop it at the end of their window and again by defer; the
	// heap profile is the window's end, so only the first call counts.
	var once sync.Once
	return func() { once.Do(func() { stopProfile(e, f, name) }) }
}

// stopProfile ends the CPU profile in f and writes the live heap beside it:
// its size and how dense it is in pointers set what each garbage
// collection costs.
func stopProfile(e *benchEnv, f *os.File, name string) {
	pprof.StopCPUProfile()
	f.Close()
	h, err := os.Create(filepath.Join(e.profileDir, name+".heap.pprof"))
	if err != nil {
		e.logf("heap profile: %v", err)
		return
	}
	defer h.Close()
	runtime.GC()
	if err := pprof.WriteHeapProfile(h); err != nil {
		e.logf("heap profile: %v", err)
	}
}

func main() {
	// The benchmark process embeds what `ordersync dev` does, and the
	// direct loop runs in it too: both get the binary's GC setting.
	gcPercent, err := gctune.Apply()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ordersync-bench:", err)
	}
	var (
		out      = flag.String("out", "bench/results", "directory for the JSON results")
		cases    = flag.String("cases", "b1,b2,b3,b4,b5,b6,b8", "cases to run, comma-separated")
		work     = flag.String("work", "", "directory for databases and logs (default: a temporary directory, removed afterwards)")
		workerB  = flag.String("ordersync", "bin/ordersync", "ordersync binary: B2 and B4 run `ordersync worker` as a separate process (empty: the worker runs in this process)")
		profDir  = flag.String("cpuprofile", "", "write a CPU profile of this process per case into this directory")
		serverDB = flag.String("server-db", "file", "embedded Temporal server database: file (like `ordersync dev`) or memory")
		timeout  = flag.Duration("case-timeout", 6*time.Minute, "give up on a case after this long")
	)
	var p params
	p.register(flag.CommandLine)
	var dp deliveryParams
	dp.register(flag.CommandLine)
	var fp fairnessParams
	fp.register(flag.CommandLine)
	var rp registryParams
	rp.register(flag.CommandLine)
	var wp webhooksParams
	wp.register(flag.CommandLine)
	var cp costParams
	cp.register(flag.CommandLine)
	var fpp fleetProdParams
	fpp.register(flag.CommandLine)
	flag.Parse()

	env := &benchEnv{gcPercent: gcPercent, profileDir: *profDir, serverDB: *serverDB, workerBin: *workerB, caseTimeout: *timeout, start: time.Now()}
	if *work == "" {
		dir, err := os.MkdirTemp("", "ordersync-bench-")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(dir)
		env.work = dir
	} else {
		env.work = *work
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	slog.SetDefault(discardLogger())

	if env.workerBin != "" {
		if _, err := os.Stat(env.workerBin); err != nil {
			fatal(fmt.Errorf("worker binary: %w (build it with `make build`, or pass -ordersync= to run the worker in this process)", err))
		}
	}
	rep := newReport(p, env)
	failed := 0
	failure := func(name string, err error) string {
		failed++
		env.logf("%s: %v", name, err)
		return "error: " + err.Error()
	}
	want := map[string]bool{}
	for _, c := range strings.Split(*cases, ",") {
		want[strings.TrimSpace(strings.ToLower(c))] = true
	}
	// B6 sends a request every few seconds (time-scaled) or every minute
	// (the real quota) for minutes on end: both runs go in the background,
	// server and worker as child processes, while the other cases run, and
	// are collected at the end.
	var b6Real, b6Scaled func() (*quotaRun, error)
	if want["b6"] && p.B6RealWindow > 0 {
		b6Real = runInBackground(func() (quotaRun, error) {
			return runQuota(ctx, env, &p, "real", 1, p.B6RealWindow)
		})
	}
	if want["b6"] && p.B6Scale > 0 {
		b6Scaled = runInBackground(func() (quotaRun, error) {
			return runQuota(ctx, env, &p, "scaled", p.B6Scale, p.B6ScaledWindow)
		})
	}
	if want["b1"] {
		for _, iv := range p.b1Intervals() {
			s := p.b1Settings(iv)
			r, err := runBackfill(ctx, env, backfillParams{Shops: p.B1Shops, OrdersPerShop: p.B1OrdersPerShop,
				History: p.B1History, HistoryText: p.B1History.String(), UpdateSpread: "24h", MaxUpdates: 3, Settings: s})
			if err != nil {
				r.Note = failure("B1 "+iv, err)
			}
			rep.B1 = append(rep.B1, r)
		}
	}
	if want["b2"] {
		r, err := runRateLimited(ctx, env, &p)
		if err != nil {
			r.Note = failure("B2", err)
		}
		rep.B2 = &r
	}
	if want["b3"] {
		r, err := runFreshness(ctx, env, &p)
		if err != nil {
			r.Note = failure("B3", err)
		}
		rep.B3 = &r
	}
	if want["b4"] {
		r, err := runScale(ctx, env, &p, scaleStack{name: "b4"})
		if err != nil {
			r.Note = failure("B4", err)
		}
		rep.B4 = &r
	}
	if want["b4pg"] {
		r, err := runScalePostgres(ctx, env, &p)
		if err != nil {
			r.Note = failure("B4 on PostgreSQL", err)
		}
		rep.B4PG = &r
	}
	if want["b5"] {
		r, err := runFleet(ctx, env, &p)
		if err != nil {
			r.Note = failure("B5", err)
		}
		rep.B5 = &r
	}
	if want["b8"] || want["delivery"] {
		r, err := runDelivery(ctx, env, &dp)
		if err != nil {
			failure("B8", err)
		}
		rep.B8 = &r
	}
	if want["b6"] {
		rep.B6 = &quotaResult{}
		env.logf("B6: waiting for the runs in the background")
		if b6Scaled != nil {
			r, err := b6Scaled()
			if err != nil {
				r.Note = failure("B6 time-scaled", err)
			}
			rep.B6.Scaled = r
		}
		if b6Real != nil {
			r, err := b6Real()
			if err != nil {
				r.Note = failure("B6 real quota", err)
			}
			rep.B6.Real = r
		}
	}
	var bulk *bulkResult
	if want["b7"] || want["bulk"] {
		r, err := runBulkBench(ctx, env)
		if err != nil {
			r.Note = failure("B7", err)
		}
		bulk = &r
	}
	var fair *fairnessResult
	if want["b9"] || want["fairness"] {
		r, err := runFairness(ctx, env, &fp)
		if err != nil {
			failure("B9", err)
		}
		fair = &r
	}
	var registry *registryResult
	if want["b10"] || want["registry"] {
		r, err := runRegistry(ctx, env, &rp)
		if err != nil {
			r.Note = failure("B10", err)
		}
		registry = &r
	}
	var hooks *webhooksResult
	if want["b11"] || want["webhooks"] {
		r, err := runWebhooksBench(ctx, env, &wp)
		if err != nil {
			r.Note = failure("B11", err)
		}
		hooks = &r
	}
	var cost *costResult
	if want["b12"] || want["cost"] {
		r, err := runCost(ctx, env, &cp)
		if err != nil {
			r.Note = failure("B12", err)
		}
		cost = &r
	}
	var fleetProd *fleetProdResult
	if want["b13"] || want["fleet-prod"] {
		r, err := runFleetProd(ctx, env, &fpp)
		if err != nil {
			r.Note = joinNote(r.Note, failure("B13", err))
		}
		fleetProd = &r
	}
	rep.finish()
	// B9 to B13 alone write only their own files: latest.json keeps
	// the last run of the other cases.
	onlyFairness := len(want) > 0
	for c := range want {
		onlyFairness = onlyFairness && (c == "b9" || c == "fairness" || c == "b10" || c == "registry" || c == "b11" || c == "webhooks" || c == "b12" || c == "cost" || c == "b13" || c == "fleet-prod")
	}
	if hooks != nil {
		printWebhooks(os.Stdout, *hooks)
		if err := writeWebhooks(*out, *hooks); err != nil {
			fatal(err)
		}
	}
	if cost != nil {
		printCost(os.Stdout, *cost)
		if err := writeCost(*out, *cost); err != nil {
			fatal(err)
		}
	}
	if fleetProd != nil {
		printFleetProd(os.Stdout, *fleetProd)
		if err := writeFleetProd(*out, *fleetProd); err != nil {
			fatal(err)
		}
	}
	if registry != nil {
		printRegistry(os.Stdout, *registry)
		if err := writeRegistry(*out, *registry); err != nil {
			fatal(err)
		}
	}
	if !onlyFairness {
		rep.printTable(os.Stdout)
	}
	if fair != nil {
		printFairness(os.Stdout, *fair)
		if err := writeFairness(*out, *fair); err != nil {
			fatal(err)
		}
	}
	if bulk != nil {
		if err := printBulk(os.Stdout, *bulk); err != nil {
			fatal(err)
		}
	}
	if !onlyFairness {
		if err := rep.write(*out); err != nil {
			fatal(err)
		}
	}
	if failed > 0 {
		// Missed targets are results; a case that could not run is a failure.
		fmt.Fprintf(os.Stderr, "ordersync-bench: %d case(s) failed to run\n", failed)
		if *work == "" {
			os.RemoveAll(env.work)
		}
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "ordersync-bench:", err)
	os.Exit(1)
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// quietLogger silences the Temporal SDK's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any)        {}
func (quietLogger) Info(string, ...any)         {}
func (quietLogger) Warn(msg string, kv ...any)  { sdkLog("WARN", msg, kv) }
func (quietLogger) Error(msg string, kv ...any) { sdkLog("ERROR", msg, kv) }

func sdkLog(level, msg string, kv []any) {
	if os.Getenv("ORDERSYNC_BENCH_VERBOSE") != "" {
		fmt.Fprintln(os.Stderr, append([]any{level, msg}, kv...)...)
	}
}
