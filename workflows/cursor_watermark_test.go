package workflows_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestWatermarkNeverPassesUnfinishedSlice runs a four-hour backfill whose
// slices take random times (seeded), so they finish out of order, and checks
// the watermark rule at every minute of it.
func TestWatermarkNeverPassesUnfinishedSlice(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 42} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Start = at("-4h").Format(time.RFC3339)
			start, interval := at("-4h"), p.Interval.D()

			// Backfill slices take 1 to 30 minutes; once caught up, slices
			// are instant, so the final watermark is exact.
			rng := rand.New(rand.NewSource(seed))
			delays := map[string]time.Duration{}
			for _, id := range tiles(start, t0, interval) {
				delays[id] = time.Duration(1+rng.Intn(30)) * time.Minute
			}
			pages := watchPages(env)
			mockPages(env, pages, onePage, delays)

			var (
				last        = start
				observed    int
				outOfOrder  bool
				finishedIDs = tiles(start, at("3h"), interval)
			)
			every(env, time.Minute, 3*time.Hour-time.Minute, func() {
				s := status(t, env)
				observed++
				require.False(t, s.Watermark.Before(last), "watermark went back from %s to %s", last, s.Watermark)
				last = s.Watermark
				for _, r := range unfinished(s) {
					require.False(t, s.Watermark.After(r.Start),
						"at %s watermark %s is past unfinished slice %s", env.Now(), s.Watermark, r.ID)
				}
				// Every instant before the watermark lies in a slice whose
				// page has been stored.
				var done []api.Range
				for _, id := range finishedIDs {
					if pages.isFinished(id) {
						w := window(t, id)
						done = append(done, w)
						if !w.Start.Before(s.Watermark) {
							outOfOrder = true // a later slice finished first
						}
					}
				}
				require.True(t, covered(done, start, s.Watermark),
					"at %s watermark %s is past a slice that has not finished", env.Now(), s.Watermark)
			})
			var final api.CursorStatus
			stopAt(env, 3*time.Hour, func() { final = status(t, env) })

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))

			requireStopped(t, env)
			require.Equal(t, 3*60-1, observed)
			require.True(t, outOfOrder, "the delays never made a later slice finish first; the test proves nothing")
			// At 15:00 the last settled slice is [14:30, 14:45); [14:45, 15:00) settles at 15:01.
			require.Equal(t, at("2h45m"), final.Watermark)
			require.Equal(t, int64(4*4+11), final.Counts.SlicesCompleted)
			require.Empty(t, final.InFlight)
		})
	}
}
