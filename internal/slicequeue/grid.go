package slicequeue

import (
	"hash/fnv"
	"time"
)

// The slice grid. Regular slices of a cursor whose Rules.Aligned is set lie
// on a grid: whole intervals, shifted by a phase that is a stable function
// of the platform's name (PhaseOf). So
//
//   - one window has one ID: a reprocess of a regular slice's window, which
//     tiles on the same grid, starts a slice of the same ID (one workflow
//     ID, one run), and the slice list reads as one grid;
//   - slice boundaries of a platform do not depend on when its cursor was
//     started: the configured start is rounded down to the grid;
//   - platforms of the same interval fall due at different moments within
//     it instead of all at once (docs/performance.md, B4), as the old
//     scheduler's staggered per-shop timing did.
//
// A cursor that was placing slices one interval after another from an
// unrounded start (v0.1's grid, Aligned unset) keeps doing so until it
// continues as new; the first regular slice of the aligned run starts where
// the last one ended and ends on the next grid point (a bridging slice,
// shorter than an interval), and from then on slices lie on the grid. The
// same bridge follows an interval change.

// Grid is a platform's slice grid: the instants Phase + k*Interval, counted
// from the zero time (for intervals that divide a day: whole intervals from
// UTC midnight, shifted by Phase).
type Grid struct {
	Interval time.Duration
	Phase    time.Duration
}

// PhaseOf is a platform's phase within an interval: a hash of its name
// modulo the interval, in whole seconds (zero for intervals under two
// seconds). Stable across releases and workers: it places slice IDs.
func PhaseOf(platform string, interval time.Duration) time.Duration {
	secs := int64(interval / time.Second)
	if secs < 2 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(platform)) // a hash.Hash never fails to write
	return time.Duration(h.Sum64()%uint64(secs)) * time.Second
}

// GridOf is the grid of a platform's regular slices at this interval.
func GridOf(platform string, interval time.Duration) Grid {
	return Grid{Interval: interval, Phase: PhaseOf(platform, interval)}
}

// Floor is the last grid point at or before t.
func (g Grid) Floor(t time.Time) time.Time {
	if g.Interval <= 0 {
		return t.UTC()
	}
	return t.UTC().Add(-g.Phase).Truncate(g.Interval).Add(g.Phase)
}

// After is the first grid point strictly after t.
func (g Grid) After(t time.Time) time.Time {
	return g.Floor(t).Add(g.Interval)
}

// On says whether t is a grid point.
func (g Grid) On(t time.Time) bool { return g.Floor(t).Equal(t.UTC()) }

// grid is the queue's grid under its current rules.
func (q *Queue) grid() Grid { return Grid{Interval: q.rules.Interval, Phase: q.rules.Phase} }
