package workflows_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
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

// TestSliceCountsAttemptsFailedBeforeASlotWait: a page whose attempts fail
// (a 5xx) and whose retry then finds the slots booked out must still run
// out of retries. Before, every slot wait gave the page its whole retry
// policy again, so such a page waited and failed in turn for as long as
// the history allowed, never dead-lettered.
func TestSliceCountsAttemptsFailedBeforeASlotWait(t *testing.T) {
	env := newEnv(t)
	p := testPlatform(t)
	p.Retries = 2
	calls := 0
	env.OnActivity(acts.FetchPage, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, _ activities.FetchPageInput) (activities.FetchPageResult, error) {
			calls++
			attempt := int(activity.GetInfo(ctx).Attempt)
			if attempt == 1 {
				return activities.FetchPageResult{}, temporal.NewApplicationError("HTTP 502", activities.ErrTransient)
			}
			return activities.FetchPageResult{}, temporal.NewApplicationErrorWithOptions("no request slot free", activities.ErrSlotWait,
				temporal.ApplicationErrorOptions{NonRetryable: true, NextRetryDelay: time.Minute,
					Details: []any{activities.SlotWaitAnswer{Attempt: attempt}}})
		})
	dl := mockDeadLetters(env, 0, false)

	res := runSlice(t, env, p, at("-1h"), at("-45m"))

	require.Equal(t, api.SliceFailed, res.Outcome)
	require.Len(t, dl.all(), 1, "dead-lettered once its retries are spent")
	require.Equal(t, activities.ErrTransient, dl.all()[0].ErrorType)
	require.LessOrEqual(t, calls, 6, "the local attempt, then rounds that spend the retries")
}
