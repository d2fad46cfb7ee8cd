package slicequeue

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

// at is t0 plus a readable offset ("-2h", "15m").
func at(offset string) time.Time {
	d, err := time.ParseDuration(offset)
	if err != nil {
		panic(err)
	}
	return t0.Add(d)
}

func testID(start, end time.Time) string {
	const layout = "150405.000000"
	return start.UTC().Format(layout) + "-" + end.UTC().Format(layout)
}

// rules are 15-minute slices that settle for a minute.
var rules = Rules{Interval: 15 * time.Minute, Settle: time.Minute, PageSize: 100, MaxPages: 8}

// newQueue starts at start with rules.
func newQueue(start string) *Queue { return New(at(start), rules, testID) }

// windows lists slices as "kind state start+length" for readable tables.
func windows(ss []Slice) []string {
	out := []string{}
	for _, s := range ss {
		out = append(out, s.Kind.String()+" "+s.State.String()+" "+s.Start.Sub(t0).String()+"+"+s.End.Sub(s.Start).String())
	}
	return out
}

func TestLaunch(t *testing.T) {
	cases := []struct {
		name    string
		start   string
		now     string
		open    bool
		limit   int
		prepare func(q *Queue)
		want    []string // started
		caught  bool
	}{
		{name: "backfill up to the limit", start: "-2h", now: "0s", open: true, limit: 3,
			want: []string{"regular running -2h0m0s+15m0s", "regular running -1h45m0s+15m0s", "regular running -1h30m0s+15m0s"}},
		{name: "a slice starts once its end has settled", start: "-16m", now: "0s", open: true, limit: 3,
			want:   []string{"regular running -16m0s+15m0s"},
			caught: false},
		{name: "nothing settled and nothing left: caught up", start: "-15m", now: "0s", open: true, limit: 3,
			want: []string{}, caught: true},
		{name: "outside a work window nothing regular starts", start: "-2h", now: "0s", open: false, limit: 3,
			want: []string{}},
		{name: "queued slices first, in priority order", start: "-2h", now: "0s", open: true, limit: 3,
			prepare: func(q *Queue) {
				q.Reprocess(at("-5h"), at("-4h45m"), false)
				q.slices = append([]Slice{{ID: "r", Start: at("-3h"), End: at("-2h"), Kind: Regular}}, q.slices...)
			},
			want: []string{"regular running -3h0m0s+1h0m0s", "reprocess running -5h0m0s+15m0s", "regular running -2h0m0s+15m0s"}},
		{name: "a forced slice starts outside the windows", start: "-2h", now: "0s", open: false, limit: 3,
			prepare: func(q *Queue) {
				q.Reprocess(at("-5h"), at("-4h45m"), true)
				q.Reprocess(at("-4h"), at("-3h45m"), false)
			},
			want: []string{"reprocess running -5h0m0s+15m0s"}},
		{name: "a slice waits for its due time", start: "-2h", now: "0s", open: true, limit: 1,
			prepare: func(q *Queue) {
				q.Reprocess(at("-5h"), at("-4h45m"), false)
				q.slices[0].Due = at("1m")
			},
			want: []string{"regular running -2h0m0s+15m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(tc.start)
			if tc.prepare != nil {
				tc.prepare(q)
			}
			got := q.Launch(at(tc.now), tc.open, tc.limit)
			require.Equal(t, tc.want, windows(got))
			require.Equal(t, tc.caught, q.CaughtUp())
			for _, s := range got {
				require.Equal(t, at(tc.now), s.StartedAt)
			}
		})
	}
}

func TestLaunchLeavesABusyRegularSliceQueued(t *testing.T) {
	q := newQueue("-2h")
	q.Reprocess(at("-2h"), at("-1h45m"), false)
	require.Len(t, q.Launch(t0, true, 1), 1) // the reprocess
	started := q.Launch(t0, true, 2)
	require.Equal(t, []string{"regular running -1h45m0s+15m0s"}, windows(started), "the regular slice of the busy ID waits")
	require.Equal(t, []string{"regular queued -2h0m0s+15m0s", "regular running -1h45m0s+15m0s", "reprocess running -2h0m0s+15m0s"}, windows(q.Slices()))
	_, ok := q.Finish(testID(at("-2h"), at("-1h45m")), Report{Outcome: Completed}, t0, nil)
	require.True(t, ok)
	require.Equal(t, []string{"regular running -2h0m0s+15m0s"}, windows(q.Launch(t0, true, 2)), "it starts once the reprocess ended")
}

func TestFinish(t *testing.T) {
	cases := []struct {
		name      string
		finish    int // which of the three running slices
		report    Report
		watermark string
		left      []string
	}{
		{"the first completes: the watermark moves", 0, Report{Outcome: Completed}, "-1h45m",
			[]string{"regular running -1h45m0s+15m0s", "regular running -1h30m0s+15m0s"}},
		{"a later one completes: held back", 1, Report{Outcome: Completed}, "-2h",
			[]string{"regular running -2h0m0s+15m0s", "regular held -1h45m0s+15m0s", "regular running -1h30m0s+15m0s"}},
		{"dead-lettered counts as finished", 0, Report{Outcome: DeadLettered}, "-1h45m",
			[]string{"regular running -1h45m0s+15m0s", "regular running -1h30m0s+15m0s"}},
		{"an unknown outcome counts as finished", 2, Report{Outcome: Unknown}, "-2h",
			[]string{"regular running -2h0m0s+15m0s", "regular running -1h45m0s+15m0s", "regular held -1h30m0s+15m0s"}},
		{"a split is replaced in place by its halves", 1, Report{Outcome: Split}, "-2h",
			[]string{"regular running -2h0m0s+15m0s", "regular queued -1h45m0s+7m30s", "regular queued -1h37m30s+7m30s", "regular running -1h30m0s+15m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue("-2h")
			started := q.Launch(t0, true, 3)
			f, ok := q.Finish(started[tc.finish].ID, tc.report, t0, func() bool { t.Fatal("asked with re-sweeps off"); return false })
			require.True(t, ok)
			require.Equal(t, started[tc.finish], f.Slice)
			require.Equal(t, at(tc.watermark), q.Watermark())
			require.Equal(t, tc.left, windows(q.Slices()))
		})
	}
}

func TestFinishAfterHeldSlicesMovesTheWatermarkOverThem(t *testing.T) {
	q := newQueue("-2h")
	s := q.Launch(t0, true, 3)
	for _, i := range []int{2, 1} {
		_, ok := q.Finish(s[i].ID, Report{Outcome: Completed}, t0, nil)
		require.True(t, ok)
		require.Equal(t, at("-2h"), q.Watermark())
	}
	_, ok := q.Finish(s[0].ID, Report{Outcome: DeadLettered}, t0, nil)
	require.True(t, ok)
	require.Equal(t, at("-1h15m"), q.Watermark())
	require.Equal(t, q.Next(), q.Watermark())
	require.Empty(t, q.Slices())
}

func TestFinishOfWhatDoesNotRun(t *testing.T) {
	q := newQueue("-2h")
	q.Reprocess(at("-5h"), at("-4h45m"), false)
	_, ok := q.Finish(testID(at("-5h"), at("-4h45m")), Report{}, t0, nil)
	require.False(t, ok, "queued, not running")
	_, ok = q.Finish("nope", Report{}, t0, nil)
	require.False(t, ok)
	_, ok = q.Retry("nope", t0)
	require.False(t, ok)
}

func TestSplitHalves(t *testing.T) {
	q := newQueue("-2h")
	q.Reprocess(at("-5h"), at("-4h45m"), true)
	r := q.Launch(t0, false, 1)[0]
	_, ok := q.Finish(r.ID, Report{Outcome: Split}, t0, nil)
	require.True(t, ok)
	halves := q.Slices()
	require.Equal(t, []Slice{
		{ID: testID(at("-5h"), at("-4h52m30s")), Start: at("-5h"), End: at("-4h52m30s"), Kind: Reprocess, Force: true},
		{ID: testID(at("-4h52m30s"), at("-4h45m")), Start: at("-4h52m30s"), End: at("-4h45m"), Kind: Reprocess, Force: true},
	}, halves, "queued, forced like their parent, started afresh")

	// An odd window is cut at the microsecond.
	q = New(t0, rules, testID)
	q.Reprocess(t0, t0.Add(3*time.Microsecond+1), false)
	r = q.Launch(at("1h"), true, 1)[0]
	q.Finish(r.ID, Report{Outcome: Split}, at("1h"), nil)
	require.Equal(t, t0.Add(time.Microsecond), q.Slices()[0].End)
}

func TestRetry(t *testing.T) {
	q := newQueue("-2h")
	s := q.Launch(t0, true, 1)[0]
	r, ok := q.Retry(s.ID, at("10s"))
	require.True(t, ok)
	require.Equal(t, Queued, r.State)
	require.Equal(t, at("10s"), r.Due)
	require.Equal(t, at("-2h"), q.Watermark(), "a slice that did not report holds the watermark")
	require.True(t, q.Slices()[0].WaitingAt(t0))
	require.Equal(t, []string{"regular running -1h45m0s+15m0s"}, windows(q.Launch(t0, true, 1)), "it waits; the next one starts")
	due, ok := q.NextDue(t0, true)
	require.True(t, ok)
	require.Equal(t, s.ID, due.ID)
	require.Equal(t, []string{"regular running -2h0m0s+15m0s"}, windows(q.Launch(at("10s"), true, 2)))
}

func TestReprocess(t *testing.T) {
	q := newQueue("-2h")
	s := q.Launch(t0, true, 2)
	q.Finish(s[1].ID, Report{Outcome: Completed}, t0, nil) // held
	n := q.Reprocess(at("-2h"), at("-1h20m"), false)
	// [-2h, -1h45m) runs, so it is not queued again; [-1h45m, -1h30m) is
	// held (finished): it is; the last slice is short.
	require.Equal(t, 2, n)
	require.Equal(t, []string{
		"regular running -2h0m0s+15m0s", "regular held -1h45m0s+15m0s",
		"reprocess queued -1h45m0s+15m0s", "reprocess queued -1h30m0s+10m0s",
	}, windows(q.Slices()))
	require.Zero(t, q.Reprocess(at("-1h45m"), at("-1h30m"), false), "queued already")
	require.Equal(t, at("-2h"), q.Watermark(), "reprocessing never moves the watermark")
}

func TestResweep(t *testing.T) {
	r := rules
	r.ResweepDelay = 10 * time.Minute
	cases := []struct {
		name           string
		start          string // the slice [start, start+15m)
		startedAt      string
		finishedAt     string
		fromFetchStart bool
		want           []string
	}{
		{"a recent window is swept again", "-16m", "0s", "1m", true, []string{"resweep queued -16m0s+15m0s"}},
		{"an old window is not", "-2h", "0s", "1m", true, []string{}},
		{"due after the first fetch started, though not after it finished", "-16m", "0s", "10m", true, []string{"resweep queued -16m0s+15m0s"}},
		{"the v0.1 rule judged by when it finished", "-16m", "0s", "10m", false, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := New(at(tc.start), r, testID)
			s := q.Launch(at(tc.startedAt), true, 1)[0]
			asked := 0
			_, ok := q.Finish(s.ID, Report{Outcome: Completed}, at(tc.finishedAt), func() bool { asked++; return tc.fromFetchStart })
			require.True(t, ok)
			require.Equal(t, 1, asked, "the version question is asked once per completed regular slice")
			require.Equal(t, tc.want, windows(q.Slices()))
			for _, sw := range q.Slices() {
				require.True(t, sw.Sweep)
				require.Equal(t, s.ID, sw.ID)
				require.Equal(t, s.End.Add(10*time.Minute), sw.Due)
			}
		})
	}
	t.Run("a split re-sweep runs plain halves", func(t *testing.T) {
		q := New(at("-16m"), r, testID)
		s := q.Launch(t0, true, 1)[0]
		q.Finish(s.ID, Report{Outcome: Completed}, t0, func() bool { return true })
		sw := q.Launch(at("10m"), true, 1)
		require.Equal(t, []string{"resweep running -16m0s+15m0s"}, windows(sw))
		q.Finish(sw[0].ID, Report{Outcome: Split}, at("11m"), func() bool { t.Fatal("asked for a re-sweep"); return false })
		for _, h := range q.Slices() {
			require.Equal(t, Resweep, h.Kind)
			require.False(t, h.Sweep, "v0.1 ran the halves of a split re-sweep as plain fetches")
			require.Zero(t, h.Due)
		}
	})
}

func TestNextDue(t *testing.T) {
	q := newQueue("-2h")
	q.Reprocess(at("-5h"), at("-4h30m"), false)
	q.Reprocess(at("-6h"), at("-5h45m"), true)
	q.slices[0].Due, q.slices[1].Due, q.slices[2].Due = at("30m"), at("20m"), at("40m")
	s, ok := q.NextDue(t0, true)
	require.True(t, ok)
	require.Equal(t, at("20m"), s.Due)
	s, ok = q.NextDue(t0, false)
	require.True(t, ok)
	require.Equal(t, at("40m"), s.Due, "outside a window only forced slices count")
	_, ok = q.NextDue(at("1h"), true)
	require.False(t, ok, "nothing due after now")
}

func TestSpan(t *testing.T) {
	r := rules
	r.Interval = time.Hour
	r.MaxSpan = 8
	r.MaxPages = 8
	cases := []struct {
		name   string
		span   int
		window time.Duration
		report Report
		want   int
	}{
		{"sparse: grows by what a quarter of max_pages would hold", 1, time.Hour, Report{Outcome: Completed, Pages: 1, Fetched: 100}, 2},
		{"very sparse: at most eightfold, never past the maximum", 2, 2 * time.Hour, Report{Outcome: Completed, Pages: 1, Fetched: 1}, 8},
		{"dense: stays", 2, 2 * time.Hour, Report{Outcome: Completed, Pages: 3, Fetched: 300}, 2},
		{"narrower than the span: says nothing", 4, time.Hour, Report{Outcome: Completed, Pages: 1, Fetched: 1}, 4},
		{"split: halves", 8, 8 * time.Hour, Report{Outcome: Split}, 4},
		{"dead-lettered: halves", 4, 4 * time.Hour, Report{Outcome: DeadLettered}, 2},
		{"a split half under one interval: halves to one", 2, 30 * time.Minute, Report{Outcome: Split}, 1},
		{"unknown: stays", 4, 4 * time.Hour, Report{Outcome: Unknown}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := New(at("-48h"), r, testID)
			q.span = tc.span
			q.slices = []Slice{{ID: "s", Start: at("-48h"), End: at("-48h").Add(tc.window), State: Running}}
			f, ok := q.Finish("s", tc.report, t0, nil)
			require.True(t, ok)
			require.Equal(t, tc.want, q.Span())
			if tc.want != tc.span {
				require.Equal(t, tc.want, f.Span)
			} else {
				require.Zero(t, f.Span)
			}
		})
	}
	t.Run("cut to the settled intervals, at least one", func(t *testing.T) {
		q := New(at("-3h"), r, testID)
		q.span = 8
		require.Equal(t, []string{"regular running -3h0m0s+2h0m0s"}, windows(q.Launch(t0, true, 1)))
		require.Equal(t, []string{"regular running -1h0m0s+1h0m0s"}, windows(q.Launch(at("1m"), true, 2)))
	})
	t.Run("off", func(t *testing.T) {
		q := New(at("-3h"), rules, testID)
		q.span = 8
		require.Equal(t, 1, q.Span())
	})
}

// TestSpanDensityGrowth: with DensityGrowth a very sparse slice widens the
// span in one step to what a quarter of max_pages holds at its density, up
// to MaxSpan; the version is asked only when the step exceeds eightfold.
func TestSpanDensityGrowth(t *testing.T) {
	r := rules
	r.Interval = time.Hour
	r.MaxSpan = 168
	r.MaxPages = 100
	r.PageSize = 250 // a quarter of max_pages holds 6,250 orders
	cases := []struct {
		name    string
		fetched int
		allowed bool
		want    int
		asked   bool
	}{
		{"very sparse: straight to the density's span", 250, true, 25, true},
		{"sparser still: up to the maximum", 6, true, 168, true},
		{"not allowed (before the version): eightfold", 250, false, 8, true},
		{"sparse, under eightfold: the version is not asked", 1000, true, 6, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			r := r
			r.DensityGrowth = func() bool { asked = true; return tc.allowed }
			q := New(at("-480h"), r, testID)
			q.slices = []Slice{{ID: "s", Start: at("-480h"), End: at("-479h"), State: Running}}
			_, ok := q.Finish("s", Report{Outcome: Completed, Pages: 1, Fetched: tc.fetched}, t0, nil)
			require.True(t, ok)
			require.Equal(t, tc.want, q.Span())
			require.Equal(t, tc.asked, asked)
		})
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	r := rules
	r.ResweepDelay = 10 * time.Minute
	q := New(at("-1h"), r, testID)
	s := q.Launch(t0, true, 3)
	q.Finish(s[1].ID, Report{Outcome: Completed}, t0, func() bool { return true })
	q.Reprocess(at("-5h"), at("-4h45m"), true)
	q.Retry(s[2].ID, at("1m"))
	raw, err := json.Marshal(q.Snapshot())
	require.NoError(t, err)
	require.Contains(t, string(raw), `"kind":"reprocess","state":"queued"`)

	var snap Snapshot
	require.NoError(t, json.Unmarshal(raw, &snap))
	back := Restore(snap, r, testID)
	want := q.Slices()
	want[0].State = Queued // running when it was carried: started again
	require.Equal(t, want, back.Slices())
	require.Equal(t, q.Watermark(), back.Watermark())
	require.Equal(t, q.Next(), back.Next())

	require.Error(t, json.Unmarshal([]byte(`{"slices":[{"kind":"someday"}]}`), &snap))
	require.Error(t, json.Unmarshal([]byte(`{"slices":[{"state":"lost"}]}`), &snap))
}

func TestRestorePutsKindsInPriorityOrder(t *testing.T) {
	back := Restore(Snapshot{Next: t0, Slices: []Slice{
		{ID: "w", Kind: Resweep}, {ID: "p", Kind: Reprocess, State: Held}, {ID: "r", Kind: Reprocess}, {ID: "g", Kind: Regular, State: Held},
	}}, rules, testID)
	var ids []string
	for _, s := range back.Slices() {
		ids = append(ids, s.ID)
	}
	require.Equal(t, []string{"g", "r", "w"}, ids, "a finished reprocess slice is not carried")
}

// TestBackfillProbesFirst: with ProbeFirst a run with no span yet starts
// one backfill slice and waits for its report before starting more, then
// fills the concurrency at the span learned; without it (before the
// version) it starts as many one-interval slices as allowed at once.
func TestBackfillProbesFirst(t *testing.T) {
	r := rules
	r.Interval = time.Hour
	r.MaxSpan = 6
	r.MaxPages = 100
	r.PageSize = 100
	for _, allowed := range []bool{true, false} {
		t.Run(fmt.Sprint("allowed ", allowed), func(t *testing.T) {
			asked := 0
			r := r
			r.ProbeFirst = func() bool { asked++; return allowed }
			r.DensityGrowth = func() bool { return allowed }
			q := New(at("-480h"), r, testID)
			first := q.Launch(t0, true, 4)
			if !allowed {
				require.Len(t, first, 4, "before the version: four one-interval slices at once")
				return
			}
			require.Len(t, first, 1, "the probe runs alone")
			require.Equal(t, time.Hour, first[0].End.Sub(first[0].Start))
			require.Equal(t, 1, asked)
			_, ok := q.Finish(first[0].ID, Report{Outcome: Completed, Pages: 1, Fetched: 10}, t0, nil)
			require.True(t, ok)
			rest := q.Launch(t0, true, 4)
			require.Len(t, rest, 4)
			for _, s := range rest {
				require.Equal(t, 6*time.Hour, s.End.Sub(s.Start), "at the span the probe suggested")
			}
			require.Equal(t, 1, asked, "asked only when it held a slice back")
		})
	}
	t.Run("a carried span needs no probe", func(t *testing.T) {
		r := r
		r.ProbeFirst = func() bool { t.Fatal("asked"); return true }
		q := Restore(Snapshot{Next: at("-480h"), Span: 4}, r, testID)
		require.Len(t, q.Launch(t0, true, 4), 4)
	})
}
