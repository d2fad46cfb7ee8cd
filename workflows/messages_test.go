package workflows_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestSliceRepeatedTokenFailsAtOnce: a platform that hands out a next-page
// token it handed out before (the same one again, or a cycle) pages
// forever; the slice fails on the spot, naming both pages, instead of
// splitting down to one-second windows.
func TestSliceRepeatedTokenFailsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tokens []string // the token page i returns
		pages  int
		want   string
	}{
		{"same token again", []string{"A", "A"}, 2, "page 2 returned the next-page token that page 1 returned before"},
		{"a cycle", []string{"A", "B", "C", "B"}, 4, "page 4 returned the next-page token that page 2 returned before"},
		{"a cycle of empty pages", []string{"A", "B", "A"}, 3, "page 3 returned the next-page token that page 1 returned before"},
		{"an order-bearing page repeats its own token", []string{"A", "A"}, 2, "page 2 returned the next-page token that page 1 returned before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.MaxPages = 100
			pages := watchPages(env)
			mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
				fetched := 1
				if strings.Contains(tc.name, "empty") {
					fetched = 0
				}
				return activities.FetchPageResult{NextToken: tc.tokens[in.Page-1], Fetched: fetched}, nil
			}, nil)
			dl := mockDeadLetters(env, 0, false)

			res := runSlice(t, env, p, at("-1h"), at("-45m"))

			require.Equal(t, api.SliceFailed, res.Outcome)
			require.Equal(t, activities.ErrPermanent, res.ErrorType)
			require.Len(t, pages.all(), tc.pages, "no request after the repeat")
			require.Len(t, dl.all(), 1)
			require.Contains(t, dl.all()[0].Error, tc.want)
			require.NotContains(t, dl.all()[0].Error, `"A"`, "the token itself is not repeated")
		})
	}
}

// TestSliceFollowsAStallingPlatform: an empty page that hands back the
// token it was asked with ("nothing yet, ask again") is followed, a few
// times in a row; past maxStalls (5) it is a cycle too.
func TestSliceFollowsAStallingPlatform(t *testing.T) {
	for _, tc := range []struct {
		stalls  int
		outcome string
	}{{3, api.SliceCompleted}, {6, api.SliceFailed}} {
		t.Run(fmt.Sprint(tc.stalls, " stalls"), func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.MaxPages = 100
			pages := watchPages(env)
			mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
				switch {
				case in.Page == 1:
					return activities.FetchPageResult{NextToken: "A", Fetched: 1}, nil
				case in.Page <= 1+tc.stalls:
					return activities.FetchPageResult{NextToken: "A"}, nil // empty, same token
				default:
					return activities.FetchPageResult{Fetched: 1}, nil
				}
			}, nil)
			mockDeadLetters(env, 0, false)

			res := runSlice(t, env, p, at("-1h"), at("-45m"))

			require.Equal(t, tc.outcome, res.Outcome, res.Error)
		})
	}
}

// TestCursorRefusesUnknownFields: a signal or update payload with a field
// the message does not have is refused (the update answers with the field's
// name; the signal leaves it in last_error) and changes nothing.
func TestCursorRefusesUnknownFields(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-1h").Format(time.RFC3339)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)

	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	cfg["page_size"], cfg["bogus"] = 9, 1

	var pauseUpd, configUpd, reprocessUpd *updateOutcome
	var afterSignal, final api.CursorStatus
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalPause, json.RawMessage(`{"reason":"x","bogus":1}`))
	}, time.Minute)
	env.RegisterDelayedCallback(func() { afterSignal = status(t, env) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalConfig, cfg) }, 3*time.Minute)
	env.RegisterDelayedCallback(func() {
		pauseUpd = sendUpdate(env, api.SignalPause, json.RawMessage(`{"reasn":"typo"}`))
		configUpd = sendUpdate(env, api.SignalConfig, cfg)
		reprocessUpd = sendUpdate(env, api.SignalReprocess, map[string]any{"from": "2026-03-02T11:00:00Z", "to": "2026-03-02T11:15:00Z", "forse": true})
	}, 4*time.Minute)
	stopAt(env, 10*time.Minute, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.False(t, afterSignal.Paused, "a pause with an unknown field is refused")
	require.Contains(t, afterSignal.LastError, `pause signal: payload {"reason":"x","bogus":1} is not valid: json: unknown field "bogus"`)
	require.Contains(t, final.LastError, `config signal:`)
	require.Contains(t, final.LastError, `field "bogus": unknown field`)
	for name, u := range map[string]*updateOutcome{"pause": pauseUpd, "config": configUpd, "reprocess": reprocessUpd} {
		require.Error(t, u.rejected, name)
		require.Contains(t, u.rejected.Error(), "unknown field", name)
		require.Contains(t, u.rejected.Error(), map[string]string{"pause": "reasn", "config": "bogus", "reprocess": "forse"}[name], name)
	}
	require.False(t, final.Paused)
	require.Empty(t, final.Queued, "nothing reprocessed")
	for _, c := range pages.all() {
		require.Equal(t, p.PageSize, c.In.Platform.PageSize, "the refused config changed nothing")
	}
}

// TestDeadLetterRefusesWhatDoesNotBelong: an add for another platform's
// slice, an entry whose ID and window disagree, and malformed or unknown
// selectors are refused: no entry, no alert, counted with the reason in
// the status query.
func TestDeadLetterRefusesWhatDoesNotBelong(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	al := mockAlerts(env, 0)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	good := failed(at("-1h"), "HTTP 503")
	other := good
	other.Platform, other.SliceID = "shop-y", api.SliceWorkflowID("shop-y", good.Start, good.End)
	claimed := other
	claimed.Platform = platformName // claims to be ours, but the ID says shop-y
	skewed := good
	skewed.End = skewed.End.Add(time.Hour)

	signals := []struct {
		name    string
		payload any
	}{
		{api.SignalDeadLetterAdd, other},
		{api.SignalDeadLetterAdd, claimed},
		{api.SignalDeadLetterAdd, skewed},
		{api.SignalDeadLetterAdd, json.RawMessage(`{"slice_id": 7}`)},
		{api.SignalDeadLetterReprocess, json.RawMessage(`{"al": true}`)},
		{api.SignalDeadLetterDiscard, json.RawMessage(`"everything"`)},
	}
	for i, s := range signals {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(s.name, s.payload) }, time.Duration(i+1)*time.Minute)
	}
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, good) }, 10*time.Minute)
	var st api.DeadLetterStatus
	var entries []api.DeadLetterEntry
	stopAt(env, 14*time.Minute, func() { // before good's automatic try, due at 15m
		entries = list(t, env)
		v, err := env.QueryWorkflow(api.QueryDeadLetterStatus)
		require.NoError(t, err)
		require.NoError(t, v.Get(&st))
	})

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	require.Equal(t, []string{good.SliceID}, ids(entries))
	require.Len(t, al.all(), 1, "alerts only for the entry that belongs")
	require.Equal(t, len(signals), st.Rejected)
	require.Equal(t, 1, st.Entries)
	require.Contains(t, st.LastError, "discard signal:")
	require.Empty(t, pages.all(), "nothing reprocessed")
}

// TestDeadLetterOldRunsKeepLenientSignals: a run recorded before
// strict-signal-payloads accepted an add with an unknown field, even for
// another platform's slice; on replay it still does (GetVersion answers
// DefaultVersion), so its history replays unchanged.
func TestDeadLetterOldRunsKeepLenientSignals(t *testing.T) {
	env := newEnv(t)
	env.OnGetVersion("strict-signal-payloads", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	mockAlerts(env, 0)
	good := failed(at("-1h"), "HTTP 503")
	other := good
	other.Platform, other.SliceID = "shop-y", api.SliceWorkflowID("shop-y", good.Start, good.End)
	raw, err := json.Marshal(other)
	require.NoError(t, err)
	var withBogus map[string]any
	require.NoError(t, json.Unmarshal(raw, &withBogus))
	withBogus["bogus"] = 1
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterAdd, withBogus) }, time.Minute)
	var entries []api.DeadLetterEntry
	stopAt(env, 2*time.Minute, func() { entries = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: testPlatform(t)})
	requireStopped(t, env)

	require.Equal(t, []string{other.SliceID}, ids(entries))
}
