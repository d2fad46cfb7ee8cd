package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// twoPages answers every slice with two pages.
func twoPages(in activities.FetchPageInput) (activities.FetchPageResult, error) {
	if in.Page == 1 {
		return activities.FetchPageResult{NextToken: "page-2", Fetched: 1, Inserted: 1}, nil
	}
	return activities.FetchPageResult{Fetched: 1, Inserted: 1}, nil
}

// configAt falls while the third slice (started 12:12) waits for its
// second page (12:15).
var configAt = at("14m")

// runConfigChange runs one slice at a time, two pages of three minutes
// each, and sends change at configAt by signal or update.
func runConfigChange(t *testing.T, via string, change api.Settings) (*pageLog, api.CursorStatus, *updateOutcome) {
	t.Helper()
	env := newEnv(t)
	p := testPlatform(t)
	p.Concurrency = 1
	delays := map[string]time.Duration{}
	for _, id := range tiles(at("-2h"), t0, p.Interval.D()) {
		delays[id] = 3 * time.Minute
	}
	pages := watchPages(env)
	mockPages(env, pages, twoPages, delays)
	var upd *updateOutcome
	env.RegisterDelayedCallback(func() {
		if via == "signal" {
			env.SignalWorkflow(api.SignalConfig, change)
		} else {
			upd = sendUpdate(env, api.SignalConfig, change)
		}
	}, configAt.Sub(t0))
	var final api.CursorStatus
	stopAt(env, 2*time.Hour, func() { final = status(t, env) })
	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
	requireStopped(t, env)
	return pages, final, upd
}

// TestConfigChangeAppliesFromNextSlice changes page_size and interval while
// a slice is half done. That slice finishes with the settings it started
// with; every slice started after the change uses the new ones, and the
// slices still tile time without a gap: the first one after the change
// bridges to the new interval's grid (-1h15m to -1h), then slices lie on it.
func TestConfigChangeAppliesFromNextSlice(t *testing.T) {
	for _, via := range []string{"signal", "update"} {
		t.Run(via, func(t *testing.T) {
			change := testPlatform(t)
			change.PageSize = 250
			change.Interval = config.Duration(30 * time.Minute)
			pages, final, upd := runConfigChange(t, via, change)

			firstPage := map[string]time.Time{}
			for _, c := range pages.all() {
				if c.In.Page == 1 {
					firstPage[c.In.SliceID] = c.At
				}
			}
			var before, after int
			for _, c := range pages.all() {
				w := window(t, c.In.SliceID)
				if firstPage[c.In.SliceID].Before(configAt) {
					before++
					require.Equal(t, 100, c.In.Platform.PageSize, "%s page %d", c.In.SliceID, c.In.Page)
					require.Equal(t, 15*time.Minute, w.End.Sub(w.Start))
				} else {
					after++
					require.Equal(t, 250, c.In.Platform.PageSize, "%s page %d", c.In.SliceID, c.In.Page)
					require.Zero(t, w.End.Sub(t0)%(30*time.Minute), "%s ends on the 30-minute grid", c.In.SliceID)
					if !w.Start.Equal(at("-1h15m")) { // the bridge
						require.Equal(t, 30*time.Minute, w.End.Sub(w.Start))
					}
				}
			}
			require.Equal(t, 3*2, before, "three slices of two pages started before the change")
			require.Positive(t, after)
			// The slice running at the change still fetched its second page afterwards.
			third := tiles(at("-1h30m"), at("-1h15m"), 15*time.Minute)[0]
			require.True(t, pages.isFinished(third))
			require.Equal(t, "30m0s", final.Interval)

			ids := sliceIDs(pages.all())
			for i := 1; i < len(ids); i++ {
				require.Equal(t, window(t, ids[i-1]).End, window(t, ids[i]).Start, "gap or overlap between %s and %s", ids[i-1], ids[i])
			}
			require.Equal(t, at("-2h"), window(t, ids[0]).Start)
			require.Contains(t, ids, api.SliceWorkflowID(platformName, at("-1h15m"), at("-1h")), "the bridge to the 30-minute grid")
			if via == "update" {
				require.True(t, upd.accepted && upd.done, "%+v", upd)
				require.NoError(t, upd.err)
				require.Equal(t, "30m0s", upd.result.(api.CursorStatus).Interval)
			}
		})
	}
}

// TestInvalidConfigChangesNothing sends settings that fail validation or
// belong to another platform: the update is rejected with the reason, the
// signal reports it in last_error, and every slice keeps the old settings.
func TestInvalidConfigChangesNothing(t *testing.T) {
	cases := []struct {
		name   string
		change func(p *api.Settings)
		want   string
	}{
		{"other platform", func(p *api.Settings) { p.Name = "shop-y"; p.PageSize = 250 }, `settings are for platform "shop-y", this cursor is "shop-x38942"`},
		{"invalid interval", func(p *api.Settings) { p.Interval = 0; p.PageSize = 250 }, `field "interval": must be positive`},
		{"bad window", func(p *api.Settings) { p.Windows = []string{"SOMEDAY 25:00-26:00"}; p.PageSize = 250 }, `field "windows"`},
	}
	for _, tc := range cases {
		for _, via := range []string{"signal", "update"} {
			t.Run(tc.name+" by "+via, func(t *testing.T) {
				change := testPlatform(t)
				tc.change(&change)
				pages, final, upd := runConfigChange(t, via, change)

				for _, c := range pages.all() {
					require.Equal(t, 100, c.In.Platform.PageSize)
				}
				require.NotEmpty(t, pages.since(configAt))
				require.Equal(t, "15m0s", final.Interval)
				if via == "update" {
					require.False(t, upd.accepted)
					require.ErrorContains(t, upd.rejected, tc.want)
					require.Empty(t, final.LastError)
				} else {
					require.Contains(t, final.LastError, "config signal: ")
					require.Contains(t, final.LastError, tc.want)
				}
			})
		}
	}
}
