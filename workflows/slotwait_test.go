package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
)

// slotBusy is what FetchPage answers when the platform's request slots are
// booked out for longer than the attempt may wait.
func slotBusy(d time.Duration) error {
	return temporal.NewApplicationErrorWithOptions("shop-x: no request slot free within this attempt", activities.ErrSlotWait,
		temporal.ApplicationErrorOptions{NonRetryable: true, NextRetryDelay: d})
}

// TestSliceWaitsForRequestSlotsWithoutFailing: a rate-limit wait is waiting,
// never an attempt. A page whose local first attempt found no request slot
// waits on a durable timer (not in the workflow task) and then runs as a
// regular activity; with retries: 0 it still succeeds, and a regular
// activity that finds no slot waits again. Nothing is dead-lettered.
func TestSliceWaitsForRequestSlotsWithoutFailing(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Retries = 0
	pages := watchPages(env)
	calls := 0
	mockPages(env, pages, func(in activities.FetchPageInput) (activities.FetchPageResult, error) {
		calls++
		if calls <= 3 {
			return activities.FetchPageResult{}, slotBusy(time.Minute)
		}
		return activities.FetchPageResult{Fetched: 2, Inserted: 2}, nil
	}, nil)
	dl := mockDeadLetters(env, 0, false)

	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceCompleted, res.Outcome, res.Error)
	require.Equal(t, 2, res.OrdersInserted)
	all := pages.all()
	require.Len(t, all, 4)
	require.True(t, all[0].Local, "the first attempt is local")
	for i := 1; i < 4; i++ {
		require.False(t, all[i].Local, "after a slot wait the page runs as a regular activity")
		require.Equal(t, time.Minute, all[i].At.Sub(all[i-1].At), "each wait is the delay the activity asked for")
	}
	require.Empty(t, dl.all())
}
