package activities

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// refetchFixture is RefetchOrder against the simulator, through real
// connectors and a real SQLite store.
type refetchFixture struct {
	sim   *sim.Simulator
	acts  *Activities
	store store.Store
	p     config.Platform
	env   *testsuite.TestActivityEnvironment
}

func newRefetchFixture(t *testing.T, rl sim.RateLimit) *refetchFixture {
	t.Helper()
	s, err := sim.New(sim.Config{Seed: 7, Shops: []sim.ShopConfig{{Name: "acme", Token: "tok-acme"}},
		History: time.Hour, HistoryOrders: 20, RateLimit: rl})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	t.Setenv("ORDERSYNC_TEST_REFETCH_TOKEN", "tok-acme")
	p := testPlatform()
	p.Endpoint = srv.URL + "/shops/acme"
	p.Credentials = config.CredentialRef{Env: "ORDERSYNC_TEST_REFETCH_TOKEN"}
	p.AllowPlaintext = true
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	f := &refetchFixture{sim: s, store: st, p: p,
		acts: &Activities{Store: st, Connectors: NewConnectorCache(&config.File{Platforms: []config.Platform{p}}), Limiters: NewLimiters()}}
	var suite testsuite.WorkflowTestSuite
	f.env = suite.NewTestActivityEnvironment()
	f.env.RegisterActivity(f.acts)
	return f
}

func (f *refetchFixture) refetch(t *testing.T, id string) (api.RefetchResult, error) {
	t.Helper()
	v, err := f.env.ExecuteActivity(f.acts.RefetchOrder, RefetchOrderInput{Platform: f.p.Settings(), OrderID: id})
	if err != nil {
		return api.RefetchResult{}, err
	}
	var res api.RefetchResult
	require.NoError(t, v.Get(&res))
	return res, nil
}

// TestRefetchOrderStoresThePlatformsVersion: the order is fetched through
// the get-one-order call and stored (created, then unchanged), and the
// change feed holds it like any fetched version.
func TestRefetchOrderStoresThePlatformsVersion(t *testing.T) {
	f := newRefetchFixture(t, sim.RateLimit{})
	truth, err := f.sim.Truth("acme", f.sim.Now())
	require.NoError(t, err)
	require.NotEmpty(t, truth.Orders)
	want := truth.Orders[3]

	res, err := f.refetch(t, want.ID)
	require.NoError(t, err)
	require.Equal(t, api.RefetchCreated, res.Outcome)
	got, ok, err := f.store.GetOrder(context.Background(), f.p.Name, want.ID)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, want.UpdatedAt.Equal(got.UpdatedAt), "the platform's newest visible version")
	require.Equal(t, want.Total, got.Total)
	require.True(t, got.HasLines)

	changes, err := f.store.Changes(context.Background(), store.ChangeQuery{Platform: f.p.Name})
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.Equal(t, want.ID, changes[0].OrderID)

	res, err = f.refetch(t, want.ID)
	require.NoError(t, err)
	require.Equal(t, api.RefetchUnchanged, res.Outcome)
}

// TestRefetchOrderNotFoundIsAnOutcome: an id the shop does not know is
// reported, not an error to retry, and nothing is stored.
func TestRefetchOrderNotFoundIsAnOutcome(t *testing.T) {
	f := newRefetchFixture(t, sim.RateLimit{})
	for _, id := range []string{"1999999999", "not-an-id", "../../admin/stats", ".."} {
		res, err := f.refetch(t, id)
		require.NoError(t, err, id)
		require.Equal(t, api.RefetchNotFound, res.Outcome, id)
	}
	n, err := f.store.CountOrders(context.Background(), f.p.Name)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestRefetchOrderWaitsOnTheRateLimit: the refetch books the platform's
// request slot like a page. With the slot taken (one request a minute,
// burst 1, spent by the first refetch) the second attempt does not send:
// it answers ErrSlotWait with the wait, which the workflow sleeps on, and
// the simulator sees one request.
func TestRefetchOrderWaitsOnTheRateLimit(t *testing.T) {
	f := newRefetchFixture(t, sim.RateLimit{})
	f.p.RateLimit = config.RateLimit{RPS: 1.0 / 60, Burst: 1}
	truth, err := f.sim.Truth("acme", f.sim.Now())
	require.NoError(t, err)
	_, err = f.refetch(t, truth.Orders[0].ID)
	require.NoError(t, err)
	// An attempt with 3 s left may wait at most 1 s (slotMargin).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = f.acts.RefetchOrder(ctx, RefetchOrderInput{Platform: f.p.Settings(), OrderID: truth.Orders[1].ID})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, ErrSlotWait, app.Type())
	require.Greater(t, app.NextRetryDelay(), time.Second)
	require.EqualValues(t, 1, f.sim.Stats().Shops["acme"].Requests, "the second refetch sent nothing")
}

// TestRefetchOrderRateLimitAnswerIsAWait: a 429 from the platform is
// ErrRateLimited with its Retry-After, not retried by the activity.
func TestRefetchOrderRateLimitAnswerIsAWait(t *testing.T) {
	f := newRefetchFixture(t, sim.RateLimit{RPS: 0.01, Burst: 1})
	truth, err := f.sim.Truth("acme", f.sim.Now())
	require.NoError(t, err)
	_, err = f.refetch(t, truth.Orders[0].ID)
	require.NoError(t, err)
	_, err = f.refetch(t, truth.Orders[1].ID)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, ErrRateLimited, app.Type())
	require.True(t, app.NonRetryable(), "the workflow waits, the activity does not retry")
	require.GreaterOrEqual(t, app.NextRetryDelay(), 90*time.Second, "the platform's Retry-After")
}
