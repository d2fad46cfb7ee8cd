package activities

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/quota"
)

// fakeSlots records bookings and answers a fixed wait.
type fakeSlots struct {
	wait  time.Duration
	err   error
	rates []float64
}

// fakePoints are shared slots that book points too.
type fakePoints struct {
	fakeSlots
	booked  []string
	settled []string
}

func (f *fakePoints) ReservePoints(_ context.Context, key string, b quota.Budget, cost float64, _ time.Duration) (time.Duration, error) {
	f.booked = append(f.booked, fmt.Sprintf("%s %v of %v/%v", key, cost, b.Capacity, b.Rate))

	return f.wait, f.err
}

func (f *fakePoints) SettlePoints(_ context.Context, key string, _ quota.Budget, delta, deficit float64) error {
	f.settled = append(f.settled, fmt.Sprintf("%s %+v %v", key, delta, deficit))
	return nil
}

func (f *fakeSlots) Reserve(_ context.Context, _ string, rps float64, _ int, _ time.Duration) (time.Duration, error) {
	f.rates = append(f.rates, rps)
	return f.wait, f.err
}

func (f *fakeSlots) Close() error { return nil }

func TestLimitersFollowReportedLimitButNeverExceedSettings(t *testing.T) {
	var l Limiters // the zero value works, as a struct literal in a worker would
	p := testPlatform()
	p.RateLimit.RPS, p.RateLimit.Burst = 10, 0
	rps, burst := l.Effective(p.Settings())
	require.Equal(t, 10.0, rps)
	require.Equal(t, 1, burst, "burst 0 means one request at a time")

	l.Report(p.Name, 4) // the platform lowered its limit
	rps, _ = l.Effective(p.Settings())
	require.Equal(t, 4.0, rps)
	l.Report(p.Name, 0) // a response without the header changes nothing
	rps, _ = l.Effective(p.Settings())
	require.Equal(t, 4.0, rps)
	l.Report(p.Name, 50) // a higher announcement never raises the configured limit
	rps, _ = l.Effective(p.Settings())
	require.Equal(t, 10.0, rps)
	require.NoError(t, l.Wait(context.Background(), p.Settings()))
}

func TestLimitersBookSharedSlotsAtTheEffectiveRate(t *testing.T) {
	slots := &fakeSlots{wait: 30 * time.Millisecond}
	l := NewLimiters()
	l.Shared = slots
	p := testPlatform()
	p.RateLimit.RPS = 8
	l.Report(p.Name, 2)
	start := time.Now()
	require.NoError(t, l.Wait(context.Background(), p.Settings()))
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "waits for the booked slot")
	require.Equal(t, []float64{2}, slots.rates)

	slots.err = quota.ErrNoSlot
	err := l.Wait(context.Background(), p.Settings())
	require.ErrorIs(t, err, quota.ErrNoSlot)

	slots.err, slots.wait = nil, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, l.Wait(ctx, p.Settings()), context.DeadlineExceeded, "an attempt's deadline ends the wait")
}

func TestMeterBooksPointsOfTheSharedBudget(t *testing.T) {
	shared := &fakePoints{}
	l := NewLimiters()
	l.Shared = shared
	m := l.Meter(testPlatform().Settings())
	b := connectors.CostBudget{Rate: 100, Capacity: 2000}
	require.NoError(t, m.Book(context.Background(), b, 852))
	require.NoError(t, m.Settle(context.Background(), b, -800, 40))
	require.Equal(t, []string{"points/shop 852 of 2000/100"}, shared.booked, "a row of its own, apart from the request slots")
	require.Equal(t, []string{"points/shop -800 40"}, shared.settled)
	require.Empty(t, shared.rates, "points are not request slots")

	shared.err = quota.ErrNoSlot
	err := m.Book(context.Background(), b, 852)
	require.ErrorIs(t, err, quota.ErrNoSlot)
	require.ErrorContains(t, err, "shop: no 852 query points (100 a second) free within this attempt; ask again in 8.52s")
}

func TestMeterPacesInProcessWithoutSharedPoints(t *testing.T) {
	for name, l := range map[string]*Limiters{
		"no shared slots":             {},
		"shared slots without points": {Shared: &fakeSlots{}},
	} {
		t.Run(name, func(t *testing.T) {
			m := l.Meter(testPlatform().Settings())
			b := connectors.CostBudget{Rate: 100, Capacity: 1000}
			require.NoError(t, m.Book(context.Background(), b, 1000), "a full bucket")
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			require.ErrorIs(t, m.Book(ctx, b, 500), quota.ErrNoSlot, "500 points take 5 s to restore, past the attempt")
			require.NoError(t, m.Settle(context.Background(), b, -1000, 0), "Shopify refunded the query")
			require.NoError(t, m.Book(ctx, b, 500))
		})
	}
	var none *Limiters
	require.Nil(t, none.Meter(testPlatform().Settings()))
}

// TestMeterAsksAgainAtTheTurn: a query the points bucket has no room for
// within the attempt asks again shortly before the booking's turn (less
// half of what an attempt may wait, at least a second), not one query's
// spacing later: a 961-point page on a bucket restoring 50 a second asked
// every 19.2 s when its turn was 3 s away, and the live windows asking
// meanwhile took the points (CI, stop 36).
func TestMeterAsksAgainAtTheTurn(t *testing.T) {
	shared := &fakePoints{}
	l := NewLimiters()
	l.Shared = shared
	m := l.Meter(testPlatform().Settings())
	b := connectors.CostBudget{Rate: 50, Capacity: 1000}
	for _, tc := range []struct {
		turn, within time.Duration
		lo, hi       time.Duration
	}{
		{turn: 3 * time.Second, within: 4 * time.Second, lo: time.Second, hi: 3 * time.Second},
		{turn: 40 * time.Second, within: 6 * time.Second, lo: 37 * time.Second, hi: 39 * time.Second},
		{turn: 500 * time.Millisecond, within: 4 * time.Second, lo: time.Second, hi: time.Second},
		{turn: time.Hour, within: 4 * time.Second, lo: 5 * time.Minute, hi: 5 * time.Minute},
	} {
		shared.err = &quota.NoRoomError{Cost: 961, Budget: quota.Budget(b), Available: 813, Wait: tc.turn}
		ctx, cancel := context.WithTimeout(context.Background(), tc.within)
		err := m.Book(ctx, b, 961)
		cancel()
		var wait *SlotWaitError
		require.ErrorAs(t, err, &wait)
		require.GreaterOrEqual(t, wait.Delay, tc.lo, "turn in %s", tc.turn)
		require.LessOrEqual(t, wait.Delay, tc.hi, "turn in %s", tc.turn)
	}
}
