package workflows

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
)

// historiesDir holds one folder per release (testdata/histories/v0.1, ...),
// each recorded once by `make histories RELEASE=...` and never rewritten.
var historiesDir = filepath.Join("..", "testdata", "histories")

// firstRelease is the oldest release folder; it must always be there.
const firstRelease = "v0.1"

// recordedHistories lists every recorded history, by release folder.
func recordedHistories(t *testing.T) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(historiesDir)
	require.NoError(t, err)
	out := map[string][]string{}
	for _, e := range entries {
		require.True(t, e.IsDir(), "%s: histories live in a release folder (testdata/histories/<release>/)", e.Name())
		files, err := filepath.Glob(filepath.Join(historiesDir, e.Name(), "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "release folder %s is empty", e.Name())
		out[e.Name()] = files
	}
	require.GreaterOrEqual(t, len(out[firstRelease]), 9, "the %s histories are missing; they are never removed", firstRelease)
	return out
}

// TestReplayRecordedHistories replays every history recorded from real runs
// on the embedded server, of every release. A change to workflow code that
// takes a different path on an old history fails here and needs a change ID
// in versions.go (see doc.go, "Versioning"). The SDK's replayer compares
// command types and order; TestReplayIssuesTheRecordedCommands compares
// their content as well.
func TestReplayRecordedHistories(t *testing.T) {
	for release, files := range recordedHistories(t) {
		for _, f := range files {
			t.Run(release+"/"+filepath.Base(f), func(t *testing.T) {
				replayer := worker.NewWorkflowReplayer()
				Register(replayer)
				require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, f))
			})
		}
	}
}

// TestReplayIssuesTheRecordedCommands replays every recorded history and
// compares the content of each command the code issues with the event the
// history recorded for it: a child workflow's ID, input, task queue,
// policies and search attributes; an activity's type and input; a timer's
// duration; a version marker's change ID and version; the continue-as-new
// input. The SDK's replayer compares only types and order, so without this
// a change that starts other slices, or the same slices in another order,
// would still replay.
func TestReplayIssuesTheRecordedCommands(t *testing.T) {
	for release, files := range recordedHistories(t) {
		for _, f := range files {
			t.Run(release+"/"+filepath.Base(f), func(t *testing.T) {
				h := readHistory(t, f)
				started := h.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
				rec := &commandRecorder{workflowType: started.GetWorkflowType().GetName()}
				replayer, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
					Interceptors: []interceptor.WorkerInterceptor{rec},
				})
				require.NoError(t, err)
				Register(replayer)
				require.NoError(t, replayer.ReplayWorkflowHistoryWithOptions(nil, h, worker.ReplayWorkflowHistoryOptions{
					OriginalExecution: workflow.Execution{ID: workflowIDOf(t, started), RunID: started.GetOriginalExecutionRunId()},
				}))

				want, _ := recordedCommands(h)
				require.NotEmpty(t, want)
				if d := diffCommands(want, rec.cmds, sameRecordedInput); d != "" {
					t.Fatalf("%s: replay issued other commands than the history recorded: %s", filepath.Base(f), d)
				}
			})
		}
	}
}

// workflowIDOf is the ID the workflow ran under, which histories do not
// record: FetchSlice reads it (the slice ID in every page request); the
// others get the ID they are started with, so replay runs as they ran.
func workflowIDOf(t *testing.T, started *historypb.WorkflowExecutionStartedEventAttributes) string {
	t.Helper()
	switch started.GetWorkflowType().GetName() {
	case api.SliceWorkflowType:
		var in api.SliceInput
		mustDecode(started.GetInput(), &in)
		return api.SliceWorkflowID(in.Platform.Name, in.Start, in.End)
	case api.CursorWorkflowType:
		var in api.CursorInput
		mustDecode(started.GetInput(), &in)
		return api.CursorWorkflowID(in.Platform.Name)
	case api.DeadLetterWorkflowType:
		var in api.DeadLetterInput
		mustDecode(started.GetInput(), &in)
		return api.DeadLetterWorkflowID(in.Platform.Name)
	case api.DeliveryWorkflowType:
		var in api.DeliveryInput
		mustDecode(started.GetInput(), &in)
		return api.DeliveryWorkflowID(in.Destination.Name)
	case api.RefetchWorkflowType:
		var in api.RefetchInput
		mustDecode(started.GetInput(), &in)
		return api.RefetchWorkflowID(in.Platform.Name, in.OrderID)
	case api.ReconcileWorkflowType:
		var in api.ReconcileInput
		mustDecode(started.GetInput(), &in)
		return api.ReconcileWorkflowID(in.Platform.Name)
	}
	t.Fatalf("unknown workflow type %s", started.GetWorkflowType().GetName())
	return ""
}

// sliceInputVersions are the input versions of api.SliceInput
// (versions.go), in the order they were added, as the data converter
// writes them when set.
var sliceInputVersions = []string{`,"local_first":true`, `,"failed_as_error":true`}

// withoutNewerSliceInputVersions removes from a slice input the code gives
// on replay the input versions a recorded one does not carry: cursors and
// dead-letter workflows start slices with them from the release that added
// them, their replay of an older history asks for them too, and the
// replayer, which does not compare inputs, lets that pass. The slice
// recorded without them keeps the rule it had.
func withoutNewerSliceInputVersions(want, got string) string {
	for _, v := range sliceInputVersions {
		if !strings.Contains(want, strings.SplitN(v, ":", 2)[0]) {
			got = strings.Replace(got, v, "", 1)
		}
	}
	return got
}

// sameRecordedInput compares an input the code gives a command on replay
// with the one the history recorded. Input versions (versions.go) are the
// one allowed difference: a field that tells the receiver to take the new
// path, which histories from before the version do not carry.
func sameRecordedInput(kind, want, got string) error {
	if kind == "child" {
		got = withoutNewerSliceInputVersions(want, got)
	}
	want, got = settingsByReference(want), settingsByReference(got)
	if kind == "continue-as-new" && strings.Contains(want, `"pending"`) && !strings.Contains(want, `"slices"`) {
		// A cursor of v0.1 carried its slices in the v0.1 form only; today's
		// carries them in its own form too, and must carry the v0.1 form
		// as v0.1 did (api.CursorState).
		return sameForV01(kind, want, got)
	}
	if want != got {
		return fmt.Errorf("\nwant %s\ngot  %s", indentJSON(want), indentJSON(got))
	}
	return nil
}

// settingsByReference is an input with every platform's settings (the
// "platform" object of cursor, slice, dead-letter, page and bulk inputs)
// as api.Settings reads them, and every destination's (the "destination"
// object of Delivery inputs) as api.DestinationSettings reads them, keys
// sorted. Delivery inputs recorded before destinations travelled by
// reference carry the whole config.Destination (url, secret...). Histories before v0.8 recorded
// the whole config.Platform there; from v0.8 inputs carry settings by
// reference, without identity (endpoint, credentials, allow_plaintext),
// which a run replayed from such a history gives its commands: that is
// the one change of form allowed, and only that. Everything else, the
// options a recorded run decides its bulk slices by included
// (api.Settings.LegacyOptions), must match.
func settingsByReference(input string) string {
	parts := strings.Split(input, " | ")
	for i, part := range parts {
		dec := json.NewDecoder(strings.NewReader(part))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			continue
		}
		b, err := json.Marshal(asSettings(v))
		if err != nil {
			continue
		}
		parts[i] = string(b)
	}
	return strings.Join(parts, " | ")
}

func asSettings(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if p, ok := e.(map[string]any); ok && (k == "platform" || k == "destination") {
				raw, _ := json.Marshal(p)
				var s any = &api.Settings{}
				if k == "destination" {
					s = &api.DestinationSettings{}
				}
				if json.Unmarshal(raw, s) == nil {
					raw, _ = json.Marshal(s)
					dec := json.NewDecoder(strings.NewReader(string(raw)))
					dec.UseNumber()
					var back any
					if dec.Decode(&back) == nil {
						x[k] = back
						continue
					}
				}
			}
			x[k] = asSettings(e)
		}
	case []any:
		for i, e := range x {
			x[i] = asSettings(e)
		}
	}
	return v
}

// readHistory reads one recorded history file.
func readHistory(t *testing.T, path string) *historypb.History {
	t.Helper()
	raw, err := os.Open(path)
	require.NoError(t, err)
	defer raw.Close()
	h, err := client.HistoryFromJSON(raw, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return h
}
