package activities

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/mock/gomock"

	"github.com/ordersync/ordersync/connectors"
)

// TestLocalAttemptHandsTheSlotWaitToTheWorkflow: a page's first attempt
// runs as a local activity inside the slice's workflow task, so it must not
// wait there for a request slot: when the platform's rate is booked out it
// returns at once with ErrSlotWait (not retryable, never an API error) and
// the delay to wait, and sends nothing.
func TestLocalAttemptHandsTheSlotWaitToTheWorkflow(t *testing.T) {
	f := newFixture(t)
	in := input()
	in.Platform.RateLimit.RPS, in.Platform.RateLimit.Burst = 0.1, 1 // one request, then 10 s apart
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{}, nil).Times(1)

	_, err := f.env.ExecuteLocalActivity(f.acts.FetchPage, in)
	require.NoError(t, err, "the burst allows the first request")

	started := time.Now()
	_, err = f.env.ExecuteLocalActivity(f.acts.FetchPage, in)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	require.Equal(t, ErrSlotWait, app.Type())
	require.True(t, app.NonRetryable())
	require.InDelta(t, 10*time.Second, app.NextRetryDelay(), float64(time.Second))
	require.Less(t, time.Since(started), 5*time.Second, "returned without waiting out the slot")
}

// TestRegularAttemptWaitsWithinItsDeadline: a regular activity waits for
// its slot as long as its attempt allows, and only past that hands the
// wait to the workflow.
func TestRegularAttemptWaitsWithinItsDeadline(t *testing.T) {
	l := NewLimiters()
	p := testPlatform()
	p.RateLimit.RPS, p.RateLimit.Burst = 20, 1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, l.Wait(ctx, p.Settings()))
	require.NoError(t, l.Wait(ctx, p.Settings()), "50 ms fits in the attempt: waited")

	p.RateLimit.RPS = 0.01 // the next slot is 100 s away
	short, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	err := l.Wait(short, p.Settings())
	var sw *SlotWaitError
	require.ErrorAs(t, err, &sw)
	require.Greater(t, sw.Delay, 3*time.Second)
}
