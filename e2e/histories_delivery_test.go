package e2e

import (
	"context"
	"encoding/json"
	"github.com/ordersync/ordersync/delivery"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
)

// TestRecordHistoriesDelivery records the Delivery workflow's replay
// history from a real run: batches, a refused batch delivered one by one
// with one change set aside (and its alert), a pause and a resume, and
// continue-as-new. Like TestRecordHistories it runs only under
// ORDERSYNC_RECORD_HISTORIES (make histories), into the same new release
// folder.
func TestRecordHistoriesDelivery(t *testing.T) {
	parallel(t, light)
	write := releaseWriter(t)
	s := deliveryRecordingSystem(t, "rec-hook", "", 0)
	s.startCursors()
	id, status := startRecordedDelivery(t, s, "rec-hook", 6)
	ctx := context.Background()
	eventually(t, 2*time.Minute, "change 7 set aside", func() bool { return len(status().State.Poison) == 1 })
	require.NoError(t, s.client.SignalWorkflow(ctx, id, "", api.SignalDeliveryPause, api.PauseRequest{Reason: "recording"}))
	eventually(t, 30*time.Second, "paused", func() bool { return status().State.Paused })
	require.NoError(t, s.client.SignalWorkflow(ctx, id, "", api.SignalDeliveryResume, nil))
	h := firstRunHistory(t, s, id, status, "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW")
	write("delivery_poison_continue_as_new.json", h)
}

// deliveryRecordingSystem starts the Delivery recorders' system: the
// recording platforms and webhook destination dest (batches of 5, the
// extra YAML lines added) whose receiver refuses any batch holding change
// 7 and, when failOnce is not 0, fails the first delivery holding change
// failOnce.
func deliveryRecordingSystem(t *testing.T, dest, extra string, failOnce int64) *system {
	var mu sync.Mutex
	failed := false
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var b delivery.WebhookBatch
		_ = json.Unmarshal(body, &b)
		for _, c := range b.Changes {
			switch {
			case c.Seq == 7:
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			case failOnce != 0 && c.Seq == failOnce:
				mu.Lock()
				first := !failed
				failed = true
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
	setenv(t, "ORDERSYNC_E2E_HOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	yaml := recordPlatforms + `
destinations:
  ` + dest + `:
    kind: webhook
    url: "` + hook.URL + `"
    secret: {env: ORDERSYNC_E2E_HOOK_SECRET}
    batch_size: 5
    retry_interval: 100ms
` + extra
	return startSystem(t, recordSim(), yaml)
}

// startRecordedDelivery starts dest's Delivery workflow with
// maxBatches per run and returns its ID and a query of its status.
func startRecordedDelivery(t *testing.T, s *system, dest string, maxBatches int) (string, func() api.DeliveryStatus) {
	d, _ := s.file.Destination(dest)
	id := api.DeliveryWorkflowID(dest)
	ctx := context.Background()
	_, err := s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: d.TaskQueue},
		api.DeliveryWorkflowType, api.DeliveryInput{Destination: d.Settings(), MaxBatchesPerRun: maxBatches})
	require.NoError(t, err)
	return id, func() api.DeliveryStatus {
		v, err := s.client.QueryWorkflow(ctx, id, "", api.QueryDeliveryStatus)
		require.NoError(t, err)
		var st api.DeliveryStatus
		require.NoError(t, v.Get(&st))
		return st
	}
}

// firstRunHistory waits for the workflow's second run and returns its
// first run's history, which must hold each of the event types.
func firstRunHistory(t *testing.T, s *system, id string, status func() api.DeliveryStatus, events ...string) []byte {
	eventually(t, 2*time.Minute, "a second run", func() bool { return status().State.Runs >= 2 })
	runs := runIDs(t, s.client, id)
	require.GreaterOrEqual(t, len(runs), 2)
	h := exportHistory(t, s.client, id, runs[0])
	for _, want := range events {
		require.True(t, strings.Contains(string(h), want), "the first run's history holds no %s", want)
	}
	return h
}
