package activities

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.uber.org/mock/gomock"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/store"
)

// TestNoRoomForPointsIsASlotWaitNamingTheBucket: a connector whose query
// finds no room in the points bucket within the attempt (the Shopify
// connector returns the meter's error, wrapped) makes the page a slot
// wait, never a failed attempt; the wait names the cost and the bucket,
// and the points wait metric counts it.
func TestNoRoomForPointsIsASlotWaitNamingTheBucket(t *testing.T) {
	f := newFixture(t)
	f.acts.Metrics = metrics.New()
	bucket := connectors.CostBudget{Rate: 50, Capacity: 1000}
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).DoAndReturn(func(ctx context.Context, req connectors.PageRequest) (connectors.Page, error) {
		require.NoError(t, req.Meter.Book(ctx, bucket, 852), "a full bucket")
		if err := req.Meter.Book(ctx, bucket, 303); err != nil {
			return connectors.Page{}, fmt.Errorf("shop: OrderLineItems query: %w", err)
		}
		return connectors.Page{}, errors.New("the second booking should have waited")
	})
	_, err := f.env.ExecuteLocalActivity(f.acts.FetchPage, input())
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, ErrSlotWait, app.Type(), "a wait, not a failed attempt: %v", err)
	require.True(t, app.NonRetryable())
	require.Positive(t, app.NextRetryDelay())
	for _, want := range []string{"a query of 303 points", "1000 points restoring 50 a second", "148 available"} {
		require.Contains(t, err.Error(), want)
	}
	require.NoError(t, testutil.GatherAndCompare(f.acts.Metrics.Registry(), strings.NewReader(`
# HELP ordersync_points_waits_total Page attempts that found no room in the platform's points bucket within the attempt and handed the wait to the slice (Shopify GraphQL).
# TYPE ordersync_points_waits_total counter
ordersync_points_waits_total{platform="shop"} 1
`), "ordersync_points_waits_total"))
}

// TestFetchPageKeepsProgressPerPage: the activity hands the connector a
// page progress in the store, the same for every attempt of one page and
// another for any other page.
func TestFetchPageKeepsProgressPerPage(t *testing.T) {
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	f := newFixture(t)
	f.acts.Store = st
	var seen []string
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).DoAndReturn(func(ctx context.Context, req connectors.PageRequest) (connectors.Page, error) {
		require.NotNil(t, req.Progress)
		kept, err := req.Progress.Load(ctx)
		require.NoError(t, err)
		seen = append(seen, string(kept))
		require.NoError(t, req.Progress.Save(ctx, []byte("page "+req.Token)))
		return connectors.Page{}, errors.New("a follow-up failed")
	}).Times(3)
	in := input()
	for range 2 {
		_, err := f.env.ExecuteActivity(f.acts.FetchPage, in)
		require.Error(t, err)
	}
	in.Token = "another"
	_, err = f.env.ExecuteActivity(f.acts.FetchPage, in)
	require.Error(t, err)
	require.Equal(t, []string{"", "page tok", ""}, seen, "the second attempt finds the first's progress; another page does not")
}
