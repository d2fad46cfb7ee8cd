package workflows_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/workflows"
)

// TestCursorAdaptiveSliceSpan: with backfill_max_span set, backfill slices
// double while history is sparse, halve where it is dense (a slice that
// splits), never exceed the maximum, tile the backlog with no gap and no
// overlap, and are one interval long again once the cursor follows the
// present.
func TestCursorAdaptiveSliceSpan(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Interval = config.Duration(time.Hour)
	p.Overlap = config.Duration(time.Minute)
	p.Start = at("-48h").Format(time.RFC3339)
	p.MaxPages = 8
	p.BackfillMaxSpan = config.Duration(8 * time.Hour)
	p.Concurrency = 1 // one slice at a time, so the spans follow a fixed sequence
	require.NoError(t, config.ValidateSettings(p))
	// Orders are dense in [-20h, -18h): each hour of it needs 10 pages, more
	// than max_pages, so any slice touching it splits.
	denseFrom, denseTo := at("-20h"), at("-18h")
	pagesFor := func(w api.Range) int {
		from, to := maxTime(w.Start, denseFrom), minTime(w.End, denseTo)
		if !from.Before(to) {
			return 1
		}
		return 1 + int(10*to.Sub(from)/time.Hour)
	}
	pages := watchPages(env)
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		w := window(t, in.SliceID)
		if in.Page < pagesFor(w) {
			return activities.FetchPageResult{NextToken: nextToken(in), Fetched: 1}, nil
		}
		return activities.FetchPageResult{Fetched: 1}, nil
	}, nil)
	var spanAtEnd string
	stopAt(env, 3*time.Hour, func() { spanAtEnd = status(t, env).SliceSpan })

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))

	requireStopped(t, env)
	done := finishedWindows(t, pages)
	require.Equal(t, at("-48h"), done[0].Start)
	require.Equal(t, time.Hour, done[0].End.Sub(done[0].Start), "the first slice is one interval")
	widest := time.Duration(0)
	for i, w := range done {
		if i > 0 {
			require.Equal(t, done[i-1].End, w.Start, "gap or overlap between %v and %v", done[i-1], w)
		}
		widest = max(widest, w.End.Sub(w.Start))
	}
	require.Equal(t, 8*time.Hour, widest, "sparse history grows slices to backfill_max_span")
	last := done[len(done)-1]
	require.False(t, last.End.Before(at("3h").Add(-p.Settle.D()-p.Interval.D())), "cursor fell behind: last slice ends %s", last.End)

	// One slice at a time. A one-page first slice widens the span 8-fold
	// (the most one step may) to the maximum; the 8h slice over the dense
	// hours splits and halves the span, and so do its dense halves, down to
	// 30 minutes and one interval, while each sparse piece widens it again;
	// past the dense hours it is back at the maximum until only the settled
	// intervals before now fit, and live slices are one interval.
	var got []string
	for _, w := range done {
		got = append(got, fmt.Sprintf("%s+%s", w.Start.Sub(t0), w.End.Sub(w.Start)))
	}
	require.Equal(t, []string{
		"-48h0m0s+1h0m0s", "-47h0m0s+8h0m0s", "-39h0m0s+8h0m0s", "-31h0m0s+8h0m0s",
		"-23h0m0s+2h0m0s", "-21h0m0s+1h0m0s",
		"-20h0m0s+30m0s", "-19h30m0s+30m0s", "-19h0m0s+30m0s", "-18h30m0s+30m0s",
		"-18h0m0s+1h0m0s", "-17h0m0s+2h0m0s", "-15h0m0s+8h0m0s", "-7h0m0s+6h0m0s",
		"-1h0m0s+1h0m0s", "0s+1h0m0s", "1h0m0s+1h0m0s",
	}, got)
	for _, w := range done {
		require.LessOrEqual(t, pagesFor(w), p.MaxPages, "slice %v was stored without splitting", w)
	}
	require.Equal(t, "8h0m0s", spanAtEnd, "status reports the span a catch-up would use")
}

// TestCursorSpanOffKeepsIntervals: backfill_max_span 0 keeps every slice
// one interval long, however sparse the history.
func TestCursorSpanOffKeepsIntervals(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	require.Zero(t, p.BackfillMaxSpan)
	pages := watchPages(env)
	mockPages(env, pages, onePage, nil)
	stopAt(env, time.Hour, nil)

	env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))

	requireStopped(t, env)
	ids := sliceIDs(pages.all())
	require.Equal(t, tiles(at("-2h"), window(t, ids[len(ids)-1]).End, p.Interval.D()), ids)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// TestCursorSpanGrowsToTheDensityInOneStep: a sparse first slice widens the
// span straight to backfill_max_span when a quarter of max_pages would hold
// that much history at its density (versionDensitySpan), not eightfold per
// step (1h, 8h, then 48h); and at concurrency 4 that first slice runs alone
// until it reports, instead of four one-hour slices at once.
func TestCursorSpanGrowsToTheDensityInOneStep(t *testing.T) {
	for _, concurrency := range []int{1, 4} {
		t.Run(fmt.Sprint("concurrency ", concurrency), func(t *testing.T) {
			env := newEnv(t)
			p := testPlatform(t)
			p.Interval = config.Duration(time.Hour)
			p.Overlap = config.Duration(time.Minute)
			p.Start = at("-100h").Format(time.RFC3339)
			p.MaxPages = 8
			p.BackfillMaxSpan = config.Duration(48 * time.Hour)
			p.Concurrency = concurrency
			require.NoError(t, config.ValidateSettings(p))
			pages := watchPages(env)
			mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
				return activities.FetchPageResult{Fetched: 1}, nil
			}, nil)
			stopAt(env, time.Hour, nil)

			env.ExecuteWorkflow(workflows.PlatformCursor, cursorInput(t, p))

			requireStopped(t, env)
			done := finishedWindows(t, pages)
			var got []string
			for _, w := range done[:3] {
				got = append(got, fmt.Sprintf("%s+%s", w.Start.Sub(t0), w.End.Sub(w.Start)))
			}
			require.Equal(t, []string{"-100h0m0s+1h0m0s", "-99h0m0s+48h0m0s", "-51h0m0s+48h0m0s"}, got)
		})
	}
}

// finishedWindows are the windows of the slices whose last page was
// stored, earliest first.
func finishedWindows(t *testing.T, pages *pageLog) []api.Range {
	var done []api.Range
	for id := range pages.finished {
		done = append(done, window(t, id))
	}
	sort.Slice(done, func(i, j int) bool { return done[i].Start.Before(done[j].Start) })
	return done
}
