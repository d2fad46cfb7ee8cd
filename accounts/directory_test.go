package accounts_test

import (
	"context"
	"errors"
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
	var announced queueWatch
	dir.OnTaskQueues(announced.add)
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
		return len(announced.last()) == 2
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

// queueWatch records the queue lists a Directory announces.
type queueWatch struct {
	mu   sync.Mutex
	seen [][]string
}

func (w *queueWatch) add(q []string) {
	w.mu.Lock()
	w.seen = append(w.seen, q)
	w.mu.Unlock()
}

// last is the list announced last (nil before the first).
func (w *queueWatch) last() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) == 0 {
		return nil
	}
	return w.seen[len(w.seen)-1]
}

// queuesFailingRegistry fails TaskQueues for the classes in fail.
type queuesFailingRegistry struct {
	*accounts.Memory
	fail map[accounts.Class]bool
}

func (r queuesFailingRegistry) TaskQueues(ctx context.Context, class accounts.Class) ([]string, error) {
	if r.fail[class] {
		return nil, errors.New("registry unreachable")
	}
	return r.Memory.TaskQueues(ctx, class)
}

// A failed read of the task queues is tried again at the next poll, for
// either class, even when nothing changes in between: the poll that
// failed has already moved past the change that added the queue.
func TestDirectoryReadsTheQueuesAgainAfterAFailedRead(t *testing.T) {
	ctx := context.Background()
	reg := queuesFailingRegistry{Memory: accounts.NewMemory(), fail: map[accounts.Class]bool{}}
	dir := accounts.NewDirectory(reg, time.Hour, nil)
	require.NoError(t, dir.Load(ctx))

	put := func(e accounts.Entry, err error) {
		require.NoError(t, err)
		_, err = reg.Put(ctx, e, 0)
		require.NoError(t, err)
	}
	p := platform(t, "shop-a")
	p.TaskQueue = "orders-new"
	put(accounts.PlatformEntry(p, accounts.Active))
	d := destination(t, "oms")
	d.TaskQueue = "deliveries-new"
	put(accounts.DestinationEntry(d, accounts.Active))

	reg.fail[accounts.ClassPlatform], reg.fail[accounts.ClassDestination] = true, true
	require.Error(t, dir.Sync(ctx))
	reg.fail[accounts.ClassPlatform], reg.fail[accounts.ClassDestination] = false, false
	require.NoError(t, dir.Sync(ctx))
	require.Equal(t, []string{"orders-new"}, dir.TaskQueues())
	require.Equal(t, []string{"deliveries-new"}, dir.DestinationQueues())
}
