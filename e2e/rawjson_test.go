package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

// TestRawJSONSignalsAndUpdates sends every signal and update as plain JSON
// bytes through the bare Temporal client, the way `temporal workflow signal
// --input '{...}'` does, and checks each one's effect.
func TestRawJSONSignalsAndUpdates(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s := startSystem(t, cliSim(), cliPlatforms)
	s.startCursors()
	ctx := context.Background()
	cursor := api.CursorWorkflowID("cli-a")
	signal := func(id, name, payload string) {
		t.Helper()
		var arg any
		if payload != "" {
			arg = json.RawMessage(payload)
		}
		require.NoError(t, s.client.SignalWorkflow(ctx, id, "", name, arg))
	}
	update := func(name, payload string, out any) error {
		h, err := s.client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: cursor, UpdateName: name, Args: []any{json.RawMessage(payload)},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return err
		}
		return h.Get(ctx, out)
	}

	signal(cursor, api.SignalPause, `{"reason":"by raw json"}`)
	eventually(t, 10*time.Second, "paused", func() bool { return s.status("cli-a").Paused })
	require.Equal(t, "paused: by raw json", s.status("cli-a").Waiting)
	signal(cursor, api.SignalResume, "")
	eventually(t, 10*time.Second, "resumed", func() bool { return !s.status("cli-a").Paused })

	// On cli-a's slice grid, so [from, from+10s) is one slice.
	from := slicequeue.GridOf("cli-a", 10*time.Second).Floor(time.Now().Add(-100 * time.Second))
	signal(cursor, api.SignalReprocess, fmt.Sprintf(`{"from":%q,"to":%q}`, from.Format(time.RFC3339), from.Add(10*time.Second).Format(time.RFC3339)))
	reprocessed := api.SliceWorkflowID("cli-a", from, from.Add(10*time.Second))
	eventually(t, 20*time.Second, "the reprocessed slice to complete", func() bool {
		d, err := s.client.DescribeWorkflowExecution(ctx, reprocessed, "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED
	})

	var queued int
	require.NoError(t, update(api.SignalReprocess, fmt.Sprintf(`{"from":%q,"to":%q}`,
		from.Add(30*time.Second).Format(time.RFC3339), from.Add(50*time.Second).Format(time.RFC3339)), &queued))
	require.Equal(t, 2, queued)
	err := update(api.SignalReprocess, `{"from":"2026-01-02T00:00:00Z","to":"2026-01-01T00:00:00Z"}`, &queued)
	require.ErrorContains(t, err, "is not before to", "the validator rejects a reversed range")

	var st api.CursorStatus
	require.NoError(t, update(api.SignalPause, `{"reason":"update"}`, &st))
	require.True(t, st.Paused)
	require.NoError(t, update(api.SignalResume, `{}`, &st))
	require.False(t, st.Paused)

	settings := s.status("cli-a").Settings
	settings.PageSize = 33
	raw, err := json.Marshal(settings)
	require.NoError(t, err)
	signal(cursor, api.SignalConfig, string(raw))
	eventually(t, 10*time.Second, "new settings", func() bool { return s.status("cli-a").Settings.PageSize == 33 })
	settings.PageSize = 34
	raw, _ = json.Marshal(settings)
	require.NoError(t, update(api.SignalConfig, string(raw), &st))
	require.Equal(t, 34, st.Settings.PageSize)
	err = update(api.SignalConfig, `{"name":"cli-a","kind":"nope"}`, &st)
	require.ErrorContains(t, err, `field "interval": must be positive`, "settings are the whole tuning, checked as a file's")
	require.ErrorContains(t, update(api.SignalConfig, `{"name":"cli-a","page_sise":5}`, &st), "page_sise", "an unknown field is named")

	// Dead-letter workflow: an entry added by raw JSON, listed, then
	// discarded; an entry of another platform is refused and reported.
	dlq := api.DeadLetterWorkflowID("cli-a")
	const sliceID = "slice/cli-a/20261101T000000.000000Z-20261101T001500.000000Z"
	_, err = s.client.SignalWithStartWorkflow(ctx, dlq, api.SignalDeadLetterAdd,
		json.RawMessage(`{"slice_id":"`+sliceID+`","platform":"cli-a","start":"2026-11-01T00:00:00Z","end":"2026-11-01T00:15:00Z","error":"boom"}`),
		client.StartWorkflowOptions{TaskQueue: settings.TaskQueue}, api.DeadLetterWorkflowType, api.DeadLetterInput{Platform: settings})
	require.NoError(t, err)
	list := func() []api.DeadLetterEntry {
		v, err := s.client.QueryWorkflow(ctx, dlq, "", api.QueryDeadLetterList)
		require.NoError(t, err)
		var out []api.DeadLetterEntry
		require.NoError(t, v.Get(&out))
		return out
	}
	eventually(t, 10*time.Second, "the entry", func() bool { return len(list()) == 1 })
	signal(dlq, api.SignalDeadLetterAdd, `{"slice_id":"slice/cli-b/20261101T000000.000000Z-20261101T001500.000000Z","platform":"cli-b","start":"2026-11-01T00:00:00Z","end":"2026-11-01T00:15:00Z","error":"boom"}`)
	eventually(t, 10*time.Second, "the refusal", func() bool {
		v, err := s.client.QueryWorkflow(ctx, dlq, "", api.QueryDeadLetterStatus)
		require.NoError(t, err)
		var st api.DeadLetterStatus
		require.NoError(t, v.Get(&st))
		return st.Rejected == 1 && strings.Contains(st.LastError, `platform "cli-b"`)
	})
	require.Len(t, list(), 1, "the other platform's slice was not added")
	signal(dlq, api.SignalDeadLetterDiscard, `{"slice_id":"`+sliceID+`"}`)
	eventually(t, 10*time.Second, "the discard", func() bool { return len(list()) == 0 })
}
