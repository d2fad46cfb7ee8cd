package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
)

// The chaos run: every failure a deployment sees, at once, and then proof
// that no order was lost. docs/reliability.md reports a run's numbers.
//
// Settings that make the faults bite: `timeout` (5s) is below the
// simulator's HangFor (8s), so hangs outlive the activity; the simulator's
// rate limit (6/s, burst 2) is tighter than the platforms' own (20/s, burst
// 8), so requests draw 429s; Late equals the overlap, the most lateness the
// overlap is meant to absorb. Small pages make many requests, so the fault
// rates show in the counts, and busy live slices split (max_pages).
const chaosPlatforms = `
default:
  kind: sim
  start: -3m
  interval: 10s
  overlap: 5s
  settle: 2s
  timeout: 5s
  retries: 10
  retry_interval: 500ms
  retry_backoff: 1.5
  max_retry_interval: 4s
  concurrency: 3
  rate_limit: {rps: 20, burst: 8}
  page_size: 10
  max_pages: 8
  dead_letter_retry: {schedule: [1m]}
platforms:
  chaos-a:
    endpoint: "{{SIM}}/shops/a"
    credentials: {env: ORDERSYNC_E2E_CHAOS_A_TOKEN}
  chaos-b:
    endpoint: "{{SIM}}/shops/b"
    credentials: {env: ORDERSYNC_E2E_CHAOS_B_TOKEN}
    task_queue: orders-chaos-shared
`

// chaosShare is the chaos run's share of the machine while its chaos lasts
// (parallel_test.go): three worker processes, faults, a server restart,
// next to one light test at most.
var chaosShare = share{weight: heavy.weight + light.weight, long: true}

const (
	chaosWorkers  = 3
	chaosOverlap  = 5 * time.Second
	chaosDuration = 75 * time.Second
	// chaosPostgresDuration is shorter: the postgres stack's run adds its
	// minutes to every CI run, and the longer soak is the embedded one's.
	chaosPostgresDuration = 45 * time.Second
)

var chaosShops = map[string]string{"chaos-a": "a", "chaos-b": "b", "chaos-gql": "gql", "chaos-amz": "amz", "chaos-std": "std"}

func chaosSim(seed int64) sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Seed = seed
	cfg.Shops = []sim.ShopConfig{{Name: "a", Token: "chaos-a-token"}, {Name: "b", Token: "chaos-b-token"}}
	cfg.AdminToken = adminToken
	cfg.History = 3 * time.Minute
	cfg.HistoryOrders = 600
	cfg.LiveRate = 4
	cfg.MaxUpdates = 3
	cfg.UpdateSpread = 20 * time.Second
	cfg.Late = chaosOverlap
	cfg.RateLimit = sim.RateLimit{RPS: 6, Burst: 2}
	cfg.Faults = sim.Faults{Err5xx: 0.10, Hang: 0.03, Malformed: 0.02, HangFor: 8 * time.Second}
	return withCurrentAPIShops(cfg)
}

// TestChaosNoLoss runs the system as separate processes (embedded Temporal
// server on a SQLite file, simulator with faults, three `ordersync worker`
// processes sharing one SQLite store), kills workers with SIGKILL at random
// moments and restarts them, stops and restarts the Temporal server once,
// then stops the simulator's changes and checks with `ordersync verify`
// that nothing is missing or stale. ORDERSYNC_CHAOS_DURATION sets how long
// the chaos lasts (`make chaos` soaks for longer), ORDERSYNC_CHAOS_SEED
// replays a run's choices, ORDERSYNC_CHAOS_REPORT=<file> writes the numbers.
func TestChaosNoLoss(t *testing.T) {
	parallel(t, chaosShare)
	testChaos(t, embeddedStack, chaosDuration)
}

// TestChaosNoLossPostgres is the same chaos on the production-shaped stack:
// Temporal on PostgreSQL with 4 task-queue partitions, a PostgreSQL store;
// the server restart stops and starts it on the same databases.
func TestChaosNoLossPostgres(t *testing.T) {
	parallel(t, share{weight: chaosShare.weight, long: true, postgres: true})
	testChaos(t, postgresStack, chaosPostgresDuration)
}

func testChaos(t *testing.T, st stack, defaultDuration time.Duration) {
	if testing.Short() {
		t.Skip("end-to-end: several processes for minutes")
	}
	dur := envDuration(t, "ORDERSYNC_CHAOS_DURATION", defaultDuration)
	seed := time.Now().UnixNano() % 1_000_000_000
	if v := os.Getenv("ORDERSYNC_CHAOS_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, "ORDERSYNC_CHAOS_SEED")
	}
	t.Logf("chaos seed %d (replay the same choices with ORDERSYNC_CHAOS_SEED=%d), chaos for %s on the %s stack", seed, seed, dur, st.name)
	ordersyncBinary(t) // build before the clock starts
	began := time.Now()

	r := startChaos(t, st, seed, dur)
	for i := range chaosWorkers {
		r.startWorker(i)
	}
	r.startCursors()
	r.startDeliveries()

	r.unleash(dur)
	for i := range r.workers {
		if !r.workers[i].alive() {
			r.startWorker(i)
		}
	}
	quiet := r.sim.StopCreating()
	// What is left is catching up at the simulator's rate limit and then
	// waiting out Amazon's 2-minute rule: lighter work, but the smallest
	// Shopify bucket's catch-up (chaos-std) has a deadline and three worker
	// processes, so it keeps a heavy share: another chaos run's chaos does
	// not start beside it (a CI run saw chaos-std miss its deadline so).
	lighten(t, heavy)
	r.logf("simulator stopped creating; nothing changes after %s", quiet.Format(time.RFC3339Nano))
	// Past quiet + overlap every request window covers the settled world.
	// chaos-std (the smallest bucket, full orders) is the last to catch up:
	// about 160 s after quiet on an idle 2-core machine, and a CI machine is
	// busier; the deadline is there to catch a livelock (stop 36's CI saw
	// no progress at all for 3 minutes), not to time the bucket.
	r.waitCaughtUp(quiet.Add(chaosOverlap), 4*time.Minute+dur/4)
	r.awaitDeadLettersRetried(4 * time.Minute)
	r.verifyAll()
	r.verifyDeliveries(2 * time.Minute)
	for _, w := range r.workers {
		w.kill9() // done; a drain would only slow the cleanup down
	}

	r.report.WallTime = time.Since(began).Round(time.Second).String()
	r.report.collectSim(r.sim.Stats())
	b, err := json.MarshalIndent(r.report, "", "  ")
	require.NoError(t, err)
	t.Logf("chaos report:\n%s", b)
	if out := os.Getenv("ORDERSYNC_CHAOS_REPORT"); out != "" {
		require.NoError(t, os.WriteFile(out, append(b, '\n'), 0o644))
	}
	for _, p := range r.report.Platforms {
		require.Zero(t, p.Missing, "%s: missing orders", p.Platform)
		require.Zero(t, p.Stale, "%s: stale orders", p.Platform)
		require.Zero(t, p.VerifyExit, "%s: ordersync verify failed", p.Platform)
		require.Equal(t, p.Truth, p.Checked, "%s: verify must check every order the simulator made", p.Platform)
	}
	require.Positive(t, r.report.Served.Err5xx, "no 5xx served: the chaos did not happen")
	require.Positive(t, r.report.Served.Malformed+r.report.Served.Hang, "no malformed page or hang served")
	require.GreaterOrEqual(t, r.report.WorkerKills, 2, "too few worker kills (is ORDERSYNC_CHAOS_DURATION too short?)")
	require.Equal(t, 1, r.report.ServerRestarts)
	r.requireDelivered()
}

// chaosRun is one chaos run's processes and what it counted.
type chaosRun struct {
	t       *testing.T
	rng     *rand.Rand
	began   time.Time
	server  *restartableServer
	client  client.Client
	sim     *sim.Simulator
	simSrv  *sim.Server
	file    *config.File
	env     []string
	workers []*workerProc
	starts  []int
	report  chaosReport
	dest    *chaosDestinations
}

func startChaos(t *testing.T, st stack, seed int64, dur time.Duration) *chaosRun {
	r := &chaosRun{t: t, rng: rand.New(rand.NewSource(seed)), began: time.Now(), workers: make([]*workerProc, chaosWorkers), starts: make([]int, chaosWorkers)}
	cfg := chaosSim(seed)
	r.report = chaosReport{When: time.Now().UTC().Truncate(time.Second), Stack: st.name, Seed: seed, WorkerProcesses: chaosWorkers,
		FaultRates: cfg.Faults, SimRateLimit: cfg.RateLimit, Late: cfg.Late.String(), Overlap: chaosOverlap.String(),
		ChaosDuration: dur.String()}

	r.server = st.restartable(t)
	var err error
	r.client, err = client.Dial(client.Options{HostPort: r.server.address(), Namespace: st.namespace, Logger: quietLogger{}})
	require.NoError(t, err)
	t.Cleanup(r.client.Close)

	r.sim, err = sim.New(cfg)
	require.NoError(t, err)
	r.simSrv, err = r.sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.simSrv.Close() })

	yaml, currentEnv := withCurrentAPIPlatforms(chaosPlatforms)
	r.dest = startChaosDestinations(t, seed)
	yaml = r.dest.expand(strings.ReplaceAll(yaml, "{{SIM}}", r.simSrv.URL))
	r.file, err = config.Parse([]byte(yaml))
	require.NoError(t, err)
	platformsPath := filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(platformsPath, []byte(yaml), 0o644))
	// One store for every worker process (on SQLite, WAL and a busy
	// timeout make concurrent writers safe).
	r.env = append(st.env(r.server.address(), st.storeDSN(t), platformsPath),
		"ORDERSYNC_SIM_ADMIN_TOKEN="+adminToken,
		"ORDERSYNC_E2E_CHAOS_A_TOKEN=chaos-a-token",
		"ORDERSYNC_E2E_CHAOS_B_TOKEN=chaos-b-token",
	)
	r.env = append(r.env, currentEnv...)
	r.env = append(r.env, r.dest.env...)
	return r
}

func (r *chaosRun) logf(format string, args ...any) {
	r.t.Helper()
	r.t.Logf("%6.1fs  %s", time.Since(r.began).Seconds(), fmt.Sprintf(format, args...))
}

// startWorker starts worker slot i and waits until it polls. A worker
// dials the server once at start, so a start that fails is tried again.
func (r *chaosRun) startWorker(i int) {
	r.t.Helper()
	for try := 0; try < 5; try++ {
		r.starts[i]++
		w := startWorkerProc(r.t, fmt.Sprintf("worker-%d-start-%d", i+1, r.starts[i]), r.env, "--stop-timeout", "5s")
		if w.waitRunning(45 * time.Second) {
			r.workers[i] = w
			r.logf("worker-%d running (pid %d)", i+1, w.cmd.Process.Pid)
			return
		}
		r.logf("worker-%d did not come up, trying again:\n%s", i+1, w.tail(2000))
		w.kill9()
	}
	r.t.Fatalf("worker-%d would not start", i+1)
}

// chaosSlicesPerRun makes the cursors continue as new every few slices,
// so kills and the server restart also hit the hand-over between runs.
const chaosSlicesPerRun = 15

// startCursors starts each platform's cursor as `platform start` does, but
// with a small run cap.
func (r *chaosRun) startCursors() {
	r.t.Helper()
	for _, p := range r.file.Platforms {
		// From the simulator's start, not now: workers that were slow to
		// come up (a loaded machine) must not leave its oldest orders
		// before the cursors' start, where verify still expects them.
		start, err := p.ResolveStart(r.sim.Started())
		require.NoError(r.t, err)
		_, err = r.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
			ID: api.CursorWorkflowID(p.Name), TaskQueue: p.TaskQueue,
			TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.Platform.ValueSet(p.Name)),
		}, api.CursorWorkflowType, api.CursorInput{Platform: p.Settings(), Start: start, MaxSlicesPerRun: chaosSlicesPerRun})
		require.NoError(r.t, err)
	}
}

// between returns a random duration in [lo, hi).
func (r *chaosRun) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Int63n(int64(hi-lo)))
}

// unleash runs the chaos for d: a SIGKILL of a random worker every few
// seconds, each started again after a moment, and one stop and start of
// the Temporal server somewhere in the middle. Gaps are at most d/5 (14s
// for the 75s run), so a short run still kills at least twice.
func (r *chaosRun) unleash(d time.Duration) {
	end := time.Now().Add(d)
	restartAt := time.Now().Add(d/3 + r.between(0, d/3))
	maxGap := max(5*time.Second, min(14*time.Second, d/5))
	for time.Now().Before(end) {
		time.Sleep(min(r.between(4*time.Second, maxGap), time.Until(end)))
		if r.report.ServerRestarts == 0 && time.Now().After(restartAt) {
			r.restartServer()
			continue
		}
		if time.Now().Before(end) {
			r.killOne()
		}
	}
	if r.report.ServerRestarts == 0 {
		r.restartServer()
	}
}

func (r *chaosRun) killOne() {
	i := r.rng.Intn(len(r.workers))
	w := r.workers[i]
	r.logf("kill -9 worker-%d (pid %d)", i+1, w.cmd.Process.Pid)
	w.kill9()
	r.report.WorkerKills++
	time.Sleep(r.between(200*time.Millisecond, 3*time.Second))
	r.startWorker(i)
}

func (r *chaosRun) restartServer() {
	r.logf("stopping the Temporal server")
	r.server.stop()
	down := time.Now()
	time.Sleep(r.between(2*time.Second, 5*time.Second))
	r.server.start()
	r.report.ServerRestarts++
	r.report.ServerDowntime = time.Since(down).Round(100 * time.Millisecond).String()
	r.logf("Temporal server started again on the same database (down %s)", r.report.ServerDowntime)
}

// waitCaughtUp waits until every cursor's watermark reaches target. An
// operator would resume a cursor whose circuit breaker opened; so does this.
func (r *chaosRun) waitCaughtUp(target time.Time, timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	// Every platform is asked in each round, so the log says when each one
	// caught up: the margin to the deadline, platform by platform.
	behind := make([]string, 0, len(r.file.Platforms))
	for _, p := range r.file.Platforms {
		behind = append(behind, p.Name)
	}
	for len(behind) > 0 {
		still := behind[:0]
		for _, name := range behind {
			st, err := tryStatus(r.client, name)
			switch {
			case err == nil && !st.Watermark.Before(target):
				r.logf("%s caught up: watermark %s", name, st.Watermark.Format(time.RFC3339))
				continue
			case err == nil && st.BreakerOpen:
				r.logf("%s: circuit breaker open (%s); resuming", name, st.LastError)
				require.NoError(r.t, r.client.SignalWorkflow(context.Background(), api.CursorWorkflowID(name), "", api.SignalResume, nil))
				r.report.BreakerResumes++
			}
			if time.Now().After(deadline) {
				r.t.Fatalf("%s: watermark did not reach %s within %s; status %+v, error %v", name, target, timeout, st, err)
			}
			still = append(still, name)
		}
		behind = still
		if len(behind) > 0 {
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// awaitDeadLettersRetried waits, without any operator action, until every
// dead-lettered slice has been run again by the dead-letter workflow's
// automatic retry (the chaos platforms retry after 1m, then every minute,
// with the faults still on) and the dead-letter workflows are empty: the
// transient causes of a chaos run heal by themselves (issue 23).
func (r *chaosRun) awaitDeadLettersRetried(timeout time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	for _, p := range r.file.Platforms {
		pr := r.report.platform(p.Name)
		for {
			st, err := tryDeadLetterStatus(r.client, p.Name)
			if err == nil {
				pr.DeadLettered = max(pr.DeadLettered, st.Entries)
				if st.Entries == 0 {
					break
				}
				require.Zero(r.t, st.Waiting, "%s: %d dead letters wait for an operator (a cause that is not transient)", p.Name, st.Waiting)
			}
			require.False(r.t, time.Now().After(deadline), "%s: dead letters left after the automatic retries: %+v (%v)", p.Name, st, err)
			time.Sleep(2 * time.Second)
		}
		pr.Reprocessed = pr.DeadLettered
	}
	r.logf("every dead-letter workflow is empty, by its automatic retries alone")
}

// verifyAll runs `ordersync verify` for each platform, as an operator
// would: the store against the simulator's ground truth, up to the
// watermark. It records the outcome; the test asserts on the report.
func (r *chaosRun) verifyAll() {
	r.t.Helper()
	for _, p := range r.file.Platforms {
		if r.verifyCurrentAPI(p) {
			continue
		}
		code, out, errOut := runOrdersync(r.t, r.env, "verify", "--platform", p.Name, "-o", "json")
		var res struct {
			Report verify.Report `json:"report"`
			Until  time.Time     `json:"until"`
		}
		require.NoError(r.t, json.Unmarshal([]byte(out), &res), "verify output: %s %s", out, errOut)
		truth, err := r.sim.Truth(chaosShops[p.Name], time.Time{})
		require.NoError(r.t, err)
		st, err := tryStatus(r.client, p.Name)
		require.NoError(r.t, err)
		pr := r.report.platform(p.Name)
		pr.Checked, pr.Missing, pr.Stale, pr.Extra = res.Report.Checked, len(res.Report.Missing), len(res.Report.Stale), len(res.Report.Extra)
		pr.VerifyExit = code
		pr.SlicesCompleted, pr.SlicesFailed, pr.SlicesSplit, pr.Pages = st.Counts.SlicesCompleted, st.Counts.SlicesFailed, st.Counts.SlicesSplit, st.Counts.Pages
		pr.Watermark, pr.CursorRuns = st.Watermark, st.Runs
		pr.Truth = len(truth.Orders)
		r.logf("ordersync verify --platform %s: exit %d, %d checked, %d missing, %d stale, %d extra (truth holds %d orders)",
			p.Name, code, pr.Checked, pr.Missing, pr.Stale, pr.Extra, pr.Truth)
		if code != 0 {
			r.logf("verify output: %s %s", out, errOut)
		}
	}
}

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, name)
	return d
}
