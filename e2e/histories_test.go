package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/sim"
)

// exportHistory returns a workflow run's history in the JSON format of
// `temporal workflow show --output json`, which the replayer reads.
func exportHistory(t *testing.T, c client.Client, workflowID, runID string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(h)
	require.NoError(t, err)
	return b
}

// runIDs lists the runs of a workflow ID, oldest first.
func runIDs(t *testing.T, c client.Client, workflowID string) []string {
	t.Helper()
	resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowId = '" + workflowID + "'",
	})
	require.NoError(t, err)
	execs := resp.GetExecutions()
	sort.Slice(execs, func(i, j int) bool { return execs[i].GetStartTime().AsTime().Before(execs[j].GetStartTime().AsTime()) })
	var ids []string
	for _, e := range execs {
		ids = append(ids, e.GetExecution().GetRunId())
	}
	return ids
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

const recordPlatforms = `
default:
  kind: sim
  start: -90s
  interval: 10s
  overlap: 3s
  settle: 1s
  timeout: 3s
  retries: 6
  retry_interval: 100ms
  retry_backoff: 1.5
  max_retry_interval: 1s
  concurrency: 3
  rate_limit: {rps: 500, burst: 50}
  page_size: 25
  max_pages: 50
  resweep_delay: 5s
  breaker_failures: 3
platforms:
  rec:
    endpoint: "{{SIM}}/shops/rec"
    credentials: {env: ORDERSYNC_E2E_REC_TOKEN}
`

func recordSim() sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Seed = 11
	cfg.Shops = []sim.ShopConfig{{Name: "rec", Token: "rec-token"}}
	cfg.History = 90 * time.Second
	cfg.HistoryOrders = 200
	cfg.LiveRate = 2
	cfg.Late = time.Second
	return cfg
}

// TestRecordHistories records the replay tests' histories from real runs:
// a cursor across continue-as-new, a slice whose pages were retried, a
// dead-lettered slice, a dead-letter workflow with a reprocess, a cursor
// whose breaker opened, one with messages and one paused and resumed. It runs only when
// ORDERSYNC_RECORD_HISTORIES names the output directory (make histories
// RELEASE=...): a new release folder under testdata/histories. It refuses a
// folder that exists, and never overwrites a file: histories of an earlier
// release are what running workflows of that release look like, and the
// code must keep replaying them.
// releaseWriter returns a function that writes one recorded history into
// the release folder ORDERSYNC_RECORD_HISTORIES names, skipping the test
// when it is unset. The folder is made once per test process, and must not
// exist before (Mkdir, not MkdirAll): an existing release folder is never
// re-recorded; files are created, never overwritten.
func releaseWriter(t *testing.T) func(name string, b []byte) {
	t.Helper()
	dir := os.Getenv("ORDERSYNC_RECORD_HISTORIES")
	if dir == "" {
		t.Skip("set ORDERSYNC_RECORD_HISTORIES=<new dir> (make histories RELEASE=...) to record")
	}
	releaseDirOnce.Do(func() { releaseDirErr = os.Mkdir(dir, 0o755) })
	require.NoError(t, releaseDirErr, "recorded histories are never rewritten: record into a new release folder")
	return func(name string, b []byte) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		require.NoError(t, err)
		_, err = f.Write(b)
		require.NoError(t, errors.Join(err, f.Close()))
		t.Logf("recorded %s (%d bytes)", name, len(b))
	}
}

var (
	releaseDirOnce sync.Once
	releaseDirErr  error
)

func TestRecordHistories(t *testing.T) {
	parallel(t, light)
	write := releaseWriter(t)

	cfg := recordSim()
	cfg.Faults = sim.Faults{Err5xx: 0.35}
	s := startSystem(t, cfg, recordPlatforms)
	// A run capped at five slices, so the recording crosses continue-as-new.
	p, _ := s.file.Get("rec")
	start, err := p.ResolveStart(time.Now())
	require.NoError(t, err)
	_, err = s.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: api.CursorWorkflowID("rec"), TaskQueue: p.TaskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(searchattr.Platform.ValueSet("rec")),
	}, api.CursorWorkflowType, api.CursorInput{Platform: p.Settings(), Start: start, MaxSlicesPerRun: 5})
	require.NoError(t, err)
	cursorID := api.CursorWorkflowID("rec")
	eventually(t, 2*time.Minute, "two continue-as-new generations", func() bool { return s.status("rec").Runs >= 2 })
	runs := runIDs(t, s.client, cursorID)
	require.GreaterOrEqual(t, len(runs), 2)
	write("cursor_continue_as_new.json", exportHistory(t, s.client, cursorID, runs[0]))
	write("cursor_after_continue_as_new.json", exportHistory(t, s.client, cursorID, runs[1]))

	// A slice whose page failed its local first attempt and was retried as
	// a regular activity (SliceInput.LocalFirst).
	resp, err := s.client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
		Query: "WorkflowType = 'FetchSlice' AND ExecutionStatus = 'Completed'",
	})
	require.NoError(t, err)
	recorded := false
	for _, e := range resp.GetExecutions() {
		h := string(exportHistory(t, s.client, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()))
		if strings.Contains(h, `"markerName": "LocalActivity"`) &&
			strings.Contains(h, "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED") {
			write("slice_local_first_with_retry.json", []byte(h))
			recorded = true
			break
		}
	}
	require.True(t, recorded, "no slice with a retried page among %d", len(resp.GetExecutions()))

	// Dead letters: every request fails until the simulator recovers, then
	// the dead-letter workflow reprocesses them all.
	require.NoError(t, s.sim.SetFaults(sim.Faults{Err5xx: 1}))
	dlqID := api.DeadLetterWorkflowID("rec")
	listDLQ := func() []api.DeadLetterEntry {
		v, err := s.client.QueryWorkflow(context.Background(), dlqID, "", api.QueryDeadLetterList)
		if err != nil {
			return nil
		}
		var entries []api.DeadLetterEntry
		require.NoError(t, v.Get(&entries))
		return entries
	}
	// Three failed slices in a row also open the cursor's circuit breaker.
	eventually(t, 2*time.Minute, "the breaker to open", func() bool { return s.status("rec").BreakerOpen })
	require.NotEmpty(t, listDLQ())
	// A dead-lettered slice ends FAILED with its result as the failure's
	// details (api.SliceInput.FailedAsError).
	var failed *workflowservice.ListWorkflowExecutionsResponse
	eventually(t, time.Minute, "a failed slice in visibility", func() bool {
		failed, err = s.client.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = 'FetchSlice' AND ExecutionStatus = 'Failed'",
		})
		return err == nil && len(failed.GetExecutions()) > 0
	})
	fe := failed.GetExecutions()[0].GetExecution()
	write("slice_dead_lettered.json", exportHistory(t, s.client, fe.GetWorkflowId(), fe.GetRunId()))
	require.NoError(t, s.sim.SetFaults(sim.Faults{}))
	require.NoError(t, s.client.SignalWorkflow(context.Background(), dlqID, "", api.SignalDeadLetterReprocess, api.DeadLetterSelector{All: true}))
	eventually(t, 2*time.Minute, "the dead-letter workflow to empty", func() bool { return len(listDLQ()) == 0 })
	write("deadletter_reprocess.json", exportHistory(t, s.client, dlqID, ""))

	// Resume closes the breaker. This run also holds re-sweeps of recent windows.
	require.NoError(t, s.client.SignalWorkflow(context.Background(), cursorID, "", api.SignalResume, nil))
	resumedRuns := s.status("rec").Runs
	eventually(t, 2*time.Minute, "re-sweeps in a complete run after resume", func() bool {
		st := s.status("rec")
		return !st.BreakerOpen && st.Counts.Resweeps > 0 && st.Runs >= resumedRuns+2
	})
	// Runs are capped at five slices, so pick the run where the breaker
	// opened (it sent the alert) and the last complete run (re-sweeps).
	all := runIDs(t, s.client, cursorID)
	for _, run := range all[:len(all)-1] {
		if h := exportHistory(t, s.client, cursorID, run); strings.Contains(string(h), `"SendAlert"`) {
			write("cursor_breaker.json", h)
			break
		}
	}
	write("cursor_resweep.json", exportHistory(t, s.client, cursorID, all[len(all)-2]))

	// Messages: a reprocess by update (accepted, applied, answered) and a
	// settings change by signal (its verdict recorded in history).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	from := time.Now().Add(-80 * time.Second).Truncate(10 * time.Second)
	upd, err := s.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: cursorID, UpdateName: api.SignalReprocess, WaitForStage: client.WorkflowUpdateStageCompleted,
		Args: []any{api.ReprocessRequest{From: from, To: from.Add(20 * time.Second)}},
	})
	require.NoError(t, err)
	var queued int
	require.NoError(t, upd.Get(ctx, &queued))
	require.Positive(t, queued)
	changed := p.Settings() // by reference, as platform edit sends it
	changed.PageSize = 30
	require.NoError(t, s.client.SignalWorkflow(ctx, cursorID, "", api.SignalConfig, changed))
	messagesRuns := s.status("rec").Runs
	eventually(t, 2*time.Minute, "a complete run after the messages", func() bool { return s.status("rec").Runs >= messagesRuns+1 })
	// Both usually land in one run (cursor_messages.json); if a
	// continue-as-new fell between them, each run is recorded.
	var gotUpdate, gotSignal bool
	all = runIDs(t, s.client, cursorID)
	for _, run := range all[:len(all)-1] {
		h := exportHistory(t, s.client, cursorID, run)
		update := !gotUpdate && strings.Contains(string(h), "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED")
		signal := !gotSignal && strings.Contains(string(h), `"signalName": "config"`) && strings.Contains(string(h), `"markerName": "SideEffect"`)
		switch {
		case update && signal:
			write("cursor_messages.json", h)
		case update:
			write("cursor_reprocess_update.json", h)
		case signal:
			write("cursor_config_signal.json", h)
		}
		gotUpdate, gotSignal = gotUpdate || update, gotSignal || signal
	}
	require.True(t, gotUpdate && gotSignal, "the runs with the update and the config signal")

	// An operator pauses the cursor and resumes it: PlatformState goes
	// paused and back, each an upsert in the run's history.
	require.NoError(t, s.client.SignalWorkflow(ctx, cursorID, "", api.SignalPause, api.PauseRequest{Reason: "recording"}))
	eventually(t, 30*time.Second, "paused", func() bool { return s.status("rec").Paused })
	time.Sleep(3 * time.Second) // a pause that lasts: slices settle meanwhile
	require.NoError(t, s.client.SignalWorkflow(ctx, cursorID, "", api.SignalResume, nil))
	pausedRuns := s.status("rec").Runs
	eventually(t, 2*time.Minute, "a complete run after the pause", func() bool { return s.status("rec").Runs >= pausedRuns+1 })
	all = runIDs(t, s.client, cursorID)
	var gotPause bool
	for _, run := range all[:len(all)-1] {
		if h := exportHistory(t, s.client, cursorID, run); strings.Contains(string(h), `"signalName": "pause"`) {
			write("cursor_paused.json", h)
			gotPause = true
			break
		}
	}
	require.True(t, gotPause, "the run with the pause")
}
