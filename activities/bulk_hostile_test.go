package activities

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/sim"
)

// completedBulkOnSim runs a bulk query on a simulator playing bulk until
// it completes and returns the activities and the download's input.
func completedBulkOnSim(t *testing.T, bulk sim.BulkConfig) (*Activities, BulkInput, *testsuite.TestActivityEnvironment) {
	t.Helper()
	s, f, p, st := bulkShop(t, 300, bulk)
	acts := &Activities{Store: st, Connectors: NewConnectorCache(f), Limiters: NewLimiters()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	in, _ := completedBulk(t, env, acts, p, s.Now())
	return acts, in, env
}

// TestDownloadBulkEndlessFile: an order followed by line items without end
// is read with heartbeats (so a stuck attempt would be cancelled by the
// heartbeat timeout) and ends in a non-retryable error, on which the
// slice pages its window; nothing of the file is retried.
func TestDownloadBulkEndlessFile(t *testing.T) {
	acts, in, env := completedBulkOnSim(t, sim.BulkConfig{Hostile: sim.BulkEndlessLines, EndlessBytes: 64 << 20})
	beats := 0
	var last converter.EncodedValues
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) { beats++; last = d })
	_, err := env.ExecuteActivity(acts.DownloadBulk, in)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.True(t, app.NonRetryable(), "a file past its bounds is not read again: %v", err)
	require.Equal(t, ErrPermanent, app.Type())
	require.Contains(t, err.Error(), "line items")
	require.Positive(t, beats, "heartbeats while no batch completes")
	var prog bulkProgress
	require.NoError(t, last.Get(&prog))
	require.Zero(t, prog.Batches)
}

// TestDownloadBulkRefusesLoopbackURL: the operation's URL pointing at a
// loopback service is refused without a request, and what it would have
// answered cannot reach the error: the download fails permanently and the
// slice pages.
func TestDownloadBulkRefusesLoopbackURL(t *testing.T) {
	acts, in, env := completedBulkOnSim(t, sim.BulkConfig{Hostile: sim.BulkForeignURL, Target: "http://127.0.0.1:27999/latest/meta-data/iam/security-credentials/"})
	_, err := env.ExecuteActivity(acts.DownloadBulk, in)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.True(t, app.NonRetryable())
	require.Contains(t, err.Error(), "bulk result URL refused")
}
