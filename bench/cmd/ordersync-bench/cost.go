package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/cluster"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
)

// B12 cost per account (issue 29's B9; b9 and b10 were taken by fairness
// and the registry): what a caught-up account's live windows cost the
// Temporal server, the thing Temporal Cloud bills (actions) and a
// self-hosted cluster pays for (server and PostgreSQL CPU), for the two
// live paths side by side in one run:
//
//   - before: `live_windows: workflows`, every live window a child Slice
//     workflow (the path of every release so far);
//   - after: `live_windows: inline`, the cursor fetches a settled live
//     window itself through a local activity and starts a child only when
//     that fails or the window needs more than its page budget.
//
// Each variant runs an EMPTY window (shops with no orders) and a BUSY one
// (an order a second, a page or two per window). The four groups run one
// after another on one server, so every count of a phase is that phase's
// alone: a group's cursors start, catch up, run a warm-up, are measured
// over whole intervals, and are terminated before the next group starts.
// The server's own `action` counter (go.temporal.io/server's telemetry
// interceptor, the metric Temporal's docs point self-hosted users to for
// estimating Cloud actions) is scraped at both ends of the measured
// interval; history events are counted from the histories of the group's
// workflows (event times inside the interval); CPU is the server process's
// and its PostgreSQL backends' from /proc. The worker runs without
// /metrics: its status poller queries every cursor every 5 s, which would
// be billed as actions and charged to the live path here.

// costParams size B12; its flags are registered beside the others.
type costParams struct {
	Accounts int           `json:"accounts_per_group"`
	Interval time.Duration `json:"interval_ns"`
	Settle   time.Duration `json:"settle_ns"`
	Overlap  time.Duration `json:"overlap_ns"`
	BusyRate float64       `json:"busy_orders_per_second"`
	PageSize int           `json:"page_size"`
	Warmup   time.Duration `json:"warmup_ns"`
	Windows  int           `json:"windows_per_account"`
	Idle     time.Duration `json:"idle_ns"`
	// Price is Temporal Cloud's list price per million actions (USD);
	// PriceSource says where and when it was read.
	Price       float64 `json:"price_per_million_actions_usd"`
	PriceSource string  `json:"price_source"`
}

// Temporal Cloud's Pay-As-You-Go price for the first 5M actions of a month
// (the Developer plan's at every volume; Business and up fall in tiers to
// $25 per million above 100M), read on 2026-11-26 from
// https://docs.temporal.io/cloud/pricing (temporalio/documentation,
// docs/evaluate/cloud/pricing.mdx).
const (
	cloudPricePerMillion = 50.0
	cloudPriceSource     = "https://docs.temporal.io/cloud/pricing, read 2026-11-26: \"Actions pricing starts at $50 per million Actions\" (first 5M; volume tiers down to $25 above 100M on Business and up)"
)

func (p *costParams) register(fs *flag.FlagSet) {
	fs.IntVar(&p.Accounts, "b12-accounts", 20, "B12: accounts per group (4 groups: before/after x empty/busy)")
	fs.DurationVar(&p.Interval, "b12-interval", 10*time.Second, "B12: interval of every account")
	fs.DurationVar(&p.Settle, "b12-settle", 2*time.Second, "B12: settle")
	fs.DurationVar(&p.Overlap, "b12-overlap", 2*time.Second, "B12: overlap")
	fs.Float64Var(&p.BusyRate, "b12-busy-rate", 1, "B12: new orders per second per busy shop")
	fs.IntVar(&p.PageSize, "b12-page-size", 10, "B12: page size (a busy window is a page or two)")
	fs.DurationVar(&p.Warmup, "b12-warmup", 20*time.Second, "B12: time between the catch-up and the measured interval")
	fs.IntVar(&p.Windows, "b12-windows", 12, "B12: measured intervals per account (the measured time is this many intervals)")
	fs.DurationVar(&p.Idle, "b12-idle", 30*time.Second, "B12: idle baseline: the server with its worker and no cursor")
	fs.Float64Var(&p.Price, "b12-price", cloudPricePerMillion, "B12: USD per million actions for the projection (Temporal Cloud list price)")
	p.PriceSource = cloudPriceSource
}

// Windows a month per account at the projection's intervals (30 days).
const (
	windowsPerMonth1m  = 43_200
	windowsPerMonth10m = 4_320
)

// costVariant is one live path.
type costVariant struct {
	Name        string // before, after
	LiveWindows string // the platforms' live_windows
}

var costVariants = []costVariant{{"before", "workflows"}, {"after", "inline"}}

var costLoads = []string{"empty", "busy"}

// costPhase is one group's measurement.
type costPhase struct {
	Variant     string `json:"variant"`
	LiveWindows string `json:"live_windows"`
	// LiveWindowsSet is false when this build's config did not know the
	// setting (the platforms file then left it out).
	LiveWindowsSet bool    `json:"live_windows_set"`
	Load           string  `json:"load"`
	Accounts       int     `json:"accounts"`
	From           string  `json:"from"`
	To             string  `json:"to"`
	Seconds        float64 `json:"seconds"`
	// Windows are the live windows the watermarks passed in the interval
	// (sum over the accounts of the advance / interval).
	Windows         int64 `json:"windows"`
	SlicesCompleted int64 `json:"slices_completed"`
	Pages           int64 `json:"pages"`
	OrdersFetched   int64 `json:"orders_fetched"`
	// Actions are the server's `action` counter over the interval, this
	// namespace, without the individual command_RecordMarker* (billed as
	// one command_BatchMarkers per task) and without the benchmark's own
	// status queries at both ends (BenchQueries, grpc_QueryWorkflow).
	Actions       float64            `json:"actions"`
	ActionsByType map[string]float64 `json:"actions_by_type"`
	BenchQueries  float64            `json:"bench_queries"`
	// Events are the history events of the group's workflows with event
	// times in the interval; EventsByType the main kinds.
	Events       int64            `json:"history_events"`
	EventsByType map[string]int64 `json:"history_events_by_type"`
	// CursorEvents are the part in the cursors' histories (the rest are
	// the slices' and the count reconciliations'): they set how soon a
	// cursor continues as new.
	CursorEvents int64 `json:"cursor_history_events"`
	// ChildSlices are slice workflows the cursors started in the interval.
	ChildSlices int64 `json:"child_slices_started"`
	// CPU seconds over the interval: the Temporal server process, the
	// PostgreSQL backends of its databases (0 without PostgreSQL), the
	// worker process.
	ServerCPU   float64 `json:"server_cpu_seconds"`
	PostgresCPU float64 `json:"postgres_cpu_seconds"`
	WorkerCPU   float64 `json:"worker_cpu_seconds"`

	ActionsPerWindow float64 `json:"actions_per_window"`
	EventsPerWindow  float64 `json:"history_events_per_window"`
	PagesPerWindow   float64 `json:"pages_per_window"`
	// Per window, ms; Net subtracts the idle baseline (the server and its
	// PostgreSQL with the worker polling and no cursor) over the interval.
	ServerMsPerWindow         float64 `json:"server_cpu_ms_per_window"`
	PostgresMsPerWindow       float64 `json:"postgres_cpu_ms_per_window"`
	ServerPostgresNetMsWindow float64 `json:"server_postgres_net_cpu_ms_per_window"`
	WorkerMsPerWindow         float64 `json:"worker_cpu_ms_per_window"`
	// The projection: actions per account per month and USD per 1,000
	// accounts per month, at 1-minute and 10-minute intervals.
	ActionsPerMonth1m     float64 `json:"actions_per_account_month_1m"`
	ActionsPerMonth10m    float64 `json:"actions_per_account_month_10m"`
	USDPer1000Accounts1m  float64 `json:"usd_per_1000_accounts_month_1m"`
	USDPer1000Accounts10m float64 `json:"usd_per_1000_accounts_month_10m"`
	Note                  string  `json:"note,omitempty"`
}

// costRatio is before / after for one load.
type costRatio struct {
	Load           string  `json:"load"`
	Actions        float64 `json:"actions"`
	Events         float64 `json:"history_events"`
	ServerCPU      float64 `json:"server_cpu"`
	ServerPostgres float64 `json:"server_postgres_net_cpu"`
}

// costIdle is the idle baseline.
type costIdle struct {
	Seconds       float64 `json:"seconds"`
	ServerCores   float64 `json:"server_cpu_cores"`
	PostgresCores float64 `json:"postgres_cpu_cores"`
	Actions       float64 `json:"actions"`
}

// costResult is B12's result file.
type costResult struct {
	Started time.Time   `json:"started"`
	Machine machine     `json:"machine"`
	Params  costParams  `json:"params"`
	Stack   string      `json:"stack"`
	Idle    costIdle    `json:"idle"`
	Phases  []costPhase `json:"phases"`
	Ratios  []costRatio `json:"ratios_before_over_after"`
	Seconds float64     `json:"seconds"`
	Note    string      `json:"note,omitempty"`
}

// costPlatforms is the platforms file: every group's shops on the
// simulator, each group with its live path (when the build knows the
// setting). Cursors start a minute back, so each catches up in a few
// windows.
func costPlatforms(p *costParams, groups map[string]costVariant, setting bool) func(url string) ([]byte, error) {
	return func(url string) ([]byte, error) {
		var b bytes.Buffer
		fmt.Fprintf(&b, `default:
  kind: sim
  credentials: {env: %s}
  start: "-1m"
  interval: %s
  overlap: %s
  settle: %s
  timeout: 10s
  retries: 10
  retry_interval: 200ms
  retry_backoff: 2
  max_retry_interval: 5s
  concurrency: 2
  rate_limit: {rps: 1000, burst: 1000}
  page_size: %d
  max_pages: 100
platforms:
`, tokenEnv, p.Interval, p.Overlap, p.Settle, p.PageSize)
		names := make([]string, 0, len(groups))
		for n := range groups {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "  %s:\n    endpoint: %q\n", n, url+"/shops/"+n)
			if setting {
				fmt.Fprintf(&b, "    live_windows: %s\n", groups[n].LiveWindows)
			}
		}
		return b.Bytes(), nil
	}
}

// liveWindowsKnown says whether this build's platforms file takes
// live_windows (the setting the inline path came with).
func liveWindowsKnown() bool {
	_, err := config.Parse([]byte("default:\n  kind: sim\n  credentials: {env: X}\n  start: \"-1m\"\n  interval: 1h\n  live_windows: inline\nplatforms:\n  probe:\n    endpoint: \"http://127.0.0.1:1/shops/probe\"\n"))
	return err == nil || !strings.Contains(err.Error(), "live_windows")
}

func costGroupPrefix(v costVariant, load string) string { return "cost-" + v.Name + "-" + load + "-" }

func runCost(ctx context.Context, env *benchEnv, p *costParams) (costResult, error) {
	start := time.Now()
	res := costResult{Started: start.UTC(), Machine: describeMachine(env.gcPercent), Params: *p}
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	if env.workerBin == "" {
		return res, fmt.Errorf("B12 runs the worker as its own process: it needs -ordersync")
	}
	setting := liveWindowsKnown()
	if !setting {
		res.Note = "this build's config does not know live_windows: both variants ran the default path (one child workflow per window)"
	}
	groups := map[string]costVariant{}
	simCfg := sim.DefaultConfig()
	simCfg.Seed = 29
	simCfg.History, simCfg.HistoryOrders = 0, 0
	simCfg.LiveRate, simCfg.MaxUpdates, simCfg.Late = 0, 0, 0
	simCfg.RateLimit, simCfg.Faults = sim.RateLimit{}, sim.Faults{}
	for _, v := range costVariants {
		for _, load := range costLoads {
			for i := range p.Accounts {
				n := fmt.Sprintf("%s%02d", costGroupPrefix(v, load), i)
				groups[n] = v
				sc := sim.ShopConfig{Name: n, Token: shopToken}
				if load == "busy" {
					sc.LiveRate = p.BusyRate
				}
				simCfg.Shops = append(simCfg.Shops, sc)
			}
		}
	}
	o := systemOptions{sim: simCfg, serverDB: env.serverDB, childBin: env.workerBin, platformsFile: costPlatforms(p, groups, setting)}
	pgOpts, why := pgStackFromEnv(ctx, 1)
	if pgOpts != nil {
		o.postgres = pgOpts
		res.Stack = pgOpts.describe()
	} else {
		res.Stack = "embedded Temporal server (SQLite) in the benchmark process, one `ordersync worker` process; server CPU is the benchmark process's (simulator included), no PostgreSQL (" + why + ")"
	}
	sys, err := startSystem(ctx, env.caseDir("b12"), o)
	if err != nil {
		return res, err
	}
	defer sys.stop()

	// The system's workers serve /metrics, whose status poller queries
	// every cursor every few seconds: replace them by one without.
	for _, c := range sys.children {
		_ = c.Process.Signal(os.Interrupt)
		_ = c.Wait()
	}
	address, metricsURL, serverPID := "", "", os.Getpid()
	if sys.pg != nil {
		address, serverPID = sys.pg.server.address, sys.pg.server.cmd.Process.Pid
		_, port, _ := net.SplitHostPort(address)
		fp, _ := strconv.Atoi(port)
		metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", cluster.StandardPorts(fp).Metrics)
	} else {
		address = sys.srv.FrontendAddress()
		metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", sys.srv.Options().Ports.Metrics)
	}
	worker, err := startWorkerProcess(env.workerBin, sys.dir, address, sys.namespace, sys.storeDSN(), sys.platformsPath(), "")
	if err != nil {
		return res, err
	}
	defer worker.stop()
	m := &costMeter{sys: sys, metricsURL: metricsURL, serverPID: serverPID, workerPID: worker.cmd.Process.Pid}
	if sys.pg != nil {
		if m.pgConn, err = pgx.Connect(ctx, sys.pg.adminDSN); err != nil {
			return res, fmt.Errorf("connect to PostgreSQL for its backends' CPU: %w", err)
		}
		defer m.pgConn.Close(context.Background())
		m.pgDatabases = []string{sys.pg.temporal.Database, sys.pg.temporal.VisibilityDatabase}
	}
	if _, err := m.actions(ctx); err != nil {
		return res, fmt.Errorf("the Temporal server's metrics at %s: %w", metricsURL, err)
	}
	env.logf("B12: %s; %d accounts per group, interval %s, busy %g orders/s, page size %d; idle baseline %s",
		res.Stack, p.Accounts, p.Interval, p.BusyRate, p.PageSize, p.Idle)

	// Idle baseline: the worker polls, nothing runs.
	if err := sleep(ctx, 5*time.Second); err != nil {
		return res, err
	}
	s0, err := m.snapshot(ctx)
	if err != nil {
		return res, err
	}
	if err := m.sleepSampling(ctx, p.Idle); err != nil {
		return res, err
	}
	s1, err := m.snapshot(ctx)
	if err != nil {
		return res, err
	}
	d := s1.at.Sub(s0.at).Seconds()
	res.Idle = costIdle{Seconds: d, ServerCores: (s1.server - s0.server) / d, PostgresCores: (s1.postgres - s0.postgres) / d,
		Actions: sumValues(billable(diffActions(s1.actions, s0.actions)))}

	for _, v := range costVariants {
		for _, load := range costLoads {
			ph, err := runCostPhase(ctx, env, p, m, v, load, setting, res.Idle)
			if err != nil {
				return res, fmt.Errorf("%s/%s: %w", v.Name, load, err)
			}
			res.Phases = append(res.Phases, ph)
		}
	}
	for _, load := range costLoads {
		var b, a *costPhase
		for i := range res.Phases {
			ph := &res.Phases[i]
			if ph.Load == load && ph.Variant == "before" {
				b = ph
			}
			if ph.Load == load && ph.Variant == "after" {
				a = ph
			}
		}
		if a == nil || b == nil {
			continue
		}
		res.Ratios = append(res.Ratios, costRatio{Load: load, Actions: ratio(b.ActionsPerWindow, a.ActionsPerWindow),
			Events: ratio(b.EventsPerWindow, a.EventsPerWindow), ServerCPU: ratio(b.ServerMsPerWindow, a.ServerMsPerWindow),
			ServerPostgres: ratio(b.ServerPostgresNetMsWindow, a.ServerPostgresNetMsWindow)})
	}
	return res, nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// costMeter reads what B12 counts at a moment.
type costMeter struct {
	sys         *system
	metricsURL  string
	serverPID   int
	workerPID   int
	pgConn      *pgx.Conn
	pgDatabases []string
	pg          *postgresStats
}

type costSnapshot struct {
	at       time.Time
	actions  map[string]float64
	server   float64
	worker   float64
	postgres float64
}

// actions reads the server's action counter of this namespace by type.
func (m *costMeter) actions(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	seen := false
	err := scrapeSeries(ctx, m.metricsURL, func(name, labels string, v float64) {
		if name != "action" && name != "action_total" {
			return
		}
		seen = true
		if labelValue(labels, "namespace") != m.sys.namespace {
			return
		}
		out[labelValue(labels, "action_type")] += v
	})
	if err == nil && !seen {
		// The counter appears at the first action; none yet is zero.
		return out, nil
	}
	return out, err
}

// snapshot reads the counters and CPU now; PostgreSQL's backends are
// sampled into m.pg, which the caller starts with the interval.
func (m *costMeter) snapshot(ctx context.Context) (costSnapshot, error) {
	s := costSnapshot{at: time.Now(), server: procCPU(m.serverPID), worker: procCPU(m.workerPID)}
	var err error
	if s.actions, err = m.actions(ctx); err != nil {
		return s, err
	}
	if m.pgConn != nil {
		if m.pg == nil {
			m.pg = newPostgresStats("Temporal's databases", m.pgDatabases...)
		}
		m.pg.sample(ctx, m.pgConn)
		for pid, c := range m.pg.last {
			s.postgres += c - m.pg.first[pid]
		}
	}
	return s, nil
}

// sleepSampling waits d, sampling PostgreSQL's backends every few seconds
// (a backend that ends between samples loses only its last seconds).
func (m *costMeter) sleepSampling(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if err := sleep(ctx, min(left, 5*time.Second)); err != nil {
			return err
		}
		if m.pgConn != nil && m.pg != nil {
			m.pg.sample(ctx, m.pgConn)
		}
	}
}

func diffActions(b, a map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		if d := v - a[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// billable drops what Temporal does not bill separately: the individual
// markers (one command_BatchMarkers per workflow task carries them).
func billable(by map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range by {
		if strings.HasPrefix(k, "command_RecordMarker") {
			continue
		}
		out[k] = v
	}
	return out
}

func runCostPhase(ctx context.Context, env *benchEnv, p *costParams, m *costMeter, v costVariant, load string, setting bool, idle costIdle) (costPhase, error) {
	ph := costPhase{Variant: v.Name, LiveWindows: v.LiveWindows, LiveWindowsSet: setting, Load: load, Accounts: p.Accounts}
	prefix := costGroupPrefix(v, load)
	var names []string
	var platforms []config.Platform
	for _, pl := range m.sys.file.Platforms {
		if strings.HasPrefix(pl.Name, prefix) {
			names = append(names, pl.Name)
			platforms = append(platforms, pl)
		}
	}
	g := newGroup(8)
	now := time.Now()
	for _, pl := range platforms {
		g.Go(func() error {
			_, err := starter.EnsureCursor(ctx, m.sys.client, pl, now)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return ph, err
	}
	defer terminateGroup(context.Background(), m.sys, prefix)
	// Caught up: every watermark within three intervals and the settle of
	// now (on a loaded machine a slice may take an interval).
	deadline := time.Now().Add(5 * time.Minute)
	for {
		sts, err := costStatuses(ctx, m.sys, names)
		if err != nil && ctx.Err() != nil {
			return ph, err
		}
		behind := ""
		if err != nil {
			behind = err.Error()
		}
		for _, n := range names {
			if behind != "" {
				break
			}
			if st, ok := sts[n]; ok && (!st.CaughtUp || time.Since(st.Watermark) > 3*p.Interval+p.Settle) {
				behind = n + " at " + st.Watermark.Format(time.RFC3339)
			}
		}
		if behind == "" {
			break
		}
		if time.Now().After(deadline) {
			return ph, fmt.Errorf("not caught up within 5 minutes: %s", behind)
		}
		if err := sleep(ctx, 2*time.Second); err != nil {
			return ph, err
		}
	}
	if err := sleep(ctx, p.Warmup); err != nil {
		return ph, err
	}

	m.pg = nil
	s0, err := m.snapshot(ctx)
	if err != nil {
		return ph, err
	}
	st0, err := costStatuses(ctx, m.sys, names)
	if err != nil {
		return ph, err
	}
	measured := time.Duration(p.Windows) * p.Interval
	if err := m.sleepSampling(ctx, measured-time.Since(s0.at)); err != nil {
		return ph, err
	}
	st1, err := costStatuses(ctx, m.sys, names)
	if err != nil {
		return ph, err
	}
	s1, err := m.snapshot(ctx)
	if err != nil {
		return ph, err
	}
	ph.From, ph.To = s0.at.UTC().Format(time.RFC3339Nano), s1.at.UTC().Format(time.RFC3339Nano)
	ph.Seconds = s1.at.Sub(s0.at).Seconds()
	for _, n := range names {
		a, b := st0[n], st1[n]
		ph.Windows += int64(b.Watermark.Sub(a.Watermark) / p.Interval)
		ph.SlicesCompleted += b.Counts.SlicesCompleted - a.Counts.SlicesCompleted
		ph.Pages += b.Counts.Pages - a.Counts.Pages
		ph.OrdersFetched += b.Counts.OrdersFetched - a.Counts.OrdersFetched
		if b.LastError != "" && ph.Note == "" {
			ph.Note = "last error of " + n + ": " + clip(b.LastError, 200)
		}
	}
	ph.ActionsByType = billable(diffActions(s1.actions, s0.actions))
	ph.BenchQueries = ph.ActionsByType["grpc_QueryWorkflow"]
	delete(ph.ActionsByType, "grpc_QueryWorkflow")
	ph.Actions = sumValues(ph.ActionsByType)
	ph.ServerCPU, ph.WorkerCPU, ph.PostgresCPU = s1.server-s0.server, s1.worker-s0.worker, s1.postgres-s0.postgres
	if err := countEvents(ctx, m.sys, prefix, s0.at, s1.at, &ph); err != nil {
		return ph, err
	}
	if ph.Windows > 0 {
		w := float64(ph.Windows)
		ph.ActionsPerWindow = ph.Actions / w
		ph.EventsPerWindow = float64(ph.Events) / w
		ph.PagesPerWindow = float64(ph.Pages) / w
		ph.ServerMsPerWindow = 1000 * ph.ServerCPU / w
		ph.PostgresMsPerWindow = 1000 * ph.PostgresCPU / w
		ph.WorkerMsPerWindow = 1000 * ph.WorkerCPU / w
		ph.ServerPostgresNetMsWindow = 1000 * (ph.ServerCPU + ph.PostgresCPU - (idle.ServerCores+idle.PostgresCores)*ph.Seconds) / w
		ph.ActionsPerMonth1m = ph.ActionsPerWindow * windowsPerMonth1m
		ph.ActionsPerMonth10m = ph.ActionsPerWindow * windowsPerMonth10m
		ph.USDPer1000Accounts1m = ph.ActionsPerMonth1m * 1000 / 1e6 * p.Price
		ph.USDPer1000Accounts10m = ph.ActionsPerMonth10m * 1000 / 1e6 * p.Price
	}
	env.logf("B12 %s (live_windows %s) %s: %d windows in %.0fs, %.2f actions, %.1f events, %.1f+%.1f ms server+PostgreSQL CPU per window; %d child slices",
		v.Name, v.LiveWindows, load, ph.Windows, ph.Seconds, ph.ActionsPerWindow, ph.EventsPerWindow, ph.ServerMsPerWindow, ph.PostgresMsPerWindow, ph.ChildSlices)
	return ph, nil
}

// costStatuses asks every cursor of names its status, asking again (up to
// three more times) those whose query failed: on a loaded machine a query
// behind a long workflow task can time out.
func costStatuses(ctx context.Context, s *system, names []string) (map[string]api.CursorStatus, error) {
	out := map[string]api.CursorStatus{}
	pending := names
	var err error
	for range 4 {
		var sts map[string]api.CursorStatus
		sts, err = s.statuses(ctx, pending)
		var still []string
		for _, n := range pending {
			if st, ok := sts[n]; ok {
				out[n] = st
			} else {
				still = append(still, n)
			}
		}
		if pending = still; len(pending) == 0 || ctx.Err() != nil {
			break
		}
	}
	if len(pending) > 0 {
		return out, err
	}
	return out, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// execution is one run of a workflow.
type execution struct{ id, run string }

// groupExecutions lists the namespace's workflows (open and closed) whose
// IDs name one of the group's platforms.
func groupExecutions(ctx context.Context, s *system, prefix string, open bool) ([]execution, error) {
	var out []execution
	req := &workflowservice.ListWorkflowExecutionsRequest{Namespace: s.namespace, PageSize: 1000}
	if open {
		req.Query = "ExecutionStatus = 'Running'"
	}
	for {
		resp, err := s.client.ListWorkflow(ctx, req)
		if err != nil {
			return out, err
		}
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			if strings.Contains(id, "/"+prefix) {
				out = append(out, execution{id, e.GetExecution().GetRunId()})
			}
		}
		if req.NextPageToken = resp.GetNextPageToken(); len(req.NextPageToken) == 0 {
			return out, nil
		}
	}
}

// countEvents counts the history events of the group's workflows whose
// times fall in [from, to).
func countEvents(ctx context.Context, s *system, prefix string, from, to time.Time, ph *costPhase) error {
	execs, err := groupExecutions(ctx, s, prefix, false)
	if err != nil {
		return err
	}
	ph.EventsByType = map[string]int64{}
	for _, e := range execs {
		it := s.client.GetWorkflowHistory(ctx, e.id, e.run, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return fmt.Errorf("history of %s: %w", e.id, err)
			}
			at := ev.GetEventTime().AsTime()
			if at.Before(from) || !at.Before(to) {
				continue
			}
			ph.Events++
			if strings.HasPrefix(e.id, "cursor/") {
				ph.CursorEvents++
			}
			t := strings.TrimPrefix(ev.GetEventType().String(), "EVENT_TYPE_")
			ph.EventsByType[t]++
			if ev.GetEventType() == enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED &&
				strings.HasPrefix(ev.GetStartChildWorkflowExecutionInitiatedEventAttributes().GetWorkflowId(), "slice/") {
				ph.ChildSlices++
			}
		}
	}
	return nil
}

// terminateGroup ends the group's running workflows (its cursors, their
// slices, its count reconciliations), so the next group's counts are its
// own.
func terminateGroup(ctx context.Context, s *system, prefix string) {
	for range 5 {
		execs, err := groupExecutions(ctx, s, prefix, true)
		if err != nil || len(execs) == 0 {
			return
		}
		for _, e := range execs {
			_ = s.client.TerminateWorkflow(ctx, e.id, e.run, "B12: the group's measurement is over")
		}
		_ = sleep(ctx, 2*time.Second)
	}
}

// printCost prints B12's table.
func printCost(w io.Writer, r costResult) {
	p := r.Params
	fmt.Fprintf(w, "\nB12 cost per account (issue 29's B9): caught-up live windows, %d accounts per group, interval %s, busy = %g orders/s at page size %d; %s\n",
		p.Accounts, p.Interval, p.BusyRate, p.PageSize, r.Stack)
	fmt.Fprintf(w, "idle baseline: server %.3f cores, PostgreSQL %.3f cores, %.0f actions in %.0fs\n", r.Idle.ServerCores, r.Idle.PostgresCores, r.Idle.Actions, r.Idle.Seconds)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tload\twindows\tpages/window\tactions/window\tevents/window\tserver ms/window\tPostgreSQL ms/window\tnet server+PG ms/window\tchild slices\tactions/account/month 1m | 10m\tUSD/1,000 accounts/month 1m | 10m")
	for _, ph := range r.Phases {
		fmt.Fprintf(tw, "%s (%s)\t%s\t%d\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.0f | %.0f\t%.0f | %.0f\n",
			ph.Variant, ph.LiveWindows, ph.Load, ph.Windows, ph.PagesPerWindow, ph.ActionsPerWindow, ph.EventsPerWindow, ph.ServerMsPerWindow,
			ph.PostgresMsPerWindow, ph.ServerPostgresNetMsWindow, ph.ChildSlices, ph.ActionsPerMonth1m, ph.ActionsPerMonth10m,
			ph.USDPer1000Accounts1m, ph.USDPer1000Accounts10m)
	}
	tw.Flush()
	for _, ra := range r.Ratios {
		fmt.Fprintf(w, "before/after, %s windows: actions %.2fx, history events %.2fx, server CPU %.2fx, net server+PostgreSQL CPU %.2fx (target: actions >= 2x)\n",
			ra.Load, ra.Actions, ra.Events, ra.ServerCPU, ra.ServerPostgres)
	}
	for _, ph := range r.Phases {
		types := make([]string, 0, len(ph.ActionsByType))
		for k := range ph.ActionsByType {
			types = append(types, k)
		}
		sort.Strings(types)
		var parts []string
		for _, k := range types {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, ph.ActionsByType[k]/max(1, float64(ph.Windows))))
		}
		fmt.Fprintf(w, "actions per window, %s %s: %s; history events per window %.1f (cursor %.1f)%s\n", ph.Variant, ph.Load, strings.Join(parts, ", "),
			ph.EventsPerWindow, float64(ph.CursorEvents)/max(1, float64(ph.Windows)), note(ph.Note))
	}
	fmt.Fprintf(w, "price: $%g per million actions (%s)\n", p.Price, p.PriceSource)
	if r.Note != "" {
		fmt.Fprintf(w, "note: %s\n", r.Note)
	}
}

// writeCost writes the result as cost-<start>.json beside the others (not
// part of latest.json, like B9 to B11).
func writeCost(dir string, r costResult) error {
	name := "cost-" + r.Started.Format("20060102T150405Z") + ".json"
	fmt.Fprintf(os.Stderr, "B12 results: %s\n", filepath.Join(dir, name))
	return writeResultFile(dir, name, r)
}
