package workflows_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/workflows"
)

// bulkPlatform is a shopify GraphQL platform whose slices of an hour or
// more run as bulk queries, looked at every 5s.
func bulkPlatform(t *testing.T) api.Settings {
	p := testPlatform(t)
	p.Kind = "shopify"
	p.PageSize = 50
	p.Bulk = &api.Bulk{Enabled: true, MinSpan: api.Duration(time.Hour), PollInterval: api.Duration(5 * time.Second)}
	require.NoError(t, config.ValidateSettings(p))
	return p
}

// TestSliceBulkBackfill: a wide slice starts a bulk query, waits on timers
// while it runs, downloads its result and completes without a page; a
// narrow one pages.
func TestSliceBulkBackfill(t *testing.T) {
	env := newEnv(t)
	p := bulkPlatform(t)
	var polls atomic.Int32
	env.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/1", Status: connectors.BulkCreated}, nil).Once()
	env.OnActivity(acts.PollBulk, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.BulkInput) (activities.BulkState, error) {
		status := connectors.BulkRunning
		if polls.Add(1) == 3 {
			status = connectors.BulkCompleted
		}
		return activities.BulkState{ID: in.ID, Status: status, HasURL: true}, nil
	})
	env.OnActivity(acts.DownloadBulk, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.BulkInput) (activities.FetchPageResult, error) {
		require.Equal(t, "gid://shopify/BulkOperation/1", in.ID)
		require.False(t, in.Partial)
		require.Equal(t, at("-2h").Add(-p.Overlap.D()), in.From, "the overlap is asked for")
		return activities.FetchPageResult{Fetched: 900, Inserted: 900}, nil
	}).Once()
	start := env.Now()
	res := runSlice(t, env, p, at("-2h"), at("-1h"))
	require.Equal(t, api.SliceCompleted, res.Outcome)
	require.Equal(t, 900, res.OrdersInserted)
	require.Equal(t, 1, res.BulkOperations)
	require.Equal(t, int32(3), polls.Load())
	require.GreaterOrEqual(t, env.Now().Sub(start), 15*time.Second, "three looks, 5s apart, on durable timers")

	narrow := newEnv(t)
	narrow.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(activities.FetchPageResult{Fetched: 3}, nil).Once()
	res = runSlice(t, narrow, p, at("-2h"), at("-1h30m"))
	require.Equal(t, api.SliceCompleted, res.Outcome)
	require.Zero(t, res.BulkOperations)
	require.Equal(t, 1, res.Pages)
}

// TestSliceBulkFailedFallsBackToPaging: a FAILED bulk query's partial data
// is stored, then the window is paged: nothing is lost.
func TestSliceBulkFailedFallsBackToPaging(t *testing.T) {
	env := newEnv(t)
	p := bulkPlatform(t)
	env.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/2", Status: connectors.BulkRunning}, nil).Once()
	env.OnActivity(acts.PollBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/2",
		Status: connectors.BulkFailed, ErrorCode: "TIMEOUT", HasPartial: true}, nil).Once()
	env.OnActivity(acts.DownloadBulk, mock.Anything, mock.MatchedBy(func(in activities.BulkInput) bool { return in.Partial })).
		Return(activities.FetchPageResult{Fetched: 40, Inserted: 40}, nil).Once()
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(activities.FetchPageResult{Fetched: 60, Inserted: 20, Unchanged: 40}, nil).Once()
	res := runSlice(t, env, p, at("-2h"), at("-1h"))
	require.Equal(t, api.SliceCompleted, res.Outcome)
	require.Equal(t, 60, res.OrdersInserted)
	require.Equal(t, 2, res.Pages, "the partial result and one page")
}

// TestSliceBulkExpiredRunsAgain: a result that expired before it was
// downloaded runs the query again.
func TestSliceBulkExpiredRunsAgain(t *testing.T) {
	env := newEnv(t)
	p := bulkPlatform(t)
	var starts atomic.Int32
	env.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(func(context.Context, activities.BulkInput) (activities.BulkState, error) {
		n := starts.Add(1)
		return activities.BulkState{ID: "gid://shopify/BulkOperation/" + string(rune('0'+n)), Status: connectors.BulkCompleted, HasURL: true}, nil
	})
	var downloads atomic.Int32
	env.OnActivity(acts.DownloadBulk, mock.Anything, mock.Anything).Return(func(context.Context, activities.BulkInput) (activities.FetchPageResult, error) {
		if downloads.Add(1) == 1 {
			return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("expired", activities.ErrBulkExpired, nil)
		}
		return activities.FetchPageResult{Fetched: 5, Inserted: 5}, nil
	})
	res := runSlice(t, env, p, at("-2h"), at("-1h"))
	require.Equal(t, api.SliceCompleted, res.Outcome)
	require.Equal(t, 2, res.BulkOperations)
	require.Equal(t, 5, res.OrdersInserted)
}

// TestSliceBulkCancelled: cancelling the slice while its bulk query runs
// cancels the query.
func TestSliceBulkCancelled(t *testing.T) {
	env := newEnv(t)
	p := bulkPlatform(t)
	env.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/3", Status: connectors.BulkRunning}, nil).Once()
	env.OnActivity(acts.PollBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/3", Status: connectors.BulkRunning}, nil)
	var cancelled atomic.Value
	env.OnActivity(acts.CancelBulk, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.BulkInput) error {
		cancelled.Store(in.ID)
		return nil
	}).Once()
	env.RegisterDelayedCallback(env.CancelWorkflow, 12*time.Second)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: api.SliceWorkflowID(p.Name, at("-2h"), at("-1h"))})
	env.ExecuteWorkflow(workflows.FetchSlice, api.SliceInput{Platform: p, Start: at("-2h"), End: at("-1h"), LocalFirst: true})
	require.True(t, env.IsWorkflowCompleted())
	var canceled *temporal.CanceledError
	require.ErrorAs(t, env.GetWorkflowError(), &canceled)
	require.Equal(t, "gid://shopify/BulkOperation/3", cancelled.Load())
}

// TestSliceBulkNeverCompletesBoundedByHistory: a bulk query that runs for
// as long as it is looked at, then is cancelled by someone else, three
// runs over, would grow the slice's history past Temporal's 51,200-event
// limit (~11 events a look); the slice gives up at its event budget,
// cancels the query and pages.
func TestSliceBulkNeverCompletesBoundedByHistory(t *testing.T) {
	env := newEnv(t)
	p := bulkPlatform(t)
	const eventsPerLook = 11
	var starts, looks, pages atomic.Int32
	perRun := map[string]int{}
	env.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(func(context.Context, activities.BulkInput) (activities.BulkState, error) {
		n := starts.Add(1)
		return activities.BulkState{ID: "gid://shopify/BulkOperation/" + string(rune('0'+n)), Status: connectors.BulkRunning}, nil
	})
	env.OnActivity(acts.PollBulk, mock.Anything, mock.Anything).Return(func(_ context.Context, in activities.BulkInput) (activities.BulkState, error) {
		env.SetCurrentHistoryLength(int(looks.Add(1)) * eventsPerLook)
		perRun[in.ID]++
		status := connectors.BulkRunning
		if perRun[in.ID] == 1999 {
			status = connectors.BulkCanceled
		}
		return activities.BulkState{ID: in.ID, Status: status}, nil
	})
	env.OnActivity(acts.CancelBulk, mock.Anything, mock.Anything).Return(nil)
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(func(context.Context, activities.FetchPageInput) (activities.FetchPageResult, error) {
		pages.Add(1)
		return activities.FetchPageResult{Fetched: 3, Inserted: 3}, nil
	})
	res := runSlice(t, env, p, at("-2h"), at("-1h"))
	require.Equal(t, api.SliceCompleted, res.Outcome)
	require.Equal(t, int32(1), pages.Load(), "the window is paged")
	require.Less(t, int(looks.Load())*eventsPerLook, 51_200/2, "the bulk waits leave the paging more than half the history limit")
}

// TestSliceBulkNeverCompletesBoundedByTime: with a long poll interval a
// bulk query that never completes would be looked at for two weeks
// (maxBulkPolls looks); the slice gives up after its time budget, cancels
// the query and pages.
func TestSliceBulkNeverCompletesBoundedByTime(t *testing.T) {
	env := newEnv(t)
	p := bulkPlatform(t)
	p.Bulk.PollInterval = api.Duration(10 * time.Minute)
	require.NoError(t, config.ValidateSettings(p))
	env.OnActivity(acts.StartBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/9", Status: connectors.BulkRunning}, nil).Once()
	env.OnActivity(acts.PollBulk, mock.Anything, mock.Anything).Return(activities.BulkState{ID: "gid://shopify/BulkOperation/9", Status: connectors.BulkRunning}, nil)
	var cancelled atomic.Int32
	env.OnActivity(acts.CancelBulk, mock.Anything, mock.Anything).Return(func(context.Context, activities.BulkInput) error {
		cancelled.Add(1)
		return nil
	}).Once()
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(activities.FetchPageResult{Fetched: 3, Inserted: 3}, nil).Once()
	start := env.Now()
	res := runSlice(t, env, p, at("-2h"), at("-1h"))
	require.Equal(t, api.SliceCompleted, res.Outcome)
	require.Equal(t, 1, res.Pages)
	require.Equal(t, int32(1), cancelled.Load(), "the query is cancelled")
	require.Less(t, env.Now().Sub(start), 7*time.Hour, "given up within the slice's bulk budget (6h), not after 2,000 looks")
}
