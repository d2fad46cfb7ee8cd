package slicequeue

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// queueUnderTest is what the property check drives: *Queue, or one of the
// broken queues below that show the check notices a broken rule.
type queueUnderTest interface {
	Launch(now time.Time, open bool, limit int) []Slice
	Finish(id string, r Report, now time.Time, fromFetchStart func() bool) (Finished, bool)
	Retry(id string, at time.Time) (Slice, bool)
	Reprocess(from, to time.Time, force bool) int
	SetRules(Rules)
	Watermark() time.Time
	Next() time.Time
	Slices() []Slice
}

type window struct{ start, end time.Time }

func (w window) String() string {
	return fmt.Sprintf("[%s, %s)", w.start.Sub(t0), w.end.Sub(t0))
}

func windowOf(s Slice) window { return window{s.Start, s.End} }

// propertyRun drives a queue with random operations in random order (slices
// finish in any order, with any outcome, while time passes, work windows
// open and close, reprocess requests arrive and settings change) and
// checks the rules after every step. It returns the first broken rule.
func propertyRun(q queueUnderTest, start time.Time, seed int64, steps int, mode gridMode) error {
	rng := rand.New(rand.NewSource(seed))
	r := rules
	r.ResweepDelay = 10 * time.Minute
	r.Aligned = mode == gridAligned
	r.Phase = PhaseOf(propertyPlatform, r.Interval)
	q.SetRules(r)
	// In gridSwitch runs the queue turns aligned at this step, as a cursor
	// that ran on v0.1's grid does when it continues as new.
	switchAt := -1
	if mode == gridSwitch {
		switchAt = rng.Intn(steps)
	}
	// A backlog of up to 12 hours: enough to catch up within a run, so
	// runs cover backfill and following the present.
	now := start.Add(time.Duration(rng.Int63n(int64(12 * time.Hour))))
	lastWatermark := q.Watermark()
	// finished are the regular windows that reported completed, dead-
	// lettered or unknown: the only ones the watermark may pass. pending
	// are the regular windows the queue tracks and has not finished.
	finished := map[window]bool{}
	pending := map[window]bool{}
	for step := 0; step < steps; step++ {
		before := q.Slices()
		var op string
		var split *Slice
		if step == switchAt {
			r.Aligned = true
			q.SetRules(r)
		}
		switch rng.Intn(12) {
		case 0, 1:
			d := time.Duration(rng.Int63n(int64(40 * time.Minute)))
			now = now.Add(d)
			op = "time passes " + d.String()
		case 2, 3, 4:
			open, limit := rng.Intn(5) > 0, 1+rng.Intn(5)
			started := q.Launch(now, open, limit)
			op = fmt.Sprintf("launch(open=%v, limit=%d) started %d", open, limit, len(started))
			running := 0
			for _, s := range q.Slices() {
				if s.State == Running {
					running++
				}
			}
			if len(started) > 0 && running > limit {
				return fmt.Errorf("step %d, %s: %d slices run, more than %d", step, op, running, limit)
			}
			for _, s := range started {
				switch {
				case s.State != Running || !s.StartedAt.Equal(now):
					return fmt.Errorf("step %d, %s: %s started but is not running since now", step, op, s)
				case s.Due.After(now):
					return fmt.Errorf("step %d, %s: %s started before it was due (%s)", step, op, s, s.Due.Sub(t0))
				case !open && !s.Force:
					return fmt.Errorf("step %d, %s: %s started outside the work windows", step, op, s)
				case s.Kind == Regular && !pending[windowOf(s)] && s.End.After(now.Add(-r.Settle)):
					return fmt.Errorf("step %d, %s: new %s started before it settled", step, op, s)
				case r.Aligned && s.Kind == Regular && !pending[windowOf(s)] && !GridOf(propertyPlatform, r.Interval).On(s.End):
					// Tiling (checkQueue) makes it start where the last one
					// ended; ending on the grid makes the next start there.
					return fmt.Errorf("step %d, %s: new %s does not end on the grid", step, op, s)
				}
			}
		case 5, 6, 7, 8:
			var running []Slice
			for _, s := range q.Slices() {
				if s.State == Running {
					running = append(running, s)
				}
			}
			if len(running) == 0 {
				continue
			}
			s := running[rng.Intn(len(running))]
			var rep Report
			switch x := rng.Intn(100); {
			case x < 15:
				at := now.Add(time.Duration(rng.Intn(60)) * time.Second)
				q.Retry(s.ID, at)
				op = fmt.Sprintf("%s did not report", s)
			case x < 30 && s.End.Sub(s.Start) >= 2*time.Microsecond:
				rep.Outcome = Split
				split = &s
			case x < 42:
				rep.Outcome = DeadLettered
			case x < 45:
				rep.Outcome = Unknown
			default:
				rep.Outcome, rep.Pages, rep.Fetched = Completed, 1+rng.Intn(8), rng.Intn(300)
			}
			if op == "" {
				op = fmt.Sprintf("%s reported %d", s, rep.Outcome)
				if _, ok := q.Finish(s.ID, rep, now, func() bool { return true }); !ok {
					return fmt.Errorf("step %d, %s: the queue does not know it", step, op)
				}
				if s.Kind == Regular && rep.Outcome != Split {
					finished[windowOf(s)] = true
					delete(pending, windowOf(s))
				}
			}
		case 9, 10:
			from := now.Add(-time.Duration(rng.Intn(48*60)) * time.Minute)
			to := from.Add(time.Duration(1+rng.Intn(90)) * time.Minute)
			wm := q.Watermark()
			n := q.Reprocess(from, to, rng.Intn(3) == 0)
			op = fmt.Sprintf("reprocess %s queued %d", window{from, to}, n)
			if !q.Watermark().Equal(wm) {
				return fmt.Errorf("step %d, %s: reprocessing moved the watermark", step, op)
			}
		case 11:
			r.Interval = []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour}[rng.Intn(3)]
			r.MaxSpan = []int{1, 8}[rng.Intn(2)]
			r.ResweepDelay = []time.Duration{0, 10 * time.Minute}[rng.Intn(2)]
			r.Phase = PhaseOf(propertyPlatform, r.Interval)
			q.SetRules(r)
			op = fmt.Sprintf("settings: interval %s, span %d", r.Interval, r.MaxSpan)
		}
		if err := checkQueue(q, start, finished, pending, split, before, lastWatermark); err != nil {
			return fmt.Errorf("step %d, after %s: %w", step, op, err)
		}
		lastWatermark = q.Watermark()
	}
	return nil
}

// checkQueue checks the rules the package doc states.
func checkQueue(q queueUnderTest, start time.Time, finished, pending map[window]bool, split *Slice, before []Slice, lastWatermark time.Time) error {
	wm, next := q.Watermark(), q.Next()
	slices := q.Slices()
	if wm.Before(lastWatermark) {
		return fmt.Errorf("the watermark went back from %s to %s", lastWatermark.Sub(t0), wm.Sub(t0))
	}
	current := map[window]bool{}
	for _, s := range slices {
		if s.Kind == Regular {
			current[windowOf(s)] = true
			if s.State != Held {
				pending[windowOf(s)] = true
			}
		}
	}
	// A split is replaced by two queued halves that cover exactly its window.
	if split != nil {
		had := map[Slice]int{}
		for _, s := range before {
			had[s]++
		}
		var halves []Slice
		for _, s := range slices {
			if had[s] > 0 {
				had[s]--
				continue
			}
			if s.Kind == split.Kind && s.State == Queued && !s.Start.Before(split.Start) && !s.End.After(split.End) {
				halves = append(halves, s)
			}
		}
		// A half may equal a slice queued before (a reprocess of the same
		// grid window), which the multiset above may have taken instead.
		sort.Slice(halves, func(i, j int) bool { return halves[i].Start.Before(halves[j].Start) })
		if len(halves) != 2 || !halves[0].Start.Equal(split.Start) || !halves[0].End.Equal(halves[1].Start) || !halves[1].End.Equal(split.End) {
			return fmt.Errorf("split %s became %v", *split, windows(halves))
		}
		delete(pending, windowOf(*split))
	}
	// The watermark never passes an unfinished slice, and no unfinished
	// regular slice is lost.
	for w := range pending {
		if wm.After(w.start) {
			return fmt.Errorf("the watermark %s passed the unfinished slice %s", wm.Sub(t0), w)
		}
		if !current[w] {
			return fmt.Errorf("regular slice %s disappeared unfinished", w)
		}
	}
	// Every instant before the watermark lies in a finished regular slice.
	if gap, ok := firstGap(finished, start, wm); !ok {
		return fmt.Errorf("the watermark %s passed %s, which no finished slice covers", wm.Sub(t0), gap.Sub(t0))
	}
	// Launch priority: regular slices, then reprocess, then re-sweeps.
	for i := 1; i < len(slices); i++ {
		if slices[i].Kind < slices[i-1].Kind {
			return fmt.Errorf("%s comes after %s", slices[i-1], slices[i])
		}
	}
	// Regular slices tile [watermark, next) with no gap and no overlap.
	reach := wm
	for _, s := range slices {
		if s.Kind != Regular {
			continue
		}
		if !s.Start.Equal(reach) || !s.Start.Before(s.End) {
			return fmt.Errorf("regular slices do not tile [watermark, next): %s follows %s", s, reach.Sub(t0))
		}
		reach = s.End
	}
	if !reach.Equal(next) {
		return fmt.Errorf("regular slices end at %s, not at next %s", reach.Sub(t0), next.Sub(t0))
	}
	return nil
}

// firstGap returns the first instant of [from, to) no window covers.
func firstGap(ws map[window]bool, from, to time.Time) (time.Time, bool) {
	sorted := make([]window, 0, len(ws))
	for w := range ws {
		sorted = append(sorted, w)
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
	reach := from
	for _, w := range sorted {
		if w.start.After(reach) {
			break
		}
		if w.end.After(reach) {
			reach = w.end
		}
	}
	return reach, !reach.Before(to)
}

// gridMode is how a property run places regular slices.
type gridMode int

const (
	// gridV01: one interval after another from wherever the last ended.
	gridV01 gridMode = iota
	// gridAligned: on the platform's grid from the start.
	gridAligned
	// gridSwitch: v0.1's grid, then aligned from a random step on.
	gridSwitch
)

// propertyPlatform names the platform whose phase aligned runs use.
const propertyPlatform = "shop-property"

func TestPropertiesOverRandomRuns(t *testing.T) {
	runs := 200
	if testing.Short() {
		runs = 30
	}
	for _, mode := range []gridMode{gridV01, gridAligned, gridSwitch} {
		for seed := int64(1); seed <= int64(runs); seed++ {
			// Starts off every grid: whole minutes plus some seconds.
			start := at("-72h").Add(time.Duration(seed)*time.Minute + time.Duration(seed%7)*time.Second)
			r := rules
			r.Aligned, r.Phase = mode == gridAligned, PhaseOf(propertyPlatform, r.Interval)
			if err := propertyRun(New(start, r, testID), start, seed, 300, mode); err != nil {
				t.Fatalf("grid mode %d, seed %d: %v", mode, seed, err)
			}
		}
	}
}

// Broken queues: each breaks one rule the way a plausible change could.
// TestPropertiesCatchBrokenRules requires the property check to notice
// every one of them, so the check is known to have teeth.

// passesRunning compacts running slices away too, as if a slice that has
// started were as good as finished.
type passesRunning struct{ *Queue }

func (b passesRunning) Finish(id string, r Report, now time.Time, f func() bool) (Finished, bool) {
	out, ok := b.Queue.Finish(id, r, now, f)
	for len(b.slices) > 0 && b.slices[0].Kind == Regular && b.slices[0].State != Queued {
		b.slices = b.slices[1:]
	}
	return out, ok
}

// heldMoves reports the end of the last held slice as the watermark: the
// watermark follows the newest finished slice, not the oldest unfinished.
type heldMoves struct{ *Queue }

func (b heldMoves) Watermark() time.Time {
	wm := b.Queue.Watermark()
	for _, s := range b.slices {
		if s.Kind == Regular && s.State == Held && s.End.After(wm) {
			wm = s.End
		}
	}
	return wm
}

// failuresNotRecorded lets a slice that did not report count as finished.
type failuresNotRecorded struct{ *Queue }

func (b failuresNotRecorded) Retry(id string, at time.Time) (Slice, bool) {
	f, ok := b.Queue.Finish(id, Report{Outcome: DeadLettered}, at, func() bool { return false })
	return f.Slice, ok
}

// splitLosesAHalf keeps only the first half of a split.
type splitLosesAHalf struct{ *Queue }

func (b splitLosesAHalf) Finish(id string, r Report, now time.Time, f func() bool) (Finished, bool) {
	i := b.indexRunning(id)
	out, ok := b.Queue.Finish(id, r, now, f)
	if ok && r.Outcome == Split && i+1 < len(b.slices) {
		b.slices = append(b.slices[:i+1], b.slices[i+2:]...)
	}
	return out, ok
}

func TestPropertiesCatchBrokenRules(t *testing.T) {
	mutants := map[string]func(*Queue) queueUnderTest{
		"running slices compacted":        func(q *Queue) queueUnderTest { return passesRunning{q} },
		"watermark after the newest held": func(q *Queue) queueUnderTest { return heldMoves{q} },
		"unreported slice counts as done": func(q *Queue) queueUnderTest { return failuresNotRecorded{q} },
		"a split loses its second half":   func(q *Queue) queueUnderTest { return splitLosesAHalf{q} },
	}
	for name, mutate := range mutants {
		t.Run(name, func(t *testing.T) {
			var caught error
			for seed := int64(1); seed <= 50 && caught == nil; seed++ {
				start := at("-72h")
				caught = propertyRun(mutate(New(start, rules, testID)), start, seed, 400, gridMode(seed%3))
			}
			require.Error(t, caught, "the property check did not notice")
			t.Logf("noticed: %v", caught)
		})
	}
}
