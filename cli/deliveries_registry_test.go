package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

func TestDestinationFromFlagsMergesOverTheDefaults(t *testing.T) {
	d, err := destinationFromFlags("oms", "webhook", "https://oms.example.com/hook", config.CredentialRef{Env: "OMS_SECRET"},
		[]string{"batch_size=50", "rate_limit.rps=5", "platforms=[shop-a]", "timeout=3s"})
	require.NoError(t, err)
	def := config.DestinationDefaults()
	require.Equal(t, 50, d.BatchSize)
	require.Equal(t, 5.0, d.RateLimit.RPS)
	require.Equal(t, def.RateLimit.Burst, d.RateLimit.Burst, "nested fields merge one by one")
	require.Equal(t, []string{"shop-a"}, d.Platforms)
	require.Equal(t, 3*time.Second, d.Timeout.D())
	require.Equal(t, config.DefaultDeliveryTaskQueue, d.TaskQueue)

	for _, tc := range []struct {
		name string
		kind string
		sets []string
		want string
	}{
		{"unknown field", "webhook", []string{"batchsize=10"}, `unknown field "batchsize"`},
		{"bad value", "webhook", []string{"timeout=soon"}, "not a duration"},
		{"out of range", "webhook", []string{"batch_size=0"}, `field "batch_size"`},
		{"the name", "webhook", []string{"name=other"}, "the name cannot be set"},
		{"unknown kind", "carrier-pigeon", nil, "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := destinationFromFlags("oms", tc.kind, "https://oms.example.com/hook", config.CredentialRef{Env: "OMS_SECRET"}, tc.sets)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err = destinationFromFlags("oms", "webhook", "https://oms.example.com/hook", config.CredentialRef{}, nil)
	require.ErrorContains(t, err, "secret", "a webhook without a secret is named")
}

func TestEditDestinationUnsetsToTheDefault(t *testing.T) {
	d, err := destinationFromFlags("oms", "webhook", "https://oms.example.com/hook", config.CredentialRef{Env: "OMS_SECRET"},
		[]string{"batch_size=50", "rate_limit.burst=3", "windows=[\"MON-FRI 00:00-06:00 UTC\"]"})
	require.NoError(t, err)
	require.NoError(t, editDestination(&d, []string{"url=https://oms-2.example.com/hook"}, []string{"batch_size", "rate_limit.burst", "windows"}))
	def := config.DestinationDefaults()
	require.Equal(t, "https://oms-2.example.com/hook", d.URL)
	require.Equal(t, def.BatchSize, d.BatchSize, "back to the default, not to zero")
	require.Equal(t, def.RateLimit.Burst, d.RateLimit.Burst)
	require.Empty(t, d.Windows)
	require.ErrorContains(t, editDestination(&d, nil, []string{"nothing.here"}), "no such setting")
}

// TestCompactionFollowsTheRegistry: compaction waits for the registered
// destinations (one that never acknowledged holds everything), not only
// the file's, and a removed destination's leftover consumer row (an
// acknowledgement made while it was being removed, say) is released, so
// it holds nothing.
func TestCompactionFollowsTheRegistry(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	defer st.Close()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		_, err := st.UpsertOrders(ctx, []connectors.Order{{Platform: "shop", ID: fmt.Sprint(i), Status: "paid",
			Currency: "EUR", Total: "1.00", CreatedAt: at, UpdatedAt: at}})
		require.NoError(t, err)
	}
	reg, ok := store.RegistryOf(st)
	require.True(t, ok)
	put := func(name string, state accounts.State) {
		d, err := destinationFromFlags(name, "webhook", "https://oms.example.com/hook", config.CredentialRef{Env: "S"}, nil)
		require.NoError(t, err)
		e, err := accounts.DestinationEntry(d, accounts.Active)
		require.NoError(t, err)
		rev, err := reg.Put(ctx, e, 0)
		require.NoError(t, err)
		if state == accounts.Removed {
			e.State = accounts.Removed
			_, err = reg.Put(ctx, e, rev)
			require.NoError(t, err)
		}
	}
	put("old", accounts.Removed)
	put("fresh", accounts.Active)
	put("live", accounts.Active)
	require.NoError(t, st.AckChanges(ctx, "old", 3))
	require.NoError(t, st.AckChanges(ctx, "live", 8))
	quiet := func(string, ...any) {}
	everything := -time.Hour // every change is older than the retention

	n, err := compactOnce(ctx, st, []string{"old"}, everything, quiet)
	require.NoError(t, err)
	require.Zero(t, n, "fresh is registered and has acknowledged nothing: it holds every change")
	acks, err := st.Acks(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"live": 8}, acks, "the removed destination's row is released, though the file still names it")

	require.NoError(t, st.AckChanges(ctx, "fresh", 10))
	n, err = compactOnce(ctx, st, nil, everything, quiet)
	require.NoError(t, err)
	require.Equal(t, int64(8), n, "up to the slowest live destination; nothing held for the removed one")
}
