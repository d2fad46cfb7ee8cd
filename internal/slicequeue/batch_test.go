package slicequeue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func batchID(s, e time.Time) string { return s.Format("15:04:05") + "-" + e.Format("15:04:05") }

// TestBatchHoldsUntilTheWholeBatchSettled: with Batch 15 of 1-minute
// intervals (webhook_interval 15m) a regular slice near the present waits
// until all 15 intervals from Next have settled, then covers them as one
// grid-aligned slice; with Batch back at 1 the next slice starts as soon as
// its one interval settled. The grid never moves.
func TestBatchHoldsUntilTheWholeBatchSettled(t *testing.T) {
	base := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	rules := Rules{Interval: time.Minute, Settle: 10 * time.Second, Aligned: true, Phase: PhaseOf("shop-x", time.Minute), Batch: 15}
	g := Grid{Interval: time.Minute, Phase: rules.Phase}
	start := g.Floor(base)
	q := New(start, rules, batchID)

	require.Equal(t, start.Add(15*time.Minute+10*time.Second), q.NextSettles())
	require.Equal(t, start.Add(time.Minute+10*time.Second), q.BatchSettles(1))
	require.Empty(t, q.Launch(start.Add(time.Minute+10*time.Second), true, 4), "one interval settled: held")
	require.Empty(t, q.Launch(start.Add(15*time.Minute), true, 4), "the batch has not settled")
	got := q.Launch(start.Add(15*time.Minute+10*time.Second), true, 4)
	require.Len(t, got, 1)
	require.Equal(t, start, got[0].Start)
	require.Equal(t, start.Add(15*time.Minute), got[0].End)
	require.True(t, g.On(got[0].Start) && g.On(got[0].End))
	require.True(t, q.CaughtUp())

	// Not live any more: one interval at a time, from where the batch ended.
	rules.Batch = 1
	q.SetRules(rules)
	next := start.Add(15 * time.Minute)
	require.Equal(t, next.Add(time.Minute+10*time.Second), q.NextSettles())
	got = q.Launch(next.Add(time.Minute+10*time.Second), true, 4)
	require.Len(t, got, 1)
	require.Equal(t, next, got[0].Start)
	require.Equal(t, next.Add(time.Minute), got[0].End)
}

// TestBatchBehindFetchesWhatSettled: a cursor far behind (a backfill) is
// not held: what has settled is fetched, at least the batch per slice.
func TestBatchBehindFetchesWhatSettled(t *testing.T) {
	base := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	for _, aligned := range []bool{true, false} {
		q := New(base, Rules{Interval: time.Minute, Aligned: aligned, Batch: 15}, batchID)
		got := q.Launch(base.Add(40*time.Minute), true, 4)
		require.Len(t, got, 2, "aligned %v", aligned)
		require.Equal(t, base.Add(15*time.Minute), got[0].End)
		require.Equal(t, base.Add(30*time.Minute), got[1].End)
		require.Equal(t, base.Add(45*time.Minute), q.NextSettles(), "the third batch is held")
	}
}
