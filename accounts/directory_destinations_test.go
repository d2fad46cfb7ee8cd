package accounts_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
)

// TestDirectoryFollowsDestinations: a worker's directory announces the
// task queue of a destination registered by another process, resolves
// it by name, sees an edit and a removal, without a restart.
func TestDirectoryFollowsDestinations(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := accounts.NewMemory()
	dir := accounts.NewDirectory(reg, 5*time.Millisecond, nil)
	require.NoError(t, dir.Load(ctx))
	require.Empty(t, dir.DestinationQueues())
	var announced queueWatch
	dir.OnDestinationQueues(announced.add)
	go dir.Run(ctx)

	_, _, found, err := dir.LookupDestination(ctx, "oms")
	require.NoError(t, err)
	require.False(t, found)

	d := destination(t, "oms")
	d.TaskQueue = "deliveries-oms"
	e, err := accounts.DestinationEntry(d, accounts.Active)
	require.NoError(t, err)
	rev, err := reg.Put(ctx, e, 0)
	require.NoError(t, err)
	waitFor(t, "the destination's queue announced", func() bool {
		return len(announced.last()) == 1
	})
	require.Equal(t, []string{"deliveries-oms"}, dir.DestinationQueues())
	require.Empty(t, dir.TaskQueues(), "a destination's queue is not a platform's")
	got, state, found, err := dir.LookupDestination(ctx, "oms")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, accounts.Active, state)
	require.Equal(t, d.URL, got.URL)

	d.URL = "https://moved.example.com/hook"
	e, err = accounts.DestinationEntry(d, accounts.Active)
	require.NoError(t, err)
	rev, err = reg.Put(ctx, e, rev)
	require.NoError(t, err)
	waitFor(t, "the edited URL", func() bool {
		got, _, _, err := dir.LookupDestination(ctx, "oms")
		return err == nil && got.URL == d.URL
	})

	e.State = accounts.Removed
	_, err = reg.Put(ctx, e, rev)
	require.NoError(t, err)
	waitFor(t, "the removal", func() bool {
		_, state, found, err := dir.LookupDestination(ctx, "oms")
		return err == nil && found && state == accounts.Removed
	})
	waitFor(t, "the queue list emptied", func() bool { return len(dir.DestinationQueues()) == 0 })
}
