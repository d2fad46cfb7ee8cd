package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

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
	parallel(t, light)
	write := releaseWriter(t)
	// The receiver refuses any batch holding change 7 and fails the first
	// delivery holding change 40.
	s := deliveryRecordingSystem(t, "rec-lanes", "    max_in_flight: 3\n", 40)
	s.startCursors()
	// Let a backlog gather, so ranges fill their lanes.
	s.waitWatermark("rec", time.Now().Add(-20*time.Second), 2*time.Minute)
	id, status := startRecordedDelivery(t, s, "rec-lanes", 30)
	h := firstRunHistory(t, s, id, status,
		"EVENT_TYPE_MARKER_RECORDED", "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED", "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW")
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
