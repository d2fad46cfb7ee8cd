package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// countingCtx counts how often its Done and Err are asked and cancels itself
// when Err has been asked cancelAtErr times (0: never).
type countingCtx struct {
	context.Context
	cancel      context.CancelFunc
	cancelAtErr int64
	dones, errs atomic.Int64
}

func newCountingCtx(cancelAtErr int64) *countingCtx {
	ctx, cancel := context.WithCancel(context.Background())
	return &countingCtx{Context: ctx, cancel: cancel, cancelAtErr: cancelAtErr}
}

func (c *countingCtx) Done() <-chan struct{} {
	c.dones.Add(1)
	return c.Context.Done()
}

func (c *countingCtx) Err() error {
	if n := c.errs.Add(1); n == c.cancelAtErr {
		c.cancel()
	}
	return c.Context.Err()
}

// pageOfOrders is n new orders of one platform, each with two lines.
func pageOfOrders(prefix string, n int) []connectors.Order {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := make([]connectors.Order, n)
	for i := range out {
		out[i] = connectors.Order{Platform: "shop", ID: fmt.Sprintf("%s-%04d", prefix, i), Status: "paid",
			CreatedAt: at, UpdatedAt: at, Currency: "EUR", Total: "10.00", HasLines: true, LineCount: 2,
			Lines: []connectors.OrderLine{
				{ID: "l1", SKU: "A", Title: "a", Quantity: 1, UnitPrice: "4.00", Currency: "EUR"},
				{ID: "l2", SKU: "B", Title: "b", Quantity: 2, UnitPrice: "3.00", Currency: "EUR"},
			}}
	}
	return out
}

// The per-row statements of a batch run without the batch's cancellation,
// so the driver watches no context per statement (the cost is a goroutine
// each): how often the batch's context is asked for its Done channel does
// not grow with the rows.
func TestSQLiteBatchWatchesItsContextOncePerBatch(t *testing.T) {
	st := openTestSQLite(t, filepath.Join(t.TempDir(), "orders.db"))
	dones := func(prefix string, n int) int64 {
		ctx := newCountingCtx(0)
		res, err := st.UpsertOrders(ctx, pageOfOrders(prefix, n))
		require.NoError(t, err)
		require.Equal(t, n, res.Inserted)
		return ctx.dones.Load()
	}
	small, large := dones("small", 5), dones("large", 250)
	// A few calls may come and go with timing (database/sql asks again
	// when it waits for a connection); per statement they were thousands.
	require.LessOrEqual(t, large, small+5, "Done asked %d times for 5 orders, %d times for 250", small, large)
}

// Cancelling the batch's context between rows still stops the batch, and
// nothing of it is committed.
func TestSQLiteBatchStopsWhenCancelledBetweenRows(t *testing.T) {
	st := openTestSQLite(t, filepath.Join(t.TempDir(), "orders.db"))
	orders := pageOfOrders("o", 100)
	ctx := newCountingCtx(20) // cancelled while the batch is on its rows
	_, err := st.UpsertOrders(ctx, orders)
	require.ErrorIs(t, err, context.Canceled)
	n, err := st.CountOrders(context.Background(), "shop")
	require.NoError(t, err)
	require.Zero(t, n, "a cancelled batch committed orders")

	res, err := st.UpsertOrders(context.Background(), orders)
	require.NoError(t, err)
	require.Equal(t, 100, res.Inserted)
}

// BenchmarkSQLiteUpsertPage stores one page as B1 does: 250 new orders with
// two lines each, under a cancellable context (an activity's).
func BenchmarkSQLiteUpsertPage(b *testing.B) {
	st, err := Open(context.Background(), "sqlite://"+filepath.Join(b.TempDir(), "orders.db"))
	require.NoError(b, err)
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := st.UpsertOrders(ctx, pageOfOrders(fmt.Sprintf("p%06d", i), 250)); err != nil {
			b.Fatal(err)
		}
	}
}
