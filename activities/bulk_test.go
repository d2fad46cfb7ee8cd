package activities

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// killingStore stores through to a real store until killAt calls, then
// fails every call: the worker dying in the middle of a download. It
// counts the orders each attempt upserts.
type killingStore struct {
	OrderStore
	mu     sync.Mutex
	calls  int
	killAt int // 0: never
	orders int
}

func (s *killingStore) UpsertOrders(ctx context.Context, orders []connectors.Order) (store.UpsertResult, error) {
	s.mu.Lock()
	s.calls++
	dead := s.killAt > 0 && s.calls >= s.killAt
	if !dead {
		s.orders += len(orders)
	}
	s.mu.Unlock()
	if dead {
		return store.UpsertResult{}, errors.New("worker killed")
	}
	return s.OrderStore.UpsertOrders(ctx, orders)
}

// TestDownloadBulkResumesAfterKill: a download attempt that dies after two
// committed batches leaves its position in the heartbeat; the retried
// attempt resumes there, stores only the rest, and the store ends up with
// every order of the window with all its lines, counted once in the result.
func TestDownloadBulkResumesAfterKill(t *testing.T) {
	ctx := context.Background()
	s, f, p, st := bulkShop(t, 1200, sim.BulkConfig{})

	killing := &killingStore{OrderStore: st, killAt: 3}
	acts := &Activities{Store: killing, Connectors: NewConnectorCache(f), Limiters: NewLimiters()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)

	in, state := completedBulk(t, env, acts, p, s.Now())
	require.True(t, state.HasURL)

	// Attempt 1 dies storing its third batch.
	var last converter.EncodedValues
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) { last = d })
	_, err := env.ExecuteActivity(acts.DownloadBulk, in)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, ErrStore, app.Type())
	require.NotNil(t, last, "the attempt heartbeated its position")
	var prog bulkProgress
	require.NoError(t, last.Get(&prog))
	require.Equal(t, 2, prog.Batches)
	require.Equal(t, 2*bulkBatchOrders, killing.orders)

	// Attempt 2, on another worker, starts from the heartbeat.
	killing.killAt, killing.orders = 0, 0
	retry := suite.NewTestActivityEnvironment()
	retry.RegisterActivity(acts)
	retry.SetHeartbeatDetails(prog)
	val, err := retry.ExecuteActivity(acts.DownloadBulk, in)
	require.NoError(t, err)
	var res FetchPageResult
	require.NoError(t, val.Get(&res))

	truth, err := s.Truth("acme", time.Time{})
	require.NoError(t, err)
	require.Greater(t, len(truth.Orders), 3*bulkBatchOrders)
	require.Equal(t, len(truth.Orders)-2*bulkBatchOrders, killing.orders, "the retry stores only what the first attempt had not committed")
	require.Equal(t, len(truth.Orders), res.Fetched, "the result counts both attempts, each order once")
	require.Equal(t, len(truth.Orders), res.Inserted)

	stored, err := st.OrderVersions(ctx, "shop")
	require.NoError(t, err)
	require.Len(t, stored, len(truth.Orders), "nothing lost")
	for _, o := range truth.Orders {
		at, ok := stored[o.ID]
		require.True(t, ok, "order %s missing", o.ID)
		require.True(t, at.Equal(o.UpdatedAt.Truncate(time.Second)), "order %s at its visible version", o.ID)
		got, _, err := st.GetOrder(ctx, "shop", o.ID)
		require.NoError(t, err)
		lines, err := s.LineItems("acme", o.ID)
		require.NoError(t, err)
		require.Len(t, got.Lines, len(lines), "order %s with all its lines", o.ID)
	}
}

// completedBulk starts a bulk query over the 25 hours before to and polls
// it until the simulator completes it.
func completedBulk(t *testing.T, env *testsuite.TestActivityEnvironment, acts *Activities, p config.Platform, to time.Time) (BulkInput, BulkState) {
	t.Helper()
	in := BulkInput{Platform: p.Settings(), SliceID: "slice/shop/bulk", From: to.Add(-25 * time.Hour), To: to}
	val, err := env.ExecuteActivity(acts.StartBulk, in)
	require.NoError(t, err)
	var state BulkState
	require.NoError(t, val.Get(&state))
	in.ID = state.ID
	require.Eventually(t, func() bool {
		val, err := env.ExecuteActivity(acts.PollBulk, in)
		require.NoError(t, err)
		require.NoError(t, val.Get(&state))
		return state.Status == connectors.BulkCompleted
	}, 30*time.Second, 10*time.Millisecond, "a busy machine may be slow")
	return in, state
}

// bulkShop starts a simulator whose shop "acme" holds historyOrders orders
// of the last day and plays bulk (bulk.Duration 1ms), and returns it, a
// platforms file whose platform "shop" reads it over GraphQL (bulk over
// loopback http, the simulator's opt-in), that platform, and a SQLite store.
func bulkShop(t *testing.T, historyOrders int, bulk sim.BulkConfig) (*sim.Simulator, *config.File, config.Platform, store.Store) {
	t.Helper()
	bulk.Duration = time.Millisecond
	s, err := sim.New(sim.Config{Seed: 5, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-token"}}, History: 24 * time.Hour,
		HistoryOrders: historyOrders, MaxUpdates: 2, UpdateSpread: time.Hour, ShopifyBulk: bulk})
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("acme-token\n"), 0o600))
	f, err := config.Parse(fmt.Appendf(nil, "platforms:\n  shop:\n    kind: shopify\n    endpoint: %s\n    credentials: {file: %s}\n    timeout: 5s\n    options: {bulk_loopback_http: true}\n",
		srv.ShopURL("acme"), token))
	require.NoError(t, err)
	p, _ := f.Get("shop")
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return s, f, p, st
}
