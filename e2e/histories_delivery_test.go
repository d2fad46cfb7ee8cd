package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
)

// TestRecordHistoriesDelivery records the Delivery workflow's replay
// history from a real run: batches, a refused batch delivered one by one
// with one change set aside (and its alert), a pause and a resume, and
// continue-as-new. Like TestRecordHistories it runs only under
// ORDERSYNC_RECORD_HISTORIES (make histories), into the same new release
// folder.
func TestRecordHistoriesDelivery(t *testing.T) {
	write := releaseWriter(t)
	// The receiver refuses any batch holding change 7.
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b activities.WebhookBatch
		_ = json.Unmarshal(body, &b)
		for _, c := range b.Changes {
			if c.Seq == 7 {
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	t.Setenv("ORDERSYNC_E2E_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	yaml := recordPlatforms + `
destinations:
  rec-hook:
    kind: webhook
    url: "` + hook.URL + `"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    batch_size: 5
    retry_interval: 100ms
`
	s := startSystem(t, recordSim(), yaml)
	s.startCursors()
	d, _ := s.file.Destination("rec-hook")
	id := api.DeliveryWorkflowID("rec-hook")
	ctx := context.Background()
	_, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: d.TaskQueue},
		api.DeliveryWorkflowType, api.DeliveryInput{Destination: d, MaxBatchesPerRun: 6})
	require.NoError(t, err)
	status := func() api.DeliveryStatus {
		v, err := s.client.QueryWorkflow(ctx, id, "", api.QueryDeliveryStatus)
		require.NoError(t, err)
		var st api.DeliveryStatus
		require.NoError(t, v.Get(&st))
		return st
	}
	eventually(t, 2*time.Minute, "change 7 set aside", func() bool { return len(status().State.Poison) == 1 })
	require.NoError(t, s.client.SignalWorkflow(ctx, id, "", api.SignalDeliveryPause, api.PauseRequest{Reason: "recording"}))
	eventually(t, 30*time.Second, "paused", func() bool { return status().State.Paused })
	require.NoError(t, s.client.SignalWorkflow(ctx, id, "", api.SignalDeliveryResume, nil))
	eventually(t, 2*time.Minute, "a second run", func() bool { return status().State.Runs >= 2 })
	runs := runIDs(t, s.client, id)
	require.GreaterOrEqual(t, len(runs), 2)
	h := exportHistory(t, s.client, id, runs[0])
	require.True(t, strings.Contains(string(h), "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"))
	write("delivery_poison_continue_as_new.json", h)
}
