package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// TestCursorAppliesOverlapAndSettle checks every page request: it covers
// [slice start - overlap, slice end), and no request asks for time closer
// to now than settle. Slices tile the time from the start with no gap, and
// the first slice that has to settle is fetched as soon as it has.
func TestCursorAppliesOverlapAndSettle(t *testing.T) {
	cases := []struct {
		name             string
		overlap, settle  time.Duration
		interval         time.Duration
		firstLiveFetchAt time.Time // when [12:00, 12:00+interval) may first run
	}{
		{"defaults", 2 * time.Minute, time.Minute, 15 * time.Minute, at("16m")},
		{"no overlap, long settle", 0, 10 * time.Minute, 15 * time.Minute, at("25m")},
		{"overlap just under interval", 4*time.Minute + 59*time.Second, 2 * time.Minute, 5 * time.Minute, at("7m")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Overlap, p.Settle, p.Interval = config.Duration(tc.overlap), config.Duration(tc.settle), config.Duration(tc.interval)
			require.NoError(t, config.ValidateSettings(p))
			pages := watchPages(env)
			mockPages(env, pages, onePage, nil)
			stopAt(env, 2*time.Hour, nil)

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))

			requireStopped(t, env)
			calls := pages.all()
			require.NotEmpty(t, calls)
			firstLive := ""
			for _, c := range calls {
				w := window(t, c.In.SliceID)
				require.Equal(t, w.Start.Add(-tc.overlap), c.In.From, "From of %s", c.In.SliceID)
				require.Equal(t, w.End, c.In.To, "To of %s", c.In.SliceID)
				require.False(t, c.In.To.After(c.At.Add(-tc.settle)),
					"%s fetched at %s, before it settled", c.In.SliceID, c.At)
				if w.Start.Equal(t0) {
					firstLive = c.In.SliceID
					require.Equal(t, tc.firstLiveFetchAt, c.At, "first live slice fetched late")
				}
			}
			require.NotEmpty(t, firstLive, "the slice starting at t0 never ran")
			// Two hours of backfill and almost two of live slices, no gap.
			ids := sliceIDs(calls)
			last := window(t, ids[len(ids)-1]).End
			require.Equal(t, tiles(at("-2h"), last, tc.interval), ids)
			require.False(t, last.Before(at("2h").Add(-tc.settle-tc.interval)), "cursor fell behind: last slice ends %s", last)
		})
	}
}
