package slicequeue

import "time"

// Adaptive slice sizing. Every slice costs the same orchestration (a child
// workflow, its tasks and visibility records) however few orders it holds,
// so a backfill of sparse history in 15-minute slices spends nearly all its
// time on bookkeeping (docs/performance.md). While far behind, the queue
// therefore widens the span of regular slices whenever a slice of the
// current span took at most a quarter of max_pages: by the factor that
// would fill a quarter of max_pages at the density just seen, at least 2
// and at most 8 (a jump into denser history then costs at most one split).
// It halves the span when a slice split or failed, and never exceeds
// Rules.MaxSpan. Spans are whole multiples of the interval (on an aligned
// grid: after the bridge to the next grid point) and start where the last
// slice ended, so regular slices still tile time with no gap; near
// the present only settled intervals fit, so slices are one interval again.
//
// With Rules.DensityGrowth (a version check, asked only when it matters)
// the cap of 8 goes: a sparse slice widens the span straight to what a
// quarter of max_pages holds at the density it saw, up to MaxSpan. The
// ramp of a backfill is then one step instead of four (15 minutes to 7
// days), which halves the slices of a sparse backfill (B1: most of
// ordersync's overhead is per slice, docs/performance.md). The quarter
// leaves four times the density seen before a slice splits.

// A backfill probes first: with ProbeFirst, while the run has no span to
// go by (none carried, no regular slice reported yet) and one regular slice
// runs, no other starts. Without it a cursor at concurrency 4 starts four
// one-interval slices at once and learns from the first to finish, so
// every backfill began with three slices too many (B1: 30 of 170).

// probing says whether a new regular slice must wait for the first one's
// report.
func (q *Queue) probing() bool {
	if q.maxSpan() <= 1 || q.span > 0 || q.reported || q.rules.ProbeFirst == nil {
		return false
	}
	for _, s := range q.slices {
		if s.Kind == Regular && s.State == Running {
			return q.rules.ProbeFirst()
		}
	}
	return false
}

// How much one sparse slice may widen the span.
const (
	minSpanGrowth = 2
	maxSpanGrowth = 8
)

func (q *Queue) maxSpan() int { return max(q.rules.MaxSpan, 1) }

// Span is how many intervals the next regular slice may cover.
func (q *Queue) Span() int { return min(max(q.span, 1), q.maxSpan()) }

// nextEnd is the end of the next regular slice: the current span (at
// least Rules.Batch), cut to the intervals that have settled, but at least
// one interval (Launch waits until that one, or the whole batch, has
// settled).
func (q *Queue) nextEnd(now time.Time) time.Time {
	iv := q.rules.Interval
	n := max(q.Span(), q.batch())
	if !q.rules.Aligned {
		if n > 1 {
			settled := int(now.Add(-q.rules.Settle).Sub(q.next) / iv)
			n = max(1, min(n, settled))
		}
		return q.next.Add(time.Duration(n) * iv)
	}
	// On the grid: up to the next grid point (a bridge when Next is off
	// it), then whole intervals.
	first := q.firstEnd()
	if want := n; want > 1 {
		settled := now.Add(-q.rules.Settle).Sub(first)
		n = 1
		if settled > 0 {
			n = min(want, 1+int(settled/iv))
		}
	}
	return first.Add(time.Duration(n-1) * iv)
}

// adaptSpan learns from a regular slice that reported. It returns the new
// span when it changed, else 0.
func (q *Queue) adaptSpan(s Slice, r Report) int {
	limit := q.maxSpan()
	if limit <= 1 {
		return 0
	}
	cur := q.Span()
	covered := int(s.End.Sub(s.Start) / q.rules.Interval) // 0 for a split half under one interval
	next := cur
	switch r.Outcome {
	case Completed:
		// Only a slice as wide as the current span says the span is sparse;
		// narrower ones finishing (near the present, split halves) do not.
		if r.Pages*4 <= q.rules.MaxPages && covered >= cur {
			target := q.rules.PageSize * q.rules.MaxPages / 4
			raw := target / max(r.Fetched, 1)
			factor := min(max(raw, minSpanGrowth), maxSpanGrowth)
			if raw > maxSpanGrowth && cur < limit && q.rules.DensityGrowth != nil && q.rules.DensityGrowth() {
				factor = raw
			}
			next = min(cur*factor, limit)
		}
	case Split, DeadLettered:
		next = max(1, min(cur, max(covered, 1))/2)
	}
	if next == cur {
		return 0
	}
	q.span = next
	return next
}
