package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
)

// TestStatusTableShowsPlatformState: the STATE column leads with the word
// the PlatformState search attribute holds, then the wait; a paused cursor
// or an open breaker is said once, by its wait reason.
func TestStatusTableShowsPlatformState(t *testing.T) {
	now := time.Date(2026, 11, 22, 13, 0, 0, 0, time.UTC)
	row := func(name, state, waiting string, until time.Time) platformStatus {
		return platformStatus{Platform: name, Running: true, Cursor: &api.CursorStatus{
			Platform: name, Watermark: now.Add(-time.Hour), PlatformState: state, Waiting: waiting, WaitUntil: until,
			Paused: state == "paused" || state == "breaker_open", InFlight: []api.SliceView{},
		}}
	}
	rows := []platformStatus{
		row("a", "backfilling", api.WaitConcurrency, time.Time{}),
		row("b", "caught_up", api.WaitSettling, now.Add(time.Minute)),
		row("c", "paused", api.WaitPaused+": maintenance", time.Time{}),
		row("d", "breaker_open", api.WaitBreaker+": 5 failed slices in a row", time.Time{}),
		row("e", "", api.WaitSettling, time.Time{}), // a worker older than PlatformState
	}
	var out bytes.Buffer
	require.NoError(t, renderStatusTable(&out, rows, now))
	for _, want := range []string{
		"backfilling, concurrency limit",
		"caught_up, settling until 11-22 13:01:00Z",
		"  paused: maintenance",
		"  circuit breaker open: 5 failed slices in a row",
	} {
		require.Contains(t, out.String(), want)
	}
	require.NotContains(t, out.String(), "paused, paused")
	require.Equal(t, "settling", describeState(rows[4].Cursor))
}

// TestStatusStateSaysUndeliveredAlerts: alerts the webhook has not taken
// (workflows/alerts.go hands them from run to run) show in STATE.
func TestStatusStateSaysUndeliveredAlerts(t *testing.T) {
	st := &api.CursorStatus{PlatformState: "caught_up", Waiting: api.WaitSettling, AlertsPending: 2}
	require.Equal(t, "caught_up, settling; 2 alert(s) not delivered", describeState(st))
	st.AlertsPending = 0
	require.Equal(t, "caught_up, settling", describeState(st))
}

// TestStatusStateSaysTheStatedRate: a platform that states a rate below
// the configured one is paced to it, and STATE says so.
func TestStatusStateSaysTheStatedRate(t *testing.T) {
	st := &api.CursorStatus{PlatformState: "backfilling", Waiting: api.WaitConcurrency, StatedRate: 0.0167}
	st.Settings.RateLimit.RPS = 0.5
	require.Equal(t, "backfilling, concurrency limit; platform states 0.0167 req/s", describeState(st))
	st.StatedRate = 2
	require.Equal(t, "backfilling, concurrency limit", describeState(st), "a statement above the setting changes nothing")
}

func TestLaggingOnlyKeepsLaggardsAndUnreadRows(t *testing.T) {
	rows := []platformStatus{
		{Platform: "fresh", Cursor: &api.CursorStatus{LagSeconds: 60}},
		{Platform: "behind", Cursor: &api.CursorStatus{LagSeconds: 7200}},
		{Platform: "unread", Error: "query failed"},
		{Platform: "not-started"},
	}
	names := func(rs []platformStatus) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Platform)
		}
		return out
	}
	require.Equal(t, []string{"behind", "unread"}, names(laggingOnly(rows, time.Hour)))
	require.Len(t, laggingOnly(rows, 0), 4, "no filter")
}

// TestStatusStateSaysTheIntervalInForce: a platform with webhook_interval
// shows which interval its cursor polls at and why.
func TestStatusStateSaysTheIntervalInForce(t *testing.T) {
	last := time.Date(2026, 11, 26, 10, 8, 31, 0, time.UTC)
	st := &api.CursorStatus{PlatformState: "caught_up", Waiting: api.WaitSettling, Pacing: &api.Pacing{
		Interval: "15m0s", Live: true, LastEventAt: last, Events: 24, CheckedAt: last.Add(time.Minute), LiveFor: "30m0s"}}
	require.Equal(t, "caught_up, settling; polling every 15m0s (webhooks live, last event 11-26 10:08:31Z)", describeState(st))
	st.Pacing.Live, st.Pacing.Interval = false, "1m0s"
	require.Equal(t, "caught_up, settling; polling every 1m0s (webhooks not live since 11-26 10:38:31Z)", describeState(st))
	st.Pacing.LastEventAt = time.Time{}
	require.Equal(t, "caught_up, settling; polling every 1m0s (webhooks not live: no event yet)", describeState(st))
	st.Pacing.CheckedAt, st.Pacing.Reason = time.Time{}, "webhooks not checked yet (checked when the next slice settles)"
	require.Equal(t, "caught_up, settling; polling every 1m0s (webhooks not checked yet (checked when the next slice settles))", describeState(st))
	st.Pacing = nil
	require.Equal(t, "caught_up, settling", describeState(st))
}
