package slicequeue

import "time"

// Rules are the platform settings the queue decides by. The cursor derives
// them from its settings and sets them again when the settings change.
type Rules struct {
	// Interval is the length of a slice of the grid (and of a reprocess
	// slice); a regular slice covers a whole number of them.
	Interval time.Duration
	// Settle: a regular slice starts only once its end is this far in the past.
	Settle time.Duration
	// MaxSpan is the most intervals one regular slice may cover (adaptive
	// backfill sizing, see span.go); 1 or less keeps one-interval slices.
	MaxSpan int
	// PageSize and MaxPages say how dense a slice was: sizing learns from them.
	PageSize, MaxPages int
	// ResweepDelay, when positive, fetches a recent regular slice's window
	// again once it is this old.
	ResweepDelay time.Duration
	// Aligned places regular and reprocess slices on the grid of whole
	// intervals shifted by Phase (grid.go); unset keeps v0.1's placement,
	// one interval after another from wherever the last slice ended.
	Aligned bool
	// Phase is the platform's offset within the interval (PhaseOf).
	Phase time.Duration
	// DensityGrowth, when set and true, lets a sparse slice widen the span
	// by more than 8 at once (span.go). It is a version check the queue
	// calls only when the answer changes the span, so runs that never
	// widen that far record no marker.
	DensityGrowth func() bool
	// ProbeFirst, when set and true, holds back further backfill slices
	// while the first one of a run whose span is not learned yet runs
	// (span.go). A version check, asked only when it would hold one back.
	ProbeFirst func() bool
	// Batch, when above 1, holds a new regular slice until Batch intervals
	// from Next have settled and then fetches them as one slice (hybrid
	// pacing: the cursor sets it while the account's webhooks are live).
	// The grid stays Interval's, so changing Batch never moves a slice
	// boundary. 0 or 1: a slice starts as soon as one interval settled.
	Batch int
}

// IDFunc names the slice [start, end): its child workflow ID.
type IDFunc func(start, end time.Time) string

// Queue is the life of one cursor's slices: which slice starts next,
// splitting, completion, re-sweeps, reprocess requests and the watermark.
// It reads no clock (every method that needs the time takes now) and does
// no I/O, so the same calls always give the same answers.
type Queue struct {
	rules    Rules
	id       IDFunc
	next     time.Time
	span     int
	caughtUp bool
	// reported is set once a regular slice of this run reported: the
	// span it suggests is known (not carried; a run that restored a
	// learned span, Snapshot.Span, need not probe).
	reported bool
	// slices in launch priority: regular slices in time order (they tile
	// [Watermark, Next) with no gap and no overlap), then reprocess
	// slices, then re-sweeps, each in the order they arrived.
	slices []Slice
}

// Snapshot is a queue as the cursor carries it across continue-as-new.
type Snapshot struct {
	// Next is the start of the next regular slice to add.
	Next time.Time `json:"next"`
	// Span is how many intervals the next regular slice may cover (0: one).
	Span int `json:"span,omitempty"`
	// CaughtUp is set once the backfill has reached the present.
	CaughtUp bool `json:"caught_up,omitempty"`
	// Slices are the slices still tracked, in launch priority.
	Slices []Slice `json:"slices"`
}

// New starts an empty queue whose first regular slice starts at start, or,
// on an aligned grid, at the last grid point at or before start (fetching
// a little more than asked is harmless; skipping is not).
func New(start time.Time, rules Rules, id IDFunc) *Queue {
	q := &Queue{rules: rules, id: id, next: start.UTC()}
	if rules.Aligned {
		q.next = q.grid().Floor(start)
	}
	return q
}

// Restore continues a queue from a snapshot. Nothing runs across
// continue-as-new (the cursor waits for its slices first), so a slice
// marked running was started by a run that ended abnormally: it is queued
// again, and its deterministic ID keeps it from running twice.
func Restore(s Snapshot, rules Rules, id IDFunc) *Queue {
	q := &Queue{rules: rules, id: id, next: s.Next, span: s.Span, caughtUp: s.CaughtUp}
	for _, k := range []Kind{Regular, Reprocess, Resweep} { // launch priority, whatever the snapshot's order
		for _, sl := range s.Slices {
			switch {
			case sl.Kind != k:
				continue
			case sl.State == Running:
				sl.State = Queued
			case sl.State == Held && sl.Kind != Regular:
				continue // finished; only regular slices wait for the watermark
			}
			q.slices = append(q.slices, sl)
		}
	}
	return q
}

// Snapshot returns the queue's state, for continue-as-new.
func (q *Queue) Snapshot() Snapshot {
	return Snapshot{Next: q.next, Span: q.span, CaughtUp: q.caughtUp, Slices: append([]Slice{}, q.slices...)}
}

// SetRules takes new settings; they apply from the next decision on.
func (q *Queue) SetRules(r Rules) { q.rules = r }

// Watermark is the start of the first regular slice, or Next when there is
// none: every instant before it lies in a regular slice that completed or
// whose failure is recorded in the dead-letter workflow.
func (q *Queue) Watermark() time.Time {
	if len(q.slices) > 0 && q.slices[0].Kind == Regular {
		return q.slices[0].Start
	}
	return q.next
}

// Next is the start of the next regular slice to add.
func (q *Queue) Next() time.Time { return q.next }

// NextSettles is when the next regular slice of one interval (on an
// aligned grid: up to the next grid point) may start; with Rules.Batch,
// when the whole batch has settled.
func (q *Queue) NextSettles() time.Time {
	return q.BatchSettles(q.batch())
}

// BatchSettles is when n intervals from Next (the first a bridge when
// Next is off the grid) have settled: where the cursor decides its pacing
// (n = 1) and how long a batch of n would hold.
func (q *Queue) BatchSettles(n int) time.Time {
	return q.batchEndOf(n).Add(q.rules.Settle)
}

// batchEnd is where a held batch ends.
func (q *Queue) batchEnd() time.Time { return q.batchEndOf(q.batch()) }

func (q *Queue) batchEndOf(n int) time.Time {
	return q.firstEnd().Add(time.Duration(max(n, 1)-1) * q.rules.Interval)
}

func (q *Queue) batch() int { return max(q.rules.Batch, 1) }

// firstEnd is the end of the next regular slice of one interval: on an
// aligned grid the first grid point after Next, which bridges a Next that
// is off the grid (a run continued from v0.1's grid, an interval change).
func (q *Queue) firstEnd() time.Time {
	if q.rules.Aligned {
		return q.grid().After(q.next)
	}
	return q.next.Add(q.rules.Interval)
}

// CaughtUp says whether the backfill has reached the present: the first
// time a regular slice had to wait to settle with no earlier regular slice
// left. It stays set.
func (q *Queue) CaughtUp() bool { return q.caughtUp }

// Slices returns every tracked slice, in launch priority.
func (q *Queue) Slices() []Slice {
	return append([]Slice(nil), q.slices...)
}

// Running returns the running slices, in launch priority.
func (q *Queue) Running() []Slice {
	var out []Slice
	for _, s := range q.slices {
		if s.State == Running {
			out = append(out, s)
		}
	}
	return out
}

func (q *Queue) running() int {
	n := 0
	for _, s := range q.slices {
		if s.State == Running {
			n++
		}
	}
	return n
}

// Launch starts slices while fewer than limit run: first the queued slices
// that may start (due, in a work window or forced, their ID not running),
// in priority order; then new regular slices from Next on, each once it
// has settled and only inside a work window. It marks them running, with
// now as their start, and returns them in the order to start them.
func (q *Queue) Launch(now time.Time, open bool, limit int) []Slice {
	var started []Slice
	for q.running() < limit {
		if i := q.startable(now, open); i >= 0 {
			started = append(started, q.start(i, now))
			continue
		}
		end := q.nextEnd(now)
		if !open {
			break
		}
		if end.After(now.Add(-q.rules.Settle)) || end.Before(q.batchEnd()) {
			// Not settled, or a batch not settled whole (nextEnd covers at
			// least the batch once it has). Caught up once every backfill
			// slice has finished, not when the last one starts: the lag
			// alert applies from then on.
			if !q.hasRegular() {
				q.caughtUp = true
			}
			break
		}
		if q.probing() {
			break
		}
		i := q.insert(Slice{ID: q.id(q.next, end), Start: q.next, End: end, Kind: Regular})
		q.next = end
		if q.busy(q.slices[i].ID) {
			continue // a reprocess of this very window runs; it starts after that
		}
		started = append(started, q.start(i, now))
	}
	return started
}

// startable is the first queued slice that may start now, or -1.
func (q *Queue) startable(now time.Time, open bool) int {
	for i, s := range q.slices {
		if s.State == Queued && !q.busy(s.ID) && !s.Due.After(now) && (open || s.Force) {
			return i
		}
	}
	return -1
}

func (q *Queue) start(i int, now time.Time) Slice {
	q.slices[i].State = Running
	q.slices[i].StartedAt = now
	return q.slices[i]
}

// busy says whether a slice with this ID runs: one workflow ID, one run.
func (q *Queue) busy(id string) bool {
	for _, s := range q.slices {
		if s.ID == id && s.State == Running {
			return true
		}
	}
	return false
}

func (q *Queue) hasRegular() bool {
	return len(q.slices) > 0 && q.slices[0].Kind == Regular
}

// insert adds s at the end of its kind's part of the list.
func (q *Queue) insert(s Slice) int {
	i := len(q.slices)
	for i > 0 && q.slices[i-1].Kind > s.Kind {
		i--
	}
	q.slices = append(q.slices, Slice{})
	copy(q.slices[i+1:], q.slices[i:])
	q.slices[i] = s
	return i
}

// Outcome is how a slice's run ended, as far as the queue cares.
type Outcome uint8

const (
	// Completed: every page was fetched and stored.
	Completed Outcome = iota
	// DeadLettered: the slice failed and its failure is recorded in the
	// dead-letter workflow, where it is visible and reprocessable.
	DeadLettered
	// Split: the window held more than max_pages pages; its two halves run
	// in its place.
	Split
	// Unknown: the slice reported an outcome this release does not know.
	// It counts as finished and teaches the span sizing nothing.
	Unknown
)

// Report is what the queue learns from a slice that reported.
type Report struct {
	Outcome Outcome
	// Pages and Fetched say how dense the window was (span sizing).
	Pages, Fetched int
}

// Finished is what Finish did.
type Finished struct {
	// Slice is the slice as it ran.
	Slice Slice
	// Span is the new span of regular slices when this report changed it, else 0.
	Span int
}

// Finish records the report of the running slice with this ID. A split
// slice is replaced, in place, by its two halves, queued. Any other
// outcome finishes the slice: a regular slice is held until every earlier
// regular slice has finished too, then drops below the watermark; other
// slices are dropped at once. A regular slice that completed may queue its
// re-sweep; fromFetchStart answers the version question of how its due
// time is judged (see workflows/versions.go, resweep-from-fetch-start) and
// is asked only when re-sweeps are on. ok is false when no slice with this
// ID runs.
func (q *Queue) Finish(id string, r Report, now time.Time, fromFetchStart func() bool) (f Finished, ok bool) {
	i := q.indexRunning(id)
	if i < 0 {
		return f, false
	}
	s := q.slices[i]
	f.Slice = s
	s.State = Queued
	q.slices[i] = s
	if s.Kind == Regular {
		f.Span = q.adaptSpan(s, r)
		q.reported = true
	}
	if s.Kind == Regular && r.Outcome == Completed {
		q.scheduleResweep(s, now, fromFetchStart) // appends: i stays valid
	}
	switch {
	case r.Outcome == Split:
		q.slices = append(q.slices[:i], append(q.split(s), q.slices[i+1:]...)...)
	case s.Kind == Regular:
		q.slices[i].State = Held
	default:
		q.slices = append(q.slices[:i], q.slices[i+1:]...)
	}
	q.compact()
	return f, true
}

// Retry queues the running slice with this ID again, to start no earlier
// than at: its child ended without a report (it could not start, or was
// terminated or timed out). The watermark stays where it is meanwhile.
func (q *Queue) Retry(id string, at time.Time) (Slice, bool) {
	i := q.indexRunning(id)
	if i < 0 {
		return Slice{}, false
	}
	q.slices[i].State = Queued
	q.slices[i].Due = at
	return q.slices[i], true
}

func (q *Queue) indexRunning(id string) int {
	for i, s := range q.slices {
		if s.ID == id && s.State == Running {
			return i
		}
	}
	return -1
}

// split returns the two queued halves of s, cut at its middle (to the
// microsecond, the precision of slice IDs).
func (q *Queue) split(s Slice) []Slice {
	mid := s.Start.Add(s.End.Sub(s.Start) / 2).Truncate(time.Microsecond)
	return []Slice{
		{ID: q.id(s.Start, mid), Start: s.Start, End: mid, Kind: s.Kind, Force: s.Force},
		{ID: q.id(mid, s.End), Start: mid, End: s.End, Kind: s.Kind, Force: s.Force},
	}
}

// compact drops the held regular slices at the head: the watermark moves
// over the finished prefix, and only over it.
func (q *Queue) compact() {
	n := 0
	for n < len(q.slices) && q.slices[n].Kind == Regular && q.slices[n].State == Held {
		n++
	}
	q.slices = q.slices[n:]
}

// scheduleResweep queues a second fetch of a regular slice's window once
// the window is resweep_delay old, unless the first fetch already started
// that late (backfill slices of old history need no second look). A
// window whose due time has passed meanwhile is swept at once.
func (q *Queue) scheduleResweep(s Slice, now time.Time, fromFetchStart func() bool) {
	delay := q.rules.ResweepDelay
	if delay <= 0 {
		return
	}
	due := s.End.Add(delay)
	firstFetch := now
	if fromFetchStart() && !s.StartedAt.IsZero() {
		firstFetch = s.StartedAt
	}
	if !due.After(firstFetch) {
		return
	}
	q.insert(Slice{ID: s.ID, Start: s.Start, End: s.End, Kind: Resweep, Due: due, Sweep: true})
}

// Reprocess queues [from, to) again in interval-sized slices, exactly that
// range: on an aligned grid cut at the grid points (so a regular slice's
// window gets its ID again; only the first and last slices may be
// shorter), else from `from` on with the last one shorter if need be. A
// window already queued or running is not queued twice. It returns how
// many slices it queued.
func (q *Queue) Reprocess(from, to time.Time, force bool) int {
	from, to = from.UTC(), to.UTC()
	iv := q.rules.Interval
	queued := 0
	var e time.Time
	for s := from; s.Before(to); s = e {
		e = s.Add(iv)
		if q.rules.Aligned {
			e = q.grid().After(s)
		}
		if e.After(to) {
			e = to
		}
		id := q.id(s, e)
		if q.willRun(id) {
			continue
		}
		q.insert(Slice{ID: id, Start: s, End: e, Kind: Reprocess, Force: force})
		queued++
	}
	return queued
}

// willRun says whether a slice with this ID is queued or running.
func (q *Queue) willRun(id string) bool {
	for _, s := range q.slices {
		if s.ID == id && s.State != Held {
			return true
		}
	}
	return false
}

// NextDue is the queued slice with the earliest due time after now among
// those that could then start (in a work window, or forced), the first in
// priority order on a tie.
func (q *Queue) NextDue(now time.Time, open bool) (Slice, bool) {
	var best Slice
	found := false
	for _, s := range q.slices {
		if s.State == Queued && (open || s.Force) && s.Due.After(now) && (!found || s.Due.Before(best.Due)) {
			best, found = s, true
		}
	}
	return best, found
}
