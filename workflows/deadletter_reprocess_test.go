package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestDeadLetterReprocess runs one entry (by slice ID) or all of them
// again. Each runs as FetchSlice over its window under its own ID; a
// success removes the entry, the others stay. (The platform's automatic
// retry is off, so only the operator's requests run anything.)
func TestDeadLetterReprocess(t *testing.T) {
	a, b := failed(at("-2h"), "HTTP 500"), failed(at("-1h"), "HTTP 503")
	cases := []struct {
		name string
		sel  api.DeadLetterSelector
		ran  []string
		left []string
	}{
		{"one by slice id", api.DeadLetterSelector{SliceID: b.SliceID}, []string{b.SliceID}, []string{a.SliceID}},
		{"all", api.DeadLetterSelector{All: true}, []string{a.SliceID, b.SliceID}, []string{}},
		{"unknown slice id", api.DeadLetterSelector{SliceID: "slice/shop-x/nope"}, []string{}, []string{a.SliceID, b.SliceID}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := autoRetryOff(testPlatform(t))
			mockAlerts(env, 0)
			pages := watchPages(env)
			mockPages(env, pages, onePage, map[string]time.Duration{a.SliceID: 5 * time.Minute, b.SliceID: 5 * time.Minute})
			var during, after []api.DeadLetterEntry
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterReprocess, tc.sel) }, time.Minute)
			env.RegisterDelayedCallback(func() { during = list(t, env) }, 3*time.Minute)
			stopAt(env, 10*time.Minute, func() { after = list(t, env) })

			env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p, Entries: []api.DeadLetterEntry{a, b}})
			requireStopped(t, env)

			require.Equal(t, sortedCopy(tc.ran), sliceIDs(pages.all()))
			for _, c := range pages.all() {
				w := window(t, c.In.SliceID)
				require.Equal(t, w.Start.Add(-p.Overlap.D()), c.In.From)
				require.Equal(t, w.End, c.In.To)
			}
			require.Len(t, during, 2, "entries stay while they run")
			for _, e := range during {
				require.Equal(t, contains(tc.ran, e.SliceID), e.Reprocessing, e.SliceID)
			}
			require.Equal(t, tc.left, ids(after))
		})
	}
}

// TestDeadLetterReprocessFailsAgain: the slice fails again, its FetchSlice
// records the failure (the add signal, as the real RecordDeadLetter sends
// it), so the entry stays, counts a second failure and alerts again.
func TestDeadLetterReprocessFailsAgain(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	al := mockAlerts(env, 0)
	a := failed(at("-1h"), "HTTP 503")
	pages := watchPages(env)
	mockPages(env, pages, func(activities.FetchPageInput) (activities.FetchPageResult, error) {
		return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 401", activities.ErrPermanent, nil)
	}, nil)
	dl := mockDeadLetters(env, 0, true)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterReprocess, api.DeadLetterSelector{SliceID: a.SliceID}) }, time.Minute)
	var after []api.DeadLetterEntry
	stopAt(env, 10*time.Minute, func() { after = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p, Entries: []api.DeadLetterEntry{a}})
	requireStopped(t, env)

	require.Len(t, pages.all(), 1)
	require.Len(t, dl.all(), 1)
	require.Len(t, after, 1)
	e := after[0]
	require.Equal(t, a.SliceID, e.SliceID)
	require.Equal(t, 2, e.Failures)
	require.Equal(t, "HTTP 401", e.Error)
	require.Equal(t, activities.ErrPermanent, e.ErrorType)
	require.Equal(t, a.FirstFailedAt, e.FirstFailedAt)
	require.Equal(t, at("1m"), e.LastFailedAt)
	require.False(t, e.Reprocessing, "a finished reprocess must not look running")
	sent := al.all()
	require.Len(t, sent, 1)
	require.Equal(t, "dead_letter/"+a.SliceID+"/2", sent[0].Key)
}

// TestDeadLetterReprocessSplits: a reprocessed slice too dense for
// max_pages is replaced by its halves, which run at once; the half that
// succeeds leaves, the one that fails again stays with the failure counted.
func TestDeadLetterReprocessSplits(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.MaxPages = 2
	mockAlerts(env, 0)
	a := failed(at("-1h"), "too many pages")
	mid := at("-52m30s")
	firstHalf := api.SliceWorkflowID(platformName, a.Start, mid)
	secondHalf := api.SliceWorkflowID(platformName, mid, a.End)
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		switch in.SliceID {
		case a.SliceID:
			return activities.FetchPageResult{NextToken: nextToken(in), Fetched: 100}, nil
		case secondHalf:
			return activities.FetchPageResult{}, temporal.NewNonRetryableApplicationError("HTTP 400", activities.ErrPermanent, nil)
		}
		return onePage(in)
	}, nil)
	mockDeadLetters(env, 0, true)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterReprocess, api.DeadLetterSelector{All: true}) }, time.Minute)
	var after []api.DeadLetterEntry
	stopAt(env, 10*time.Minute, func() { after = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p, Entries: []api.DeadLetterEntry{a}})
	requireStopped(t, env)

	require.Equal(t, sortedCopy([]string{a.SliceID, firstHalf, secondHalf}), sliceIDs(pages.all()))
	require.Len(t, after, 1)
	e := after[0]
	require.Equal(t, secondHalf, e.SliceID)
	require.Equal(t, mid, e.Start)
	require.Equal(t, a.End, e.End)
	require.Equal(t, "HTTP 400", e.Error)
	require.Equal(t, 2, e.Failures)
	require.False(t, e.Reprocessing)
}
