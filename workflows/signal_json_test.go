package workflows_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestCursorSignalsTakePlainJSON sends every cursor signal the way
// `temporal workflow signal --input '{...}'` does: plain JSON objects with
// RFC3339 times and duration strings, or no input at all. A payload that is
// not valid ends up in last_error; the cursor keeps running.
func TestCursorSignalsTakePlainJSON(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Start = at("-1h").Format(time.RFC3339)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)

	// The platform's entry as an operator would write it: JSON, durations as strings.
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	require.Equal(t, "15m0s", cfg["interval"], "durations travel as strings")
	cfg["page_size"] = 9

	var paused, queued, final api.CursorStatus
	steps := []struct {
		at time.Duration
		do func()
	}{
		{10 * time.Minute, func() { env.SignalWorkflow(api.SignalPause, map[string]any{"reason": "from the CLI"}) }},
		{11 * time.Minute, func() { paused = status(t, env) }},
		{12 * time.Minute, func() {
			env.SignalWorkflow(api.SignalReprocess, map[string]any{"from": "2026-03-02T11:00:00Z", "to": "2026-03-02T11:30:00Z"})
		}},
		{13 * time.Minute, func() { queued = status(t, env) }},
		{14 * time.Minute, func() { env.SignalWorkflow(api.SignalConfig, cfg) }},
		{15 * time.Minute, func() { env.SignalWorkflow(api.SignalResume, nil) }},
		{20 * time.Minute, func() {
			env.SignalWorkflow(api.SignalReprocess, json.RawMessage(`{"from": "yesterday", "to": "today"}`))
		}},
	}
	for _, s := range steps {
		env.RegisterDelayedCallback(s.do, s.at)
	}
	stopAt(env, 25*time.Minute, func() { final = status(t, env) })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)

	require.Equal(t, "paused: from the CLI", paused.Waiting)
	require.Equal(t, tiles(at("-1h"), at("-30m"), 15*time.Minute), refIDs(queued.Queued))
	resumed := pages.since(at("15m"))
	require.Equal(t, tiles(at("-1h"), at("-30m"), 15*time.Minute), sliceIDs(resumed[:2]))
	for _, c := range resumed {
		require.Equal(t, 9, c.In.Platform.PageSize, "config from a JSON map")
	}
	require.False(t, final.Paused)
	require.Contains(t, final.LastError, `reprocess signal: payload {"from":"yesterday","to":"today"} is not valid: parsing time "yesterday"`)
	require.Equal(t, at("15m"), final.Watermark, "a bad payload does not stop the cursor")
}

// TestDeadLetterSignalsTakePlainJSON adds, reprocesses and discards with
// plain JSON maps.
func TestDeadLetterSignalsTakePlainJSON(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	mockAlerts(env, 0)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	a, b := sliceID(at("-2h"), 15*time.Minute), sliceID(at("-1h"), 15*time.Minute)
	entry := func(id, start, end string) map[string]any {
		return map[string]any{"slice_id": id, "platform": platformName, "start": start, "end": end,
			"error": "HTTP 503", "attempts": 3, "first_failed_at": "2026-03-02T11:55:00Z", "last_failed_at": "2026-03-02T11:55:00Z"}
	}
	var listed, final []api.DeadLetterEntry
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(api.SignalDeadLetterAdd, entry(a, "2026-03-02T10:00:00Z", "2026-03-02T10:15:00Z"))
		env.SignalWorkflow(api.SignalDeadLetterAdd, entry(b, "2026-03-02T11:00:00Z", "2026-03-02T11:15:00Z"))
	}, time.Minute)
	env.RegisterDelayedCallback(func() { listed = list(t, env) }, 2*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterReprocess, map[string]any{"slice_id": a}) }, 3*time.Minute)
	env.RegisterDelayedCallback(func() { final = list(t, env) }, 5*time.Minute)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(api.SignalDeadLetterDiscard, map[string]any{"all": true}) }, 6*time.Minute)
	var empty []api.DeadLetterEntry
	stopAt(env, 7*time.Minute, func() { empty = list(t, env) })

	env.ExecuteWorkflow(workflows.DeadLetter, api.DeadLetterInput{Platform: p})
	requireStopped(t, env)

	require.Equal(t, []string{a, b}, ids(listed))
	require.Equal(t, at("-2h"), listed[0].Start)
	require.Equal(t, 3, listed[0].Attempts)
	require.Equal(t, []string{a}, sliceIDs(pages.all()))
	require.Equal(t, []string{b}, ids(final))
	require.Empty(t, empty)
}

func refIDs(refs []api.SliceView) []string {
	out := []string{}
	for _, r := range refs {
		out = append(out, r.ID)
	}
	return out
}
