package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// berlinNights are the platform's work windows in these tests: weekday
// nights in Berlin (UTC+1 in March, so 23:00-05:00 UTC), and a weekend
// hour that must not be picked while a weekday night comes sooner.
var berlinNights = []string{"MON-FRI 00:00-06:00 Europe/Berlin", "SAT,SUN 08:00-09:00"}

var (
	monNightOpens  = time.Date(2026, 3, 2, 23, 0, 0, 0, time.UTC) // Tue 00:00 Berlin
	tueNightCloses = time.Date(2026, 3, 3, 5, 0, 0, 0, time.UTC)  // Tue 06:00 Berlin
	tueNightOpens  = time.Date(2026, 3, 3, 23, 0, 0, 0, time.UTC) // Wed 00:00 Berlin
)

// TestCursorSleepsOutsideWorkWindows starts a cursor on Monday noon UTC,
// outside its windows, with two hours of backlog. It sleeps on a durable
// timer until the window opens (status says so, and until when), fetches
// only inside the window, stops when the window closes and wakes again at
// the next night's opening. The test clock skips the hours in between.
func TestCursorSleepsOutsideWorkWindows(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Windows = berlinNights
	require.NoError(t, config.ValidateSettings(p))
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)

	var asleep, closed api.CursorStatus
	env.RegisterDelayedCallback(func() { asleep = status(t, env) }, time.Hour)
	env.RegisterDelayedCallback(func() { closed = status(t, env) }, tueNightCloses.Add(time.Hour).Sub(t0))
	var final api.CursorStatus
	stopAt(env, tueNightOpens.Add(30*time.Minute).Sub(t0), func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Equal(t, api.WaitWindow, asleep.Waiting)
	require.Equal(t, monNightOpens, asleep.WaitUntil.UTC(), "wait_until is the next opening")
	require.Equal(t, at("-2h"), asleep.Watermark, "nothing fetched while outside the window")
	require.Empty(t, asleep.InFlight)

	calls := pages.all()
	require.NotEmpty(t, calls)
	require.Equal(t, monNightOpens, calls[0].At, "fetching starts the moment the window opens")
	for _, c := range calls {
		inside := !c.At.Before(monNightOpens) && c.At.Before(tueNightCloses) || !c.At.Before(tueNightOpens)
		require.True(t, inside, "%s fetched at %s, outside the work windows", c.In.SliceID, c.At)
	}
	require.NotEmpty(t, pages.since(tueNightOpens), "fetching resumes the next night")

	// The window closed at 05:00 UTC; an hour later the cursor sleeps until Wednesday's night.
	require.Equal(t, api.WaitWindow, closed.Waiting)
	require.Equal(t, tueNightOpens, closed.WaitUntil.UTC())
	require.False(t, closed.Watermark.Before(tueNightCloses.Add(-p.Interval.D()-p.Settle.D()-p.Interval.D())),
		"the night's work caught up with the present: watermark %s", closed.Watermark)
	require.Zero(t, final.Counts.SlicesFailed)
}

// TestReprocessOutsideWindowWaitsUnlessForced asks, on Monday afternoon
// (outside the windows), for an earlier range again. Without force the
// request waits for the night like everything else; with force it runs at
// once, while the regular slices still wait for the window.
func TestReprocessOutsideWindowWaitsUnlessForced(t *testing.T) {
	for _, force := range []bool{false, true} {
		name := map[bool]string{false: "not forced", true: "forced"}[force]
		t.Run(name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Windows = berlinNights
			p.Start = t0.Format(time.RFC3339) // no backlog: only the reprocess has work before the night
			require.NoError(t, config.ValidateSettings(p))
			pages := watchPages(env)
			mockPages(env, pages, onePage, nil)

			askAt := at("1h")
			req := api.ReprocessRequest{From: at("-5h"), To: at("-4h"), Force: force}
			want := tiles(req.From, req.To, p.Interval.D())
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalReprocess, req) }, askAt.Sub(t0))
			var waiting api.CursorStatus
			env.RegisterDelayedCallback(func() { waiting = status(t, env) }, askAt.Sub(t0)+time.Hour)
			stopAt(env, monNightOpens.Add(30*time.Minute).Sub(t0), nil)

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)

			isReprocess := map[string]bool{}
			for _, id := range want {
				isReprocess[id] = true
			}
			var reprocessed []fetchCall
			for _, c := range pages.all() {
				if isReprocess[c.In.SliceID] {
					reprocessed = append(reprocessed, c)
					continue
				}
				require.False(t, c.At.Before(monNightOpens), "regular slice %s fetched at %s, outside the window", c.In.SliceID, c.At)
			}
			require.Equal(t, sortedCopy(want), sliceIDs(reprocessed), "the requested range runs exactly once")
			require.Equal(t, api.WaitWindow, waiting.Waiting)
			require.Equal(t, monNightOpens, waiting.WaitUntil.UTC())
			for _, c := range reprocessed {
				if force {
					require.Equal(t, askAt, c.At, "a forced reprocess runs at once")
				} else {
					require.Equal(t, monNightOpens, c.At, "a reprocess waits for the window")
				}
			}
			if force {
				require.Empty(t, unfinished(waiting), "the forced range is done an hour later")
			} else {
				require.Len(t, waiting.Queued, len(want), "the range waits, queued")
			}
		})
	}
}
