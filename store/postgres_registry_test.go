package store

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
)

// A registry write on PostgreSQL notifies RegistryChannel with its
// revision when it commits; a refused write notifies nothing.
func TestPostgresRegistryNotifies(t *testing.T) {
	b := backends[1]
	skipUnavailable(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := b.fresh(t)
	r := openRegistry(t, dsn)

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "LISTEN "+RegistryChannel)
	require.NoError(t, err)

	rev := regPut(t, r, regEntry("shop", accounts.Active), 0)
	_, err = r.Put(ctx, regEntry("shop", accounts.Active), 0)
	require.ErrorIs(t, err, accounts.ErrConflict)
	rev2 := regPut(t, r, regEntry("shop", accounts.Paused), rev)

	for _, want := range []int64{rev, rev2} {
		n, err := conn.WaitForNotification(ctx)
		require.NoError(t, err)
		require.Equal(t, RegistryChannel, n.Channel)
		require.Equal(t, strconv.FormatInt(want, 10), n.Payload, "one notification per committed write, in order")
	}
	// Nothing else is pending: the refused write sent none.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	_, err = conn.WaitForNotification(short)
	require.Error(t, err, "no notification for the refused write")
}

// TestPostgresDirectoryFollowsNotifications: a worker's directory over the
// PostgreSQL registry learns a new task queue from NOTIFY, not from its
// poll (which here would come an hour later).
func TestPostgresDirectoryFollowsNotifications(t *testing.T) {
	b := backends[1]
	skipUnavailable(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := openRegistry(t, b.fresh(t))
	dir := accounts.NewDirectory(r, time.Hour, nil)
	require.NoError(t, dir.Load(ctx))
	queues := make(chan []string, 10)
	dir.OnTaskQueues(func(q []string) { queues <- q })
	go dir.Run(ctx)

	e := regEntry("shop", accounts.Active)
	e.TaskQueue = "orders-shopify"
	// The listener may not be up the moment Run starts: write until one
	// notification arrives (each write is a new revision).
	var rev int64
	for {
		if rev == 0 {
			rev = regPut(t, r, e, 0)
		} else {
			e.TaskQueue = fmt.Sprintf("orders-shopify-%d", rev)
			rev = regPut(t, r, e, rev)
		}
		select {
		case q := <-queues:
			require.Len(t, q, 1)
			return
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no notification reached the directory")
		}
	}
}
