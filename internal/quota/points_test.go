package quota_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/quota"
)

// pointBackends are the Points implementations to test: the shared table
// on every backend, and the in-process books.
func pointBackends(t *testing.T) map[string]quota.Points {
	out := map[string]quota.Points{"memory": quota.NewMemory(nil)}
	for name, dsn := range backends(t) {
		s, err := quota.Open(context.Background(), dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		p, ok := s.(quota.Points)
		require.True(t, ok, "%s slots book points too", name)
		out[name] = p
	}
	return out
}

// TestPointsBookCostNotRequests: a bucket of 100 points restoring 10 a
// second (T = 105 ms a point with the jitter allowance) admits a request
// once it holds the request's cost, whatever the number of requests.
func TestPointsBookCostNotRequests(t *testing.T) {
	b := quota.Budget{Rate: 10, Capacity: 100}
	perPoint := (1 + quota.JitterAllowance) / b.Rate // seconds
	steps := []struct {
		name           string
		cost           float64
		settle         bool
		delta, deficit float64
		wantWait       float64 // seconds; -1: ErrNoSlot
		maxWait        time.Duration
	}{
		{name: "a full bucket admits 60 at once", cost: 60, wantWait: 0},
		{name: "40 left: 60 more waits for 20 points", cost: 60, wantWait: 20 * perPoint},
		{name: "a third request would wait for 80 points: refused, nothing booked", cost: 60, wantWait: -1, maxWait: time.Second},
		{name: "the platform refunds 100 of the 120 booked", settle: true, delta: -100},
		{name: "80 left: 60 go at once", cost: 60, wantWait: 0},
		{name: "the platform reports 95 missing, more than booked", settle: true, deficit: 95},
		{name: "5 left: 10 wait for 5 points", cost: 10, wantWait: 5 * perPoint},
		{name: "a large refund empties the books down to now", settle: true, delta: -1000},
		{name: "cost 0", cost: 0, wantWait: 0},
	}
	for name, pts := range pointBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			key := "points-" + time.Now().Format("150405.000000000")
			for _, st := range steps {
				if st.settle {
					require.NoError(t, pts.SettlePoints(ctx, key, b, st.delta, st.deficit), st.name)
					continue
				}
				maxWait := st.maxWait
				if maxWait == 0 {
					maxWait = time.Minute
				}
				w, err := pts.ReservePoints(ctx, key, b, st.cost, maxWait)
				if st.wantWait < 0 {
					require.ErrorIs(t, err, quota.ErrNoSlot, st.name)
					continue
				}
				require.NoError(t, err, st.name)
				require.InDelta(t, st.wantWait, w.Seconds(), 0.1, st.name)
			}
		})
	}
}

func TestPointsRefuseImpossibleBookings(t *testing.T) {
	for name, pts := range pointBackends(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			_, err := pts.ReservePoints(ctx, "x", quota.Budget{Rate: 100, Capacity: 1000}, 1001, time.Minute)
			require.ErrorContains(t, err, "a request of cost 1001 can never fit a bucket of 1000 points")
			_, err = pts.ReservePoints(ctx, "x", quota.Budget{Rate: 0, Capacity: 1000}, 1, time.Minute)
			require.ErrorContains(t, err, "rate must be positive")
			require.Error(t, pts.SettlePoints(ctx, "x", quota.Budget{Rate: 100}, 1, 0), "capacity must be positive")
		})
	}
}

// TestMemoryClock: the in-process books follow their clock, so the
// arithmetic is checked exactly.
func TestMemoryClock(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	m := quota.NewMemory(func() time.Time { return now })
	ctx := context.Background()
	b := quota.Budget{Rate: 100, Capacity: 2000}
	w, err := m.ReservePoints(ctx, "shop", b, 2000, time.Minute)
	require.NoError(t, err)
	require.Zero(t, w)
	w, err = m.ReservePoints(ctx, "shop", b, 500, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 5250*time.Millisecond, w, "500 points at 100/s, 5% wider")
	now = now.Add(time.Hour)
	w, err = m.ReservePoints(ctx, "shop", b, 2000, time.Minute)
	require.NoError(t, err)
	require.Zero(t, w, "an hour later the bucket is full again")
	w, err = m.Reserve(ctx, "requests", 2, 1, time.Minute)
	require.NoError(t, err)
	require.Zero(t, w)
	w, err = m.Reserve(ctx, "requests", 2, 1, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 525*time.Millisecond, w, "request slots keep their arithmetic")
}
