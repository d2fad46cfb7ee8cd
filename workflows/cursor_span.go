package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
)

// Adaptive slice sizing. Every slice costs the same orchestration (a child
// workflow, its tasks and visibility records) however few orders it holds,
// so a backfill of sparse history in 15-minute slices spends nearly all its
// time on bookkeeping (docs/performance.md). While far behind, the cursor
// therefore widens the slice span whenever a slice of the current span took
// at most a quarter of max_pages: by the factor that would fill a quarter
// of max_pages at the density just seen, at least 2 and at most 8 (a jump
// into denser history then costs at most one split). It halves the span
// when a slice split or failed, and never exceeds backfill_max_span. Spans stay whole multiples of interval
// and start where the last slice ended, so the slices still tile time with
// no gap; near the present only settled intervals fit, so slices are one
// interval again.

// How much one sparse slice may widen the span.
const (
	minSpanGrowth = 2
	maxSpanGrowth = 8
)

// maxSpanIntervals is the most intervals one regular slice may cover.
func (c *cursor) maxSpanIntervals() int {
	iv := c.platform.Interval.D()
	if !c.adaptiveSpan || c.platform.BackfillMaxSpan <= 0 || iv <= 0 {
		return 1
	}
	return max(1, int(c.platform.BackfillMaxSpan.D()/iv))
}

// spanIntervals is how many intervals the next regular slice may cover.
func (c *cursor) spanIntervals() int {
	return min(max(c.st.SpanIntervals, 1), c.maxSpanIntervals())
}

// nextSliceEnd is the end of the next regular slice: the current span, cut
// to the intervals that have settled, but at least one interval (launch
// waits until that one has settled).
func (c *cursor) nextSliceEnd() time.Time {
	iv := c.platform.Interval.D()
	n := c.spanIntervals()
	if n > 1 {
		settled := int(c.now.Add(-c.platform.Settle.D()).Sub(c.st.Next) / iv)
		n = max(1, min(n, settled))
	}
	return c.st.Next.Add(time.Duration(n) * iv)
}

// adaptSpan learns from a finished regular slice.
func (c *cursor) adaptSpan(ctx workflow.Context, ref api.SliceRef, res api.SliceResult) {
	limit := c.maxSpanIntervals()
	if limit <= 1 {
		return
	}
	cur := c.spanIntervals()
	covered := int(ref.End.Sub(ref.Start) / c.platform.Interval.D()) // 0 for a split half under one interval
	next := cur
	switch res.Outcome {
	case api.SliceCompleted:
		// Only a slice as wide as the current span says the span is sparse;
		// narrower ones finishing (near the present, split halves) do not.
		if res.Pages*4 <= c.platform.MaxPages && covered >= cur {
			target := c.platform.PageSize * c.platform.MaxPages / 4
			factor := min(max(target/max(res.OrdersFetched, 1), minSpanGrowth), maxSpanGrowth)
			next = min(cur*factor, limit)
		}
	case api.SliceSplit, api.SliceFailed:
		next = max(1, min(cur, max(covered, 1))/2)
	}
	if next != cur {
		workflow.GetLogger(ctx).Debug("backfill slice span", "intervals", next, "after", ref.ID, "pages", res.Pages)
		c.st.SpanIntervals = next
	}
}
