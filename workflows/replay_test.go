package workflows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
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
