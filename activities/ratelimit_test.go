package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/quota"
)

// fakeSlots records bookings and answers a fixed wait.
type fakeSlots struct {
	wait  time.Duration
	err   error
	rates []float64
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
	rps, burst := l.Effective(p)
	require.Equal(t, 10.0, rps)
	require.Equal(t, 1, burst, "burst 0 means one request at a time")

	l.Report(p.Name, 4) // the platform lowered its limit
	rps, _ = l.Effective(p)
	require.Equal(t, 4.0, rps)
	l.Report(p.Name, 0) // a response without the header changes nothing
	rps, _ = l.Effective(p)
	require.Equal(t, 4.0, rps)
	l.Report(p.Name, 50) // a higher announcement never raises the configured limit
	rps, _ = l.Effective(p)
	require.Equal(t, 10.0, rps)
	require.NoError(t, l.Wait(context.Background(), p))
}

func TestLimitersBookSharedSlotsAtTheEffectiveRate(t *testing.T) {
	slots := &fakeSlots{wait: 30 * time.Millisecond}
	l := NewLimiters()
	l.Shared = slots
	p := testPlatform()
	p.RateLimit.RPS = 8
	l.Report(p.Name, 2)
	start := time.Now()
	require.NoError(t, l.Wait(context.Background(), p))
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "waits for the booked slot")
	require.Equal(t, []float64{2}, slots.rates)

	slots.err = quota.ErrNoSlot
	err := l.Wait(context.Background(), p)
	require.ErrorIs(t, err, quota.ErrNoSlot)

	slots.err, slots.wait = nil, time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, l.Wait(ctx, p), context.DeadlineExceeded, "an attempt's deadline ends the wait")
}
