package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	mathrand "math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
)

// A rolling upgrade as docs/production.md describes it, with cursors in the middle
// of their backfill: an unversioned worker starts the cursors; a fleet of
// workers runs as build A of a Worker Deployment beside it and is promoted
// (turning versioning on); build B starts beside A and is promoted with
// `ordersync deployment set-current`, `ordersync deployment wait-drained`
// says when A may go, A's workers drain and stop, and B finishes the
// backfill. A Delivery workflow feeds a webhook all along.
//
// The page rate (the simulator's rate limit) makes the backfill last about
// a minute and a half, so the promotion lands in its middle; a small run
// cap makes the cursors continue as new on both sides of it.
const upgradePlatforms = `
default:
  kind: sim
  start: -30m
  interval: 20s
  # One interval per slice: many small slices, so the upgrades land between
  # slices of every cursor (adaptive spans would cover the backlog in a few
  # wide slices, and the test waits for slices to complete on each build).
  backfill_max_span: 0s
  overlap: 5s
  settle: 2s
  timeout: 10s
  retries: 10
  retry_interval: 500ms
  concurrency: 3
  rate_limit: {rps: 1.5, burst: 1}
  page_size: 10
platforms:
  upgrade-a:
    endpoint: "{{SIM}}/shops/a"
    credentials: {env: ORDERSYNC_E2E_UPGRADE_A_TOKEN}
  upgrade-b:
    endpoint: "{{SIM}}/shops/b"
    credentials: {env: ORDERSYNC_E2E_UPGRADE_B_TOKEN}
    task_queue: orders-upgrade-shared
  upgrade-c:
    endpoint: "{{SIM}}/shops/c"
    credentials: {env: ORDERSYNC_E2E_UPGRADE_C_TOKEN}
    task_queue: orders-upgrade-shared
destinations:
  upgrade-hook:
    kind: webhook
    url: "{{HOOK}}"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    batch_size: 25
    timeout: 1s
    retries: 20
    retry_interval: 100ms
`

var upgradeShops = map[string]string{"upgrade-a": "a", "upgrade-b": "b", "upgrade-c": "c"}

const (
	upgradeDeployment = "ordersync-e2e"
	buildA            = "build-a"
	buildB            = "build-b"
	upgradeOverlap    = 5 * time.Second
	upgradeRunCap     = 12
)

// TestRollingUpgradeMidBackfill: cursors started unversioned move to build
// A; build B beside A is promoted while every cursor is backfilling, A
// drained and stopped. No workflow task fails (no non-determinism on the
// cursors' replay on another build), no order is missing or stale, and
// every cursor (and every other workflow still open) ends on build B,
// having run on A before in the same run; cursors, slices and the delivery
// each moved from A to B while running, and every change reached the
// webhook.
func TestRollingUpgradeMidBackfill(t *testing.T) {
	parallel(t, share{weight: heavy.weight, long: true})
	if testing.Short() {
		t.Skip("end-to-end: worker processes for minutes")
	}
	ordersyncBinary(t) // build before the clock starts
	began := time.Now()
	logf := func(format string, args ...any) {
		t.Helper()
		t.Logf("%6.1fs  %s", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}

	srv := embeddedStack.server(t)
	c := dialAt(t, srv.FrontendAddress(), embeddedStack.namespace)

	cfg := sim.DefaultConfig()
	cfg.Seed = 15
	cfg.AdminToken = adminToken
	cfg.Shops = []sim.ShopConfig{{Name: "a", Token: "upgrade-a-token"}, {Name: "b", Token: "upgrade-b-token"}, {Name: "c", Token: "upgrade-c-token"}}
	cfg.History = 30 * time.Minute
	cfg.HistoryOrders = 1800
	cfg.LiveRate = 1
	cfg.MaxUpdates = 2
	cfg.UpdateSpread = 20 * time.Second
	cfg.Late = upgradeOverlap
	// ~180 pages of backlog per shop at 1.5 pages a second (the platforms
	// pace themselves the same): the backfill outlasts both upgrades.
	cfg.RateLimit = sim.RateLimit{RPS: 1.5, Burst: 1}
	world, err := sim.New(cfg)
	require.NoError(t, err)
	simSrv, err := world.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = simSrv.Close() })

	// A webhook receiver that fails now and then: the Delivery workflow
	// moves across builds too, in the middle of its batches.
	rcv := &flakyReceiver{rnd: mathrand.New(mathrand.NewPCG(3, 4)), batchIDs: map[string]int{}}
	hook := httptest.NewServer(rcv)
	t.Cleanup(hook.Close)
	const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

	yaml := strings.NewReplacer("{{SIM}}", simSrv.URL, "{{HOOK}}", hook.URL).Replace(upgradePlatforms)
	file, err := config.Parse([]byte(yaml))
	require.NoError(t, err)
	platformsPath := filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(platformsPath, []byte(yaml), 0o644))
	storeDSN := embeddedStack.storeDSN(t)
	env := append(embeddedStack.env(srv.FrontendAddress(), storeDSN, platformsPath),
		"ORDERSYNC_E2E_HOOK_SECRET="+hookSecret,
		"ORDERSYNC_SIM_ADMIN_TOKEN="+adminToken,
		"ORDERSYNC_E2E_UPGRADE_A_TOKEN=upgrade-a-token",
		"ORDERSYNC_E2E_UPGRADE_B_TOKEN=upgrade-b-token",
		"ORDERSYNC_E2E_UPGRADE_C_TOKEN=upgrade-c-token",
		"ORDERSYNC_DEPLOYMENT_NAME="+upgradeDeployment,
	)
	ordersync := func(args ...string) string {
		t.Helper()
		code, out, errOut := runOrdersync(t, env, args...)
		require.Zero(t, code, "ordersync %s: %s%s", strings.Join(args, " "), out, errOut)
		return out
	}

	// Unversioned first, as every fleet ran before worker versioning: one
	// worker without the deployment settings starts the backfill.
	unversioned := startWorkerProc(t, "unversioned-worker", withoutDeployment(env), "--stop-timeout", "5s")
	require.True(t, unversioned.waitRunning(45*time.Second), "unversioned worker did not start:\n%s", unversioned.tail(4000))
	require.NotContains(t, unversioned.tail(1<<20), "build_id=")
	for _, p := range file.Platforms {
		start, err := p.ResolveStart(time.Now())
		require.NoError(t, err)
		_, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
			ID: api.CursorWorkflowID(p.Name), TaskQueue: p.TaskQueue,
			TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.Platform.ValueSet(p.Name)),
		}, api.CursorWorkflowType, api.CursorInput{Platform: p.Settings(), Start: start, MaxSlicesPerRun: upgradeRunCap})
		require.NoError(t, err)
	}
	for _, d := range file.Destinations {
		_, err := starter.EnsureDelivery(context.Background(), c, d)
		require.NoError(t, err)
	}
	waitSlices(t, c, file.Platforms, 3, "unversioned")
	for _, p := range file.Platforms {
		build, _, err := versionOf(c, api.CursorWorkflowID(p.Name))
		require.NoError(t, err)
		require.Empty(t, build, "%s runs unversioned", p.Name)
	}

	// Turning versioning on is an upgrade too: build A beside the
	// unversioned worker, promoted; the running cursors move to it.
	fleetA := startBuild(t, env, buildA, 2)
	logf("build A: %d workers running beside the unversioned one", len(fleetA))
	out := ordersync("deployment", "set-current", "--build-id", buildA)
	require.Contains(t, out, "build build-a is current (was -)")
	logf("%s", strings.TrimSpace(out))
	waitFor(t, time.Minute, "every cursor moves from unversioned to build A", func() (bool, string) {
		for _, p := range file.Platforms {
			build, _, err := versionOf(c, api.CursorWorkflowID(p.Name))
			if err != nil || build != buildA {
				return false, fmt.Sprintf("%s on %q, error %v", p.Name, build, err)
			}
		}
		return true, ""
	})
	unversioned.stop()
	logf("cursors on build A; unversioned worker stopped")
	waitSlices(t, c, file.Platforms, 5, "build A")
	for _, p := range file.Platforms {
		require.Equal(t, buildA, cursorBuild(t, c, p.Name), "%s before the upgrade", p.Name)
	}

	// Build B beside A, then promoted while the cursors are mid-backfill.
	fleetB := startBuild(t, env, buildB, 2)
	logf("build B: %d workers running beside build A", len(fleetB))
	out = ordersync("deployment", "set-current", "--build-id", buildB)
	promoted := time.Now()
	require.Contains(t, out, "build build-b is current (was build-a)")
	logf("%s", strings.TrimSpace(out))
	for _, p := range file.Platforms {
		st, err := tryStatus(c, p.Name)
		require.NoError(t, err)
		require.False(t, st.CaughtUp, "%s caught up before the upgrade: the test needs it mid-backfill (slow the simulator down)", p.Name)
		logf("%s at promotion: watermark %s, %d slices done, %d in flight, run %d",
			p.Name, st.Watermark.Format(time.TimeOnly), st.Counts.SlicesCompleted, len(st.InFlight), st.Runs)
	}

	// Drain A: Temporal says when it holds no workflow any more.
	out = ordersync("deployment", "wait-drained", "--build-id", buildA, "--timeout", "90s")
	require.Contains(t, out, "build build-a is drained")
	logf("%s (%.1fs after the promotion)", strings.TrimSpace(out), time.Since(promoted).Seconds())
	table := ordersync("deployment", "describe")
	logf("ordersync deployment describe:\n%s", table)
	require.Contains(t, table, "Deployment ordersync-e2e: current build build-b")
	require.Regexp(t, `(?m)^build-a\s+-\s+drained\s`, table)
	require.Regexp(t, `(?m)^build-b\s+current\s+-\s`, table)
	desc := ordersync("deployment", "describe", "-o", "json")
	var described struct {
		Current  string `json:"current_build_id"`
		Versions []struct {
			BuildID  string `json:"build_id"`
			Drainage string `json:"drainage"`
		} `json:"versions"`
	}
	require.NoError(t, json.Unmarshal([]byte(desc), &described), desc)
	require.Equal(t, buildB, described.Current)
	for _, w := range fleetA {
		w.stop() // SIGTERM: running activities get --stop-timeout, then the process exits
	}
	logf("build A stopped")
	// The rest is B's two workers finishing a backfill paced at 1.5
	// pages a second: light work.
	lighten(t, light)
	for _, w := range fleetA {
		require.NotContains(t, w.tail(1<<20), "level=ERROR msg=\"worker stopped\"", "a build-A worker died instead of draining")
	}

	// B alone finishes the backfill and follows the present.
	for _, p := range file.Platforms {
		st, err := tryStatus(c, p.Name)
		require.NoError(t, err)
		require.False(t, st.CaughtUp, "%s caught up before build A stopped: the upgrade was not mid-backfill", p.Name)
	}
	waitFor(t, 4*time.Minute, "every cursor catches up on build B", func() (bool, string) {
		for _, p := range file.Platforms {
			st, err := tryStatus(c, p.Name)
			if err != nil || !st.CaughtUp {
				return false, fmt.Sprintf("%s: watermark %s, error %v", p.Name, st.Watermark, err)
			}
		}
		return true, ""
	})
	quiet := world.StopCreating()
	target := quiet.Add(upgradeOverlap)
	waitFor(t, 2*time.Minute, "every watermark passes the last change", func() (bool, string) {
		for _, p := range file.Platforms {
			st, err := tryStatus(c, p.Name)
			if err != nil || st.Watermark.Before(target) {
				return false, fmt.Sprintf("%s: watermark %s, error %v", p.Name, st.Watermark, err)
			}
		}
		return true, ""
	})
	logf("caught up past the last change on build B")

	// Every change delivered, in order per order, across both upgrades.
	st, err := store.Open(context.Background(), storeDSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	head, err := st.Head(context.Background())
	require.NoError(t, err)
	feed := allFeed(t, st)
	require.Len(t, feed, int(head.LastSeq), "nothing compacted: seqs 1..head")
	waitFor(t, 2*time.Minute, "the webhook acknowledges the whole feed", func() (bool, string) {
		ds, err := deliveryStatus(c, "upgrade-hook")
		return err == nil && ds.State.Acked >= head.LastSeq, fmt.Sprintf("acked %d of %d, error %v", ds.State.Acked, head.LastSeq, err)
	})
	rcv.mu.Lock()
	arrivals := append([]store.Change(nil), rcv.arrivals...)
	rcv.mu.Unlock()
	requireFeedDelivered(t, "webhook", feed, arrivals)
	logf("webhook: %d changes, all delivered (%d arrivals)", len(feed), len(arrivals))

	// Nothing lost: `ordersync verify`, as an operator runs it.
	for _, p := range file.Platforms {
		code, out, errOut := runOrdersync(t, env, "verify", "--platform", p.Name, "-o", "json")
		var res struct {
			Report verify.Report `json:"report"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), "verify output: %s %s", out, errOut)
		truth, err := world.Truth(upgradeShops[p.Name], time.Time{})
		require.NoError(t, err)
		logf("ordersync verify --platform %s: exit %d, %d checked, %d missing, %d stale (truth %d orders)",
			p.Name, code, res.Report.Checked, len(res.Report.Missing), len(res.Report.Stale), len(truth.Orders))
		require.Zero(t, code, "%s: verify: %s", p.Name, out)
		require.Empty(t, res.Report.Missing, p.Name)
		require.Empty(t, res.Report.Stale, p.Name)
		require.Equal(t, len(truth.Orders), res.Report.Checked, "%s: verify must check every order", p.Name)
	}

	// Every cursor ends on B, and ran on A before in the same run or an
	// earlier one: it moved, it was not started afresh.
	for _, p := range file.Platforms {
		require.Equal(t, buildB, cursorBuild(t, c, p.Name), "%s after the upgrade", p.Name)
	}
	h := scanHistories(t, c)
	logf("workflows that ran on A, then on B, by type: %v", h.movedByType)
	logf("histories: %d workflows, %d cursor runs; workflow tasks completed unversioned %d, on A %d, on B %d; %d workflows ran on both builds; cursor runs moved mid-run: %d unversioned to A, %d A to B",
		h.workflows, h.cursorRuns, h.tasksOn[""], h.tasksOn[buildA], h.tasksOn[buildB], h.onBoth, h.cursorRunsMigrated, h.cursorRunsMoved)
	require.Empty(t, h.failedTasks, "workflow tasks failed (non-determinism?)")
	require.Positive(t, h.tasksOn[buildA])
	require.Positive(t, h.tasksOn[buildB])
	for _, typ := range []string{api.CursorWorkflowType, api.SliceWorkflowType, api.DeliveryWorkflowType} {
		require.Positive(t, h.movedByType[typ], "no %s workflow ran on A and then on B", typ)
	}
	require.Positive(t, h.cursorRunsMoved, "no cursor run continued on B where A left it: the upgrade did not hit a running cursor")
	require.Positive(t, h.cursorRunsMigrated, "no cursor run continued on A where the unversioned worker left it")
	require.Zero(t, h.openNotOnB, "open workflows not on build B")
	for _, w := range append(append(fleetA, fleetB...), unversioned) {
		log := w.tail(1 << 22)
		require.False(t, nondeterminismRE.MatchString(log), "a worker logged a non-determinism error:\n%s", nondeterminismRE.FindString(log))
	}
}

// startBuild starts n `ordersync worker` processes of one build and waits
// until each polls.
func startBuild(t *testing.T, env []string, build string, n int) []*workerProc {
	t.Helper()
	var out []*workerProc
	for i := range n {
		w := startWorkerProc(t, fmt.Sprintf("%s-worker-%d", build, i+1), env, "--build-id", build, "--stop-timeout", "5s")
		require.True(t, w.waitRunning(45*time.Second), "%s worker %d did not start:\n%s", build, i+1, w.tail(4000))
		require.Contains(t, w.tail(1<<20), "build_id="+build)
		out = append(out, w)
	}
	return out
}

// cursorBuild is the build the cursor's current run is on; it must be an
// auto-upgrade workflow of the test's deployment.
func cursorBuild(t *testing.T, c client.Client, platform string) string {
	t.Helper()
	build, vi, err := versionOf(c, api.CursorWorkflowID(platform))
	require.NoError(t, err)
	require.NotNil(t, vi, "%s has no versioning info", platform)
	require.Equal(t, enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE, vi.GetBehavior(), platform)
	require.Equal(t, upgradeDeployment, vi.GetDeploymentVersion().GetDeploymentName(), platform)
	return build
}

// versionOf is the build a workflow's current run is on ("" unversioned)
// and its versioning info, from the execution (visibility lacks it).
func versionOf(c client.Client, workflowID string) (string, *workflowpb.WorkflowExecutionVersioningInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := c.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		return "", nil, err
	}
	vi := d.GetWorkflowExecutionInfo().GetVersioningInfo()
	return vi.GetDeploymentVersion().GetBuildId(), vi, nil
}

// waitSlices waits until every platform's cursor completed n slices.
func waitSlices(t *testing.T, c client.Client, platforms []config.Platform, n int64, on string) {
	t.Helper()
	waitFor(t, 2*time.Minute, fmt.Sprintf("every cursor completes %d slices (%s)", n, on), func() (bool, string) {
		for _, p := range platforms {
			st, err := tryStatus(c, p.Name)
			if err != nil || st.Counts.SlicesCompleted < n {
				return false, fmt.Sprintf("%s: %d slices completed, error %v", p.Name, st.Counts.SlicesCompleted, err)
			}
		}
		return true, ""
	})
}

func deliveryStatus(c client.Client, dest string) (api.DeliveryStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var st api.DeliveryStatus
	v, err := c.QueryWorkflow(ctx, api.DeliveryWorkflowID(dest), "", api.QueryDeliveryStatus)
	if err == nil {
		err = v.Get(&st)
	}
	return st, err
}

// withoutDeployment is env without the deployment settings: an unversioned worker.
func withoutDeployment(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "ORDERSYNC_DEPLOYMENT_NAME=") && !strings.HasPrefix(kv, "ORDERSYNC_BUILD_ID=") {
			out = append(out, kv)
		}
	}
	return out
}

var nondeterminismRE = regexp.MustCompile(`(?i).{0,200}(nondeterministic|non-deterministic|TMPRL1100).{0,200}`)

type historyScan struct {
	workflows, cursorRuns   int
	tasksOn                 map[string]int
	onBoth, cursorRunsMoved int
	cursorRunsMigrated      int
	movedByType             map[string]int // workflows that ran on A, then on B
	openNotOnB              int
	failedTasks             []string
}

// scanHistories reads every workflow of the namespace (open and closed,
// every run): workflow task failures, which build completed each task, and
// where the open ones are now.
func scanHistories(t *testing.T, c client.Client) historyScan {
	t.Helper()
	ctx := context.Background()
	h := historyScan{tasksOn: map[string]int{}, movedByType: map[string]int{}}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{NextPageToken: token, PageSize: 500})
		require.NoError(t, err)
		for _, info := range resp.Executions {
			h.workflows++
			we := info.GetExecution()
			builds := map[string]bool{}
			var sequence []string
			it := c.GetWorkflowHistory(ctx, we.GetWorkflowId(), we.GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				require.NoError(t, err)
				switch ev.GetEventType() {
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
					h.failedTasks = append(h.failedTasks, describeFailedTask(we.GetWorkflowId(), ev.GetWorkflowTaskFailedEventAttributes()))
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
					b := ev.GetWorkflowTaskCompletedEventAttributes().GetDeploymentVersion().GetBuildId()
					h.tasksOn[b]++
					builds[b] = true
					if len(sequence) == 0 || sequence[len(sequence)-1] != b {
						sequence = append(sequence, b)
					}
				}
			}
			if builds[buildA] && builds[buildB] {
				h.onBoth++
				h.movedByType[info.GetType().GetName()]++
			}
			if info.GetType().GetName() == api.CursorWorkflowType {
				h.cursorRuns++
				seq := "," + strings.Join(sequence, ",") + ","
				if strings.Contains(seq, ","+buildA+","+buildB+",") {
					h.cursorRunsMoved++
				}
				if strings.Contains(seq, ",,"+buildA+",") {
					h.cursorRunsMigrated++ // unversioned, then A
				}
			}
			if info.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				// Visibility does not carry the version; the execution does.
				d, err := c.DescribeWorkflowExecution(ctx, we.GetWorkflowId(), we.GetRunId())
				require.NoError(t, err)
				if on := d.GetWorkflowExecutionInfo().GetVersioningInfo().GetDeploymentVersion().GetBuildId(); on != buildB {
					h.openNotOnB++
					t.Logf("open on %q: %s", on, we.GetWorkflowId())
				}
			}
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			return h
		}
	}
}

func describeFailedTask(id string, a *historypb.WorkflowTaskFailedEventAttributes) string {
	return fmt.Sprintf("%s: %s: %s", id, a.GetCause(), a.GetFailure().GetMessage())
}
