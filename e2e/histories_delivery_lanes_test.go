package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestRecordHistoriesDeliveryLanes records a Delivery history with
// max_in_flight 3 from a real run: ranges listed and delivered in lanes
// (local activities while a backlog waits), a lane refused whole and
// delivered one change at a time with one change set aside, a lane whose
// local attempt failed and went again as a regular activity, and
// continue-as-new. Like TestRecordHistoriesDelivery it runs only under
// ORDERSYNC_RECORD_HISTORIES (make histories).
func TestRecordHistoriesDeliveryLanes(t *testing.T) {
	write := releaseWriter(t)
	var mu sync.Mutex
	failedOnce := false
	// The receiver refuses any batch holding change 7 and fails the first
	// delivery holding change 40.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b activities.WebhookBatch
		_ = json.Unmarshal(body, &b)
		for _, c := range b.Changes {
			switch c.Seq {
			case 7:
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			case 40:
				mu.Lock()
				first := !failedOnce
				failedOnce = true
				mu.Unlock()
				if first {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	t.Setenv("ORDERSYNC_E2E_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	yaml := recordPlatforms + `
destinations:
  rec-lanes:
    kind: webhook
    url: "` + hook.URL + `"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    batch_size: 5
    max_in_flight: 3
    retry_interval: 100ms
`
	s := startSystem(t, recordSim(), yaml)
	s.startCursors()
	// Let a backlog gather, so ranges fill their lanes.
	s.waitWatermark("rec", time.Now().Add(-20*time.Second), 2*time.Minute)
	d, _ := s.file.Destination("rec-lanes")
	id := api.DeliveryWorkflowID("rec-lanes")
	ctx := context.Background()
	_, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: d.TaskQueue},
		api.DeliveryWorkflowType, api.DeliveryInput{Destination: d, MaxBatchesPerRun: 30})
	require.NoError(t, err)
	status := func() api.DeliveryStatus {
		v, err := s.client.QueryWorkflow(ctx, id, "", api.QueryDeliveryStatus)
		require.NoError(t, err)
		var st api.DeliveryStatus
		require.NoError(t, v.Get(&st))
		return st
	}
	eventually(t, 2*time.Minute, "a second run", func() bool { return status().State.Runs >= 2 })
	runs := runIDs(t, s.client, id)
	require.GreaterOrEqual(t, len(runs), 2)
	h := exportHistory(t, s.client, id, runs[0])
	for _, want := range []string{"EVENT_TYPE_MARKER_RECORDED", "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED", "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"} {
		require.True(t, strings.Contains(string(h), want), "the first run's history holds no %s", want)
	}
	st := status()
	require.Equal(t, []int64{7}, poisonSeqsOf(st))
	write("delivery_lanes_continue_as_new.json", h)
}

func poisonSeqsOf(st api.DeliveryStatus) []int64 {
	var out []int64
	for _, p := range st.State.Poison {
		out = append(out, p.Seq)
	}
	return out
}

// replayRuns replays every run of a workflow from the server with today's
// code: the path a real run took (local activities, lanes, messages,
// continue-as-new) is deterministic.
func replayRuns(t *testing.T, s *system, workflowID string) {
	t.Helper()
	for _, run := range runIDs(t, s.client, workflowID) {
		h := exportHistory(t, s.client, workflowID, run)
		replayer := worker.NewWorkflowReplayer()
		workflows.Register(replayer)
		hist, err := client.HistoryFromJSON(strings.NewReader(string(h)), client.HistoryJSONOptions{})
		require.NoError(t, err)
		require.NoError(t, replayer.ReplayWorkflowHistory(nil, hist), "replay %s run %s", workflowID, run)
	}
}
