package workflows

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
)

// TestReplayRecordedHistories replays every history recorded from real runs
// on the embedded server (make histories). A change to workflow code that
// takes a different path on an old history fails here and needs
// workflow.GetVersion.
func TestReplayRecordedHistories(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 4, "recorded histories are missing; run make histories")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			replayer := worker.NewWorkflowReplayer()
			Register(replayer)
			require.NoError(t, replayer.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}
