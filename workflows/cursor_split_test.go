package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/workflows"
)

// TestDenseSliceSplits: between 11:15 and 11:30 the platform has more
// orders than max_pages pages hold in any window wider than `dense`. The slice
// [11:15, 11:30) splits, its halves (and theirs, while still too wide) run
// in its place, the last one slowly; the watermark passes 11:30 only once
// every part has finished, and the parts tile the slice exactly.
func TestDenseSliceSplits(t *testing.T) {
	cases := []struct {
		name  string
		dense time.Duration
		parts []api.Range
	}{
		{"into halves", 10 * time.Minute, []api.Range{
			{Start: at("-45m"), End: at("-37m30s")}, {Start: at("-37m30s"), End: at("-30m")},
		}},
		{"into quarters", 5 * time.Minute, []api.Range{
			{Start: at("-45m"), End: at("-41m15s")}, {Start: at("-41m15s"), End: at("-37m30s")},
			{Start: at("-37m30s"), End: at("-33m45s")}, {Start: at("-33m45s"), End: at("-30m")},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Start = at("-1h").Format(time.RFC3339)
			p.MaxPages = 2
			overlap := p.Overlap.D()
			wide := api.SliceWorkflowID(platformName, at("-45m"), at("-30m"))
			last := tc.parts[len(tc.parts)-1]
			lastID := api.SliceWorkflowID(platformName, last.Start, last.End)
			pages := watchPages(env)
			mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
				start := in.From.Add(overlap)
				if start.Before(at("-30m")) && in.To.After(at("-45m")) && in.To.Sub(start) > tc.dense {
					return activities.FetchPageResult{NextToken: nextToken(in), Fetched: 100, Inserted: 100}, nil
				}
				return onePage(in)
			}, map[string]time.Duration{lastID: 20 * time.Minute})

			every(env, time.Minute, 29*time.Minute, func() {
				s := status(t, env)
				if !pages.isFinished(lastID) {
					require.False(t, s.Watermark.After(last.Start), "at %s watermark %s passed the unfinished %s", env.Now(), s.Watermark, lastID)
				}
			})
			var final api.CursorStatus
			stopAt(env, 30*time.Minute, func() { final = status(t, env) })

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))
			requireStopped(t, env)

			var wideCalls int
			var partIDs []string
			for _, c := range pages.all() {
				w := window(t, c.In.SliceID)
				if c.In.SliceID == wide {
					wideCalls++
				}
				if !w.Start.Before(at("-45m")) && !w.End.After(at("-30m")) && c.In.SliceID != wide {
					require.Equal(t, w.Start.Add(-overlap), c.In.From)
					require.Equal(t, w.End, c.In.To)
					partIDs = append(partIDs, c.In.SliceID)
				}
			}
			require.Equal(t, p.MaxPages, wideCalls, "the wide slice stops paging at max_pages")
			var want []string
			for _, r := range tc.parts {
				want = append(want, api.SliceWorkflowID(platformName, r.Start, r.End))
				require.True(t, pages.isFinished(want[len(want)-1]))
			}
			require.Subset(t, partIDs, want)
			require.Equal(t, at("20m"), pages.finishedAt(lastID))
			require.Equal(t, at("15m"), final.Watermark)
			require.Equal(t, int64(len(tc.parts)-1), final.Counts.SlicesSplit)
			require.Equal(t, int64(3+len(tc.parts)+1), final.Counts.SlicesCompleted)
			require.Empty(t, final.InFlight)
		})
	}
}
