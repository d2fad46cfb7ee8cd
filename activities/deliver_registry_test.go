package activities

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

// TestDeliveryResolvesTheRegistry: a destination registered while the
// worker runs is delivered to (its URL and secret from the registry, not
// from the workflow), an edit of its URL is used from the next batch, and
// once it is removed the worker neither sends to it nor acknowledges for
// it. Before, only the destinations of the worker's file at start were
// served, so one added at runtime was retried until a restart.
func TestDeliveryResolvesTheRegistry(t *testing.T) {
	ctx := context.Background()
	st := feedStore(t, 2)
	first, second := &receiver{t: t}, &receiver{t: t}
	srv1, srv2 := httptest.NewServer(first), httptest.NewServer(second)
	defer srv1.Close()
	defer srv2.Close()
	t.Setenv("TEST_WEBHOOK_SECRET", testWebhookSecret)

	reg := accounts.NewMemory()
	dir := accounts.NewDirectory(reg, time.Hour, nil)
	require.NoError(t, dir.Load(ctx))
	a := &Activities{Feed: st, Deliveries: &Deliveries{Registry: dir}}

	_, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", Limit: 10})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr))
	require.False(t, appErr.NonRetryable(), "not registered yet: retried until it is")

	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Secret = "oms", "webhook", srv1.URL, config.CredentialRef{Env: "TEST_WEBHOOK_SECRET"}
	e, err := accounts.DestinationEntry(d, accounts.Active)
	require.NoError(t, err)
	rev, err := reg.Put(ctx, e, 0)
	require.NoError(t, err)

	next, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, next.Seqs)
	// The workflow's copy of the settings says nothing about where to send.
	_, err = a.DeliverChanges(ctx, api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{After: 0, To: 2}, Expect: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"oms-1-2"}, first.ids)

	// An edit (another process) reaches the worker with its next poll.
	d.URL = srv2.URL
	e, err = accounts.DestinationEntry(d, accounts.Active)
	require.NoError(t, err)
	rev, err = reg.Put(ctx, e, rev)
	require.NoError(t, err)
	pollNow(t, dir)
	_, err = a.DeliverChanges(ctx, api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{After: 2, To: 4}, Expect: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"oms-3-4"}, second.ids)
	require.Len(t, first.ids, 1)

	_, err = a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 4, Limit: 2})
	require.NoError(t, err)
	acks, err := st.Acks(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"oms": 4}, acks)

	e.State = accounts.Removed
	_, err = reg.Put(ctx, e, rev)
	require.NoError(t, err)
	pollNow(t, dir)
	_, err = st.ReleaseConsumer(ctx, "oms")
	require.NoError(t, err)
	for _, call := range []func() error{
		func() error {
			_, err := a.NextBatch(ctx, api.NextBatchRequest{Destination: "oms", After: 4, Limit: 2})
			return err
		},
		func() error {
			_, err := a.DeliverChanges(ctx, api.DeliverRequest{Destination: "oms", SeqRange: api.SeqRange{After: 2, To: 4}, Expect: 2})
			return err
		},
	} {
		err := call()
		require.True(t, errors.As(err, &appErr), "%v", err)
		require.True(t, appErr.NonRetryable(), "a removed destination is refused for good")
		require.ErrorContains(t, err, "destination oms was removed from the registry")
	}
	require.Len(t, second.ids, 1, "nothing is sent to a removed destination")
	acks, err = st.Acks(ctx)
	require.NoError(t, err)
	require.Empty(t, acks, "nothing re-acknowledges the feed for a removed destination")
}

// pollNow makes the directory apply the registry's changes, as its Run
// loop does every poll interval.
func pollNow(t *testing.T, dir *accounts.Directory) {
	t.Helper()
	require.NoError(t, dir.Sync(context.Background()))
}
