package activities

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// statusValue is the cursor's answer to its status query.
type statusValue struct{ st api.CursorStatus }

func (v statusValue) HasValue() bool { return true }
func (v statusValue) Get(p any) error {
	b, err := json.Marshal(v.st)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, p)
}

// statusClient answers the cursor's status query with what set gave it.
type statusClient struct {
	*mocks.Client
	workflowID string
	mu         sync.Mutex
	st         api.CursorStatus
}

func (c *statusClient) set(st api.CursorStatus) { c.mu.Lock(); c.st = st; c.mu.Unlock() }

func (c *statusClient) QueryWorkflow(_ context.Context, id, _, query string, _ ...any) (converter.EncodedValue, error) {
	if id != c.workflowID || query != api.QueryStatus {
		return nil, errors.New("unexpected query " + query + " of " + id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return statusValue{c.st}, nil
}

type simClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *simClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *simClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestReconcileCountFindsWhatTheListHid: against the simulator's Shopify
// surface with orders hidden from the list, through a real SQLite store:
// nothing is counted (no platform request) before the cursor passed the
// window; then the platform counts the hidden orders the store lacks
// (reprocessing); a recount waits while the cursor shows the window's
// reprocess queued; once the orders are stored the recount is closed, kept
// in the store and no order data leaves the activity.
func TestReconcileCountFindsWhatTheListHid(t *testing.T) {
	clk := &simClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s, err := sim.New(sim.Config{Seed: 9, Shops: []sim.ShopConfig{{Name: "acme", Token: "tok-acme"}},
		History: time.Hour, HistoryOrders: 20, LiveRate: 1, Clock: clk.now})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Setenv("ORDERSYNC_TEST_RECONCILE_TOKEN", "tok-acme")
	p := testPlatform()
	p.Kind, p.Endpoint, p.AllowPlaintext = "shopify", srv.URL+"/shops/acme", true
	p.Credentials = config.CredentialRef{Env: "ORDERSYNC_TEST_RECONCILE_TOKEN"}
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })

	c := &statusClient{Client: &mocks.Client{}, workflowID: api.CursorWorkflowID(p.Name)}
	setStatus := c.set
	acts := &Activities{Store: st, Connectors: NewConnectorCache(&config.File{Platforms: []config.Platform{p}}), Limiters: NewLimiters(), Client: c}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	count := func(in ReconcileCountInput) ReconcileCountResult {
		t.Helper()
		v, err := env.ExecuteActivity(acts.ReconcileCount, in)
		require.NoError(t, err)
		var res ReconcileCountResult
		require.NoError(t, v.Get(&res))
		return res
	}

	require.NoError(t, s.HideFromList("acme", 2, 10*time.Minute))
	from := clk.now()
	clk.add(30 * time.Second)
	to := clk.now()
	conn, err := acts.Connectors.Connector(p.Settings())
	require.NoError(t, err)
	listed := listAllOrders(t, conn, from, to)
	_, err = st.UpsertOrders(context.Background(), listed)
	require.NoError(t, err)
	in := ReconcileCountInput{Platform: p.Settings(), From: from, To: to, Check: api.ReconcileFirst}

	setStatus(api.CursorStatus{Watermark: to.Add(-time.Second)})
	before := s.Stats().Shops["acme"].Requests
	require.Equal(t, api.ReconcileWaitCursor, count(in).Gate, "the cursor has not passed the window")
	setStatus(api.CursorStatus{Watermark: to, Paused: true})
	require.Equal(t, api.ReconcileWaitCursor, count(in).Gate, "a paused platform does not reconcile")
	require.Equal(t, before, s.Stats().Shops["acme"].Requests, "nothing asked of the platform")

	setStatus(api.CursorStatus{Watermark: to})
	res := count(in)
	require.Empty(t, res.Gate)
	r := res.Result
	require.Equal(t, api.ReconcileReprocessing, r.Outcome)
	require.Equal(t, len(listed), r.StoreCount)
	require.Equal(t, len(listed)+2, r.PlatformCount, "the two hidden orders are counted")
	require.Equal(t, connectors.CountExact, r.Precision)
	kept, err := st.ReconcileResults(context.Background(), p.Name, 0)
	require.NoError(t, err)
	require.Len(t, kept, 1, "a difference is shown while its reprocess runs")
	require.Equal(t, api.ReconcileReprocessing, kept[0].Outcome)

	in.First = &r
	setStatus(api.CursorStatus{Watermark: to, Queued: []api.SliceView{{Kind: "reprocess", Start: from, End: to}}})
	require.Equal(t, api.ReconcileWaitReprocess, count(in).Gate, "the reprocess is queued")

	clk.add(10 * time.Minute) // the orders show in the list again; the reprocess stores them
	listed = listAllOrders(t, conn, from, to)
	_, err = st.UpsertOrders(context.Background(), listed)
	require.NoError(t, err)
	setStatus(api.CursorStatus{Watermark: clk.now()})
	res = count(in)
	require.Equal(t, api.ReconcileClosed, res.Result.Outcome)
	require.True(t, res.Result.Reprocessed)
	require.Equal(t, r.PlatformCount, res.Result.RecountStore)
	kept, err = st.ReconcileResults(context.Background(), p.Name, 0)
	require.NoError(t, err)
	require.Len(t, kept, 1)
	require.Equal(t, api.ReconcileClosed, kept[0].Outcome)
	require.Equal(t, r.StoreCount, kept[0].StoreCount)
	require.Equal(t, r.PlatformCount, kept[0].RecountStore)

	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.NotContains(t, string(b), listed[0].ID, "counts only, no order data")
}

// listAllOrders pages through a window.
func listAllOrders(t *testing.T, conn connectors.Connector, from, to time.Time) []connectors.Order {
	t.Helper()
	var out []connectors.Order
	token := ""
	for page := 1; page < 100; page++ {
		p, err := conn.ListOrders(context.Background(), connectors.PageRequest{From: from, To: to, PageSize: 50, Token: token, Page: page})
		require.NoError(t, err)
		out = append(out, p.Orders...)
		if token = p.NextToken; token == "" {
			return out
		}
	}
	t.Fatal("too many pages")
	return nil
}

// TestReconcileCountUnsupportedKind: a kind without a count call answers
// Unsupported, not an error.
func TestReconcileCountUnsupportedKind(t *testing.T) {
	p := testPlatform()
	t.Setenv("X", "token")
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	c := &statusClient{Client: &mocks.Client{}, workflowID: api.CursorWorkflowID(p.Name), st: api.CursorStatus{Watermark: time.Now()}}
	acts := &Activities{Store: st, Connectors: NewConnectorCache(&config.File{Platforms: []config.Platform{p}}), Limiters: NewLimiters(), Client: c}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	v, err := env.ExecuteActivity(acts.ReconcileCount, ReconcileCountInput{Platform: p.Settings(), From: time.Now().Add(-2 * time.Hour), To: time.Now().Add(-time.Hour), Check: api.ReconcileFirst})
	require.NoError(t, err)
	var res ReconcileCountResult
	require.NoError(t, v.Get(&res))
	require.True(t, res.Unsupported)
}

// TestReconcileOutcome: the platform ahead is a difference to reprocess;
// the store ahead is reported, not reprocessed; an at-least count is a
// difference only when the store holds fewer.
func TestReconcileOutcome(t *testing.T) {
	first := api.ReconcileResult{PlatformCount: 10, Precision: connectors.CountExact, StoreCount: 8}
	for _, tc := range []struct {
		platform connectors.Count
		stored   int
		first    *api.ReconcileResult
		want     string
	}{
		{connectors.Count{N: 5, Precision: connectors.CountExact}, 5, nil, api.ReconcileMatch},
		{connectors.Count{N: 6, Precision: connectors.CountExact}, 5, nil, api.ReconcileReprocessing},
		{connectors.Count{N: 4, Precision: connectors.CountExact}, 5, nil, api.ReconcileStoreAhead},
		{connectors.Count{N: 4, Precision: connectors.CountAtLeast}, 5, nil, api.ReconcileMatch},
		{connectors.Count{N: 6, Precision: connectors.CountAtLeast}, 5, nil, api.ReconcileReprocessing},
		{connectors.Count{N: 10, Precision: connectors.CountExact}, 10, &first, api.ReconcileClosed},
		{connectors.Count{N: 10, Precision: connectors.CountExact}, 9, &first, api.ReconcileOpen},
		{connectors.Count{N: 9, Precision: connectors.CountExact}, 10, &first, api.ReconcileStoreAhead},
	} {
		r := reconcileOutcome(ReconcileCountInput{First: tc.first}, tc.platform, tc.stored, time.Time{})
		require.Equal(t, tc.want, r.Outcome, "%+v store %d first %v", tc.platform, tc.stored, tc.first != nil)
		if tc.first != nil {
			require.Equal(t, 8, r.StoreCount, "the first counts stay")
			require.Equal(t, tc.stored, r.RecountStore)
		}
	}
}
