package slicequeue

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPhaseOf pins phases: they place slice IDs, so a change here would
// give every platform's windows new IDs.
func TestPhaseOf(t *testing.T) {
	cases := []struct {
		platform string
		interval time.Duration
		want     time.Duration
	}{
		{"shop-x", 15 * time.Minute, 2*time.Minute + 40*time.Second},
		{"shop-x", time.Minute, 40 * time.Second},
		{"shop-x", time.Hour, 47*time.Minute + 40*time.Second},
		{"shopify-acme", 15 * time.Minute, time.Minute + 26*time.Second},
		{"shopify-acme", 10 * time.Second, 6 * time.Second},
		{"cli-a", 10 * time.Second, time.Second},
		{"shop-x", time.Second, 0},
		{"shop-x", 1500 * time.Millisecond, 0},
		{"shop-x", 0, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.platform, " ", tc.interval), func(t *testing.T) {
			require.Equal(t, tc.want, PhaseOf(tc.platform, tc.interval))
			require.Equal(t, tc.want, PhaseOf(tc.platform, tc.interval), "stable")
		})
	}
}

// TestPhasesSpreadAFleet: 1,000 platforms of 60-second intervals (B4) fall
// due in every second of the minute, none much more crowded than the rest.
func TestPhasesSpreadAFleet(t *testing.T) {
	perSecond := map[time.Duration]int{}
	for i := 1; i <= 1000; i++ {
		p := PhaseOf(fmt.Sprintf("shop-%04d", i), time.Minute)
		require.True(t, p >= 0 && p < time.Minute && p%time.Second == 0, "phase %s", p)
		perSecond[p]++
	}
	require.Len(t, perSecond, 60, "every second of the minute has platforms")
	for p, n := range perSecond {
		require.LessOrEqual(t, n, 35, "second %s holds %d of 1,000 platforms (17 on average)", p, n)
	}
}

func TestGrid(t *testing.T) {
	g := Grid{Interval: 15 * time.Minute, Phase: 2*time.Minute + 40*time.Second} // shop-x
	cases := []struct {
		t            string
		floor, after string
		on           bool
	}{
		{t: "0s", floor: "-12m20s", after: "2m40s"},
		{t: "2m40s", floor: "2m40s", after: "17m40s", on: true},
		{t: "2m39.999999s", floor: "-12m20s", after: "2m40s"},
		{t: "-12m20s", floor: "-12m20s", after: "2m40s", on: true},
		{t: "-47h59m", floor: "-48h12m20s", after: "-47h57m20s"}, // grid points at :02:40, :17:40, :32:40, :47:40
	}
	for _, tc := range cases {
		t.Run(tc.t, func(t *testing.T) {
			require.Equal(t, at(tc.floor), g.Floor(at(tc.t)))
			require.Equal(t, at(tc.after), g.After(at(tc.t)))
			require.Equal(t, tc.on, g.On(at(tc.t)))
		})
	}
	// Grid points do not depend on the time zone a time is read in.
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	require.Equal(t, at("-12m20s"), g.Floor(t0.In(berlin)))
}

// alignedRules are rules on shop-x's grid: 15-minute slices at :02:40,
// :17:40, :32:40 and :47:40.
func alignedRules() Rules {
	r := rules
	r.Aligned, r.Phase = true, PhaseOf("shop-x", r.Interval)
	return r
}

// TestAlignedLaunch: a cursor started at any instant places its slices on
// the grid, from the grid point at or before its start.
func TestAlignedLaunch(t *testing.T) {
	cases := []struct {
		name  string
		start string
		span  int
		want  []string
	}{
		{name: "an unrounded start is rounded down to the grid", start: "-48h0m0.895169s", span: 1,
			want: []string{"regular running -48h12m20s+15m0s", "regular running -47h57m20s+15m0s", "regular running -47h42m20s+15m0s"}},
		{name: "a start on the grid stays", start: "-57m20s", span: 1,
			want: []string{"regular running -57m20s+15m0s", "regular running -42m20s+15m0s", "regular running -27m20s+15m0s"}},
		{name: "wide backfill slices stay on the grid", start: "-3h", span: 4,
			want: []string{"regular running -3h12m20s+1h0m0s", "regular running -2h12m20s+1h0m0s", "regular running -1h12m20s+1h0m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := alignedRules()
			r.MaxSpan = tc.span
			q := New(at(tc.start), r, testID)
			q.span = tc.span
			require.Equal(t, tc.want, windows(q.Launch(t0, true, 3)))
		})
	}
}

// TestAlignedFollowsThePresent: once caught up, each slice starts when its
// grid point has settled, and NextSettles says when.
func TestAlignedFollowsThePresent(t *testing.T) {
	q := New(at("-20m"), alignedRules(), testID)
	require.Equal(t, []string{"regular running -27m20s+15m0s"}, windows(q.Launch(t0, true, 3)))
	require.Equal(t, at("3m40s"), q.NextSettles(), "the grid point 2m40s, settled a minute")
	require.Empty(t, q.Launch(at("3m39s"), true, 3))
	require.Equal(t, []string{"regular running -12m20s+15m0s"}, windows(q.Launch(at("3m40s"), true, 3)))
}

// TestAlignedReprocess: a reprocess tiles on the same grid, so a regular
// slice's window gets its ID again, and a range off the grid is cut at the
// grid points (exactly the range asked for).
func TestAlignedReprocess(t *testing.T) {
	q := New(at("-2h"), alignedRules(), testID)
	ran := q.Launch(t0, true, 2)
	for _, s := range ran {
		q.Finish(s.ID, Report{Outcome: Completed}, t0, nil)
	}
	require.Equal(t, at("-1h42m20s"), q.Watermark())

	require.Equal(t, 2, q.Reprocess(ran[0].Start, ran[1].End, false))
	var ids []string
	for _, s := range q.Slices() {
		ids = append(ids, s.ID)
	}
	require.Equal(t, []string{ran[0].ID, ran[1].ID}, ids, "the regular slices' IDs, reused")

	q = New(at("-2h"), alignedRules(), testID)
	require.Equal(t, 4, q.Reprocess(at("-1h"), at("-20m"), false))
	require.Equal(t, []string{
		"reprocess queued -1h0m0s+2m40s", "reprocess queued -57m20s+15m0s",
		"reprocess queued -42m20s+15m0s", "reprocess queued -27m20s+7m20s",
	}, windows(q.Slices()))
	require.Zero(t, q.Reprocess(at("-57m20s"), at("-42m20s"), false), "queued already, under the same ID")
}

// TestSwitchToTheGrid: a cursor that ran on v0.1's grid (from an unrounded
// start) continues as new on the aligned grid. The first aligned slice
// starts exactly where the old run stopped and ends on the next grid point;
// from then on slices lie on the grid: no instant is skipped or fetched
// twice.
func TestSwitchToTheGrid(t *testing.T) {
	cases := []struct {
		name   string
		start  string // v0.1's unrounded start
		span   int
		bridge string
		then   []string
	}{
		{name: "bridge shorter than an interval", start: "-2h0m7.5s", span: 1,
			bridge: "regular running -1h30m7.5s+2m47.5s",
			then:   []string{"regular running -1h27m20s+15m0s", "regular running -1h12m20s+15m0s"}},
		{name: "old next already on the grid: no bridge", start: "-1h57m20s", span: 1,
			bridge: "regular running -1h27m20s+15m0s",
			then:   []string{"regular running -1h12m20s+15m0s", "regular running -57m20s+15m0s"}},
		{name: "wide backfill span: the bridge is cut at the grid, then whole intervals", start: "-6h0m1s", span: 4,
			bridge: "regular running -4h0m1s+47m41s",
			then:   []string{"regular running -3h12m20s+1h0m0s", "regular running -2h12m20s+1h0m0s"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := rules
			old.MaxSpan = tc.span
			q := New(at(tc.start), old, testID)
			q.span = tc.span
			var covered []Slice
			for _, s := range q.Launch(t0, true, 2) {
				q.Finish(s.ID, Report{Outcome: Completed, Pages: 8}, t0, nil)
				covered = append(covered, s)
			}
			snap := q.Snapshot()
			aligned := alignedRules()
			aligned.MaxSpan = tc.span
			q = Restore(snap, aligned, testID)
			q.span = tc.span
			got := q.Launch(t0, true, 3)
			require.Equal(t, append([]string{tc.bridge}, tc.then...), windows(got))
			require.Equal(t, snap.Next, got[0].Start, "the first aligned slice starts at the old run's next")
			covered = append(covered, got...)
			for i := 1; i < len(covered); i++ {
				require.Equal(t, covered[i-1].End, covered[i].Start, "no gap, no overlap between %s and %s", covered[i-1], covered[i])
			}
			for _, s := range got[1:] {
				require.True(t, GridOf("shop-x", rules.Interval).On(s.Start), "%s starts on the grid", s)
			}
		})
	}
}
