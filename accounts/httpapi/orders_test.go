package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/accountstest"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/store"
)

// newOrdersFixture serves the order operations over a SQLite store with
// three orders of sim-a (one with a Shopify GID for an id) and a mocked
// Temporal.
func newOrdersFixture(t *testing.T) (*fixture, *mocks.Client) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	var batch []order.Order
	for i, id := range []string{"1", "2", "gid://shopify/Order/3"} {
		batch = append(batch, order.Order{Platform: "sim-a", ID: id, Status: "paid", Currency: "EUR", Total: "1.00", CreatedAt: at,
			UpdatedAt: at.Add(time.Duration(i) * time.Minute), Raw: json.RawMessage(`{"x":1}`)})
	}
	_, err = st.UpsertOrders(ctx, batch)
	require.NoError(t, err)

	reg, eng := accounts.NewMemory(), &accountstest.Engine{}
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.Endpoint, p.TaskQueue, p.Credentials = "sim-a", "sim", "http://127.0.0.1:1/shops/a", "orders-sim", config.CredentialRef{Env: "X"}
	e, err := accounts.PlatformEntry(p, accounts.Active)
	require.NoError(t, err)
	_, err = reg.Put(ctx, e, accounts.Any)
	require.NoError(t, err)

	c := &mocks.Client{}
	c.On("QueryWorkflow", mock.Anything, mock.Anything, "", api.QueryDeliveryPoison).Return(nil, serviceerror.NewNotFound("none"))
	h, err := New(&accounts.Service{Registry: reg, Engine: eng}, Options{Token: testToken,
		Orders: &orderops.Service{Store: st, Registry: reg, Temporal: c}})
	require.NoError(t, err)
	return &fixture{h: h, reg: reg, eng: eng}, c
}

func TestOrdersSearchRoute(t *testing.T) {
	f, _ := newOrdersFixture(t)
	a := f.do(t, http.MethodGet, "/v1/orders?platform=sim-a&limit=2", nil)
	require.Equal(t, http.StatusOK, a.status, string(a.raw))
	var page store.SearchPage
	require.NoError(t, json.Unmarshal(a.raw, &page))
	require.Len(t, page.Orders, 2)
	require.Equal(t, "gid://shopify/Order/3", page.Orders[0].ID, "newest first")
	require.NotEmpty(t, page.Next)

	a = f.do(t, http.MethodGet, "/v1/orders?after="+page.Next, nil)
	require.Equal(t, http.StatusOK, a.status)
	page = store.SearchPage{}
	require.NoError(t, json.Unmarshal(a.raw, &page))
	require.Len(t, page.Orders, 1)
	require.Equal(t, "1", page.Orders[0].ID)
	require.Empty(t, page.Next)

	a = f.do(t, http.MethodGet, "/v1/orders?from=2026-11-20T09:01:00Z&to=2026-11-20T09:02:00Z", nil)
	require.Equal(t, http.StatusOK, a.status)
	page = store.SearchPage{}
	require.NoError(t, json.Unmarshal(a.raw, &page))
	require.Len(t, page.Orders, 1)
	require.Equal(t, "2", page.Orders[0].ID)

	for _, q := range []string{"limit=0", "limit=501", "from=yesterday", "after=zzz", "colour=red", "from=2026-11-20T10:00:00Z&to=2026-11-20T09:00:00Z"} {
		a = f.do(t, http.MethodGet, "/v1/orders?"+q, nil)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", q, a.raw)
	}
}

func TestOrdersGetRoute(t *testing.T) {
	f, _ := newOrdersFixture(t)
	a := f.do(t, http.MethodGet, "/v1/orders/sim-a/gid%3A%2F%2Fshopify%2FOrder%2F3?raw=true", nil)
	require.Equal(t, http.StatusOK, a.status, string(a.raw))
	require.Equal(t, "gid://shopify/Order/3", a.body["id"], "an id with / travels as %2F")
	require.Equal(t, map[string]any{"x": float64(1)}, a.body["raw"])
	require.Len(t, a.body["versions"], 1)

	a = f.do(t, http.MethodGet, "/v1/orders/sim-a/1", nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Nil(t, a.body["raw"], "raw only on request")

	a = f.do(t, http.MethodGet, "/v1/orders/sim-a/nope", nil)
	require.Equal(t, http.StatusNotFound, a.status)
	require.Contains(t, a.body["hint"], "/v1/orders/sim-a/refetch")
}

func TestOrdersRefetchRoute(t *testing.T) {
	f, c := newOrdersFixture(t)
	run := &mocks.WorkflowRun{}
	run.On("GetRunID").Return("run-1")
	var opts []client.StartWorkflowOptions
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, api.RefetchWorkflowType, mock.Anything).Run(func(args mock.Arguments) {
		opts = append(opts, args.Get(1).(client.StartWorkflowOptions))
	}).Return(run, nil)

	a := f.do(t, http.MethodPost, "/v1/orders/sim-a/refetch", map[string]any{"ids": []string{"1", "2"}, "priority": 1})
	require.Equal(t, http.StatusAccepted, a.status, string(a.raw))
	require.Len(t, a.body["orders"], 2)
	require.Len(t, opts, 2)
	require.Equal(t, "refetch/sim-a/1", opts[0].ID)
	require.Equal(t, 1, opts[0].Priority.PriorityKey)

	for _, body := range []any{
		map[string]any{"ids": []string{}},
		map[string]any{"ids": []string{"1"}, "colour": "red"},
		map[string]any{"ids": []string{"1"}, "priority": 9},
		map[string]any{"ids": []string{"1"}, "wait_seconds": 600},
		"[]",
	} {
		a = f.do(t, http.MethodPost, "/v1/orders/sim-a/refetch", body)
		require.Equal(t, http.StatusBadRequest, a.status, "%v: %s", body, a.raw)
	}
	a = f.do(t, http.MethodPost, "/v1/orders/sim-nope/refetch", map[string]any{"ids": []string{"1"}})
	require.Equal(t, http.StatusNotFound, a.status)
	require.Len(t, opts, 2, "nothing started for a refused request")
}

func TestOrdersRoutesWithoutOrderOperations(t *testing.T) {
	f := newFixture(t)
	a := f.do(t, http.MethodGet, "/v1/orders", nil)
	require.Equal(t, http.StatusNotImplemented, a.status)
}
