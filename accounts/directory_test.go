package accounts_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
)

// TestDirectoryFollowsTheRegistry: a worker's directory sees a new queue,
// an edited endpoint and a removal made by another process, without a
// restart.
func TestDirectoryFollowsTheRegistry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reg := accounts.NewMemory()
	put := func(e accounts.Entry, expect int64) int64 {
		rev, err := reg.Put(ctx, e, expect)
		require.NoError(t, err)
		return rev
	}
	a := platform(t, "shop-a")
	ea, err := accounts.PlatformEntry(a, accounts.Active)
	require.NoError(t, err)
	revA := put(ea, 0)

	dir := accounts.NewDirectory(reg, 5*time.Millisecond, nil)
	require.NoError(t, dir.Load(ctx))
	require.Equal(t, []string{"orders-sim"}, dir.TaskQueues())
	var mu sync.Mutex
	var seen [][]string
	dir.OnTaskQueues(func(q []string) {
		mu.Lock()
		seen = append(seen, q)
		mu.Unlock()
	})
	go dir.Run(ctx)

	got, ok := dir.Get("shop-a")
	require.True(t, ok)
	require.Equal(t, a.Endpoint, got.Endpoint)
	_, ok = dir.Get("shop-b")
	require.False(t, ok, "not registered")

	b := platform(t, "shop-b")
	b.TaskQueue = "orders-big"
	eb, err := accounts.PlatformEntry(b, accounts.Active)
	require.NoError(t, err)
	put(eb, 0)
	waitFor(t, "the new queue announced", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0 && len(seen[len(seen)-1]) == 2
	})
	require.Equal(t, []string{"orders-big", "orders-sim"}, dir.TaskQueues())
	_, ok = dir.Get("shop-b")
	require.True(t, ok, "registered a moment ago")

	a.Endpoint = "http://127.0.0.1:2/shops/moved"
	ea, err = accounts.PlatformEntry(a, accounts.Active)
	require.NoError(t, err)
	revA = put(ea, revA)
	waitFor(t, "the edited endpoint", func() bool {
		got, ok := dir.Get("shop-a")
		return ok && got.Endpoint == a.Endpoint
	})

	ea.State = accounts.Removed
	put(ea, revA)
	waitFor(t, "the removal", func() bool {
		_, state, found, err := dir.Lookup(ctx, "shop-a")
		return err == nil && found && state == accounts.Removed
	})
	_, ok = dir.Get("shop-a")
	require.False(t, ok, "a removed platform is not fetched for")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
