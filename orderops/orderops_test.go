package orderops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/order"
	"github.com/ordersync/ordersync/orderops"
	"github.com/ordersync/ordersync/store"
)

var t0 = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func platform(name string) config.Platform {
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.Endpoint, p.TaskQueue = name, "sim", "http://127.0.0.1:1/shops/"+name, "orders-sim"
	p.Credentials = config.CredentialRef{Env: "SIM_TOKEN"}
	return p
}

func register(t *testing.T, reg accounts.Registry, e accounts.Entry, err error) {
	t.Helper()
	require.NoError(t, err)
	_, err = reg.Put(context.Background(), e, accounts.Any)
	require.NoError(t, err)
}

func destination(name string, platforms ...string) config.Destination {
	d := config.DestinationDefaults()
	d.Name, d.Kind, d.URL, d.Platforms = name, "webhook", "http://127.0.0.1:9/hook", platforms
	d.Secret = config.CredentialRef{Env: "HOOK_SECRET"}
	return d
}

func orderVersion(v int) order.Order {
	return order.Order{Platform: "sim-a", ID: "1000000001", Status: fmt.Sprintf("v%d", v), CreatedAt: t0, UpdatedAt: t0.Add(time.Duration(v) * time.Minute),
		Currency: "EUR", Total: "10.00", Raw: json.RawMessage(`{"id":"1000000001"}`), HasLines: true, LineCount: 1,
		Lines:     []order.Line{{ID: "1", SKU: "SKU-1", Quantity: 2, UnitPrice: "5.00", Currency: "EUR"}},
		Canonical: &order.Canonical{Schema: order.SchemaV1, Platform: "sim-a", OrderID: "1000000001", Number: "#1001", UpdatedAt: t0.Add(time.Duration(v) * time.Minute)}}
}

// TestGetJudgesEachDestination: the current version is delivered where
// the destination acknowledged its change's seq (in the store, or only in
// the Delivery workflow, which is ahead of the store), pending where not, set
// aside where the Delivery workflow's poison list holds that seq, and not
// for a destination of other platforms; removed destinations are not
// listed. Versions are the order's retained changes.
func TestGetJudgesEachDestination(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	_, err := st.UpsertOrders(ctx, []order.Order{orderVersion(1)})
	require.NoError(t, err)
	_, err = st.UpsertOrders(ctx, []order.Order{orderVersion(2)})
	require.NoError(t, err)
	changes, err := st.OrderChanges(ctx, "sim-a", "1000000001")
	require.NoError(t, err)
	require.Len(t, changes, 2)
	latest := changes[1].Seq
	require.NoError(t, st.AckChanges(ctx, "acked", latest))
	require.NoError(t, st.AckChanges(ctx, "behind", latest-1))
	require.NoError(t, st.AckChanges(ctx, "ahead", latest-1))
	require.NoError(t, st.AckChanges(ctx, "poisoned", latest))

	reg := accounts.NewMemory()
	for _, d := range []config.Destination{destination("acked"), destination("behind"), destination("poisoned"), destination("ahead"), destination("other", "sim-b")} {
		e, err := accounts.DestinationEntry(d, accounts.Active)
		register(t, reg, e, err)
	}
	gone, err := accounts.DestinationEntry(destination("gone"), accounts.Removed)
	register(t, reg, gone, err)

	c := &mocks.Client{}
	status := func(st api.DeliveryState) *mocks.Value {
		v := &mocks.Value{}
		v.On("Get", mock.Anything).Run(func(args mock.Arguments) {
			*args.Get(0).(*api.DeliveryStatus) = api.DeliveryStatus{State: st}
		}).Return(nil)
		return v
	}
	c.On("QueryWorkflow", mock.Anything, api.DeliveryWorkflowID("poisoned"), "", api.QueryDeliveryStatus).
		Return(status(api.DeliveryState{Acked: latest, Poison: []api.PoisonChange{{Seq: latest, Reason: "HTTP 422"}}}), nil)
	// The workflow acknowledged the change; the store hears of it only at
	// the next batch listing.
	c.On("QueryWorkflow", mock.Anything, api.DeliveryWorkflowID("ahead"), "", api.QueryDeliveryStatus).
		Return(status(api.DeliveryState{Acked: latest}), nil)
	c.On("QueryWorkflow", mock.Anything, mock.Anything, "", api.QueryDeliveryStatus).Return(nil, serviceerror.NewNotFound("no such workflow"))

	svc := &orderops.Service{Store: st, Registry: reg, Temporal: c}
	o, found, err := svc.Get(ctx, "sim-a", "1000000001", orderops.GetOptions{})
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "#1001", o.Number)
	require.NotNil(t, o.Canonical)
	require.Nil(t, o.Raw, "raw only on request")
	require.Len(t, o.Lines, 1)
	require.Equal(t, []orderops.Version{
		{Seq: changes[0].Seq, UpdatedAt: t0.Add(time.Minute), CommittedAt: changes[0].CommittedAt, Kind: store.ChangeCreated},
		{Seq: latest, UpdatedAt: t0.Add(2 * time.Minute), CommittedAt: changes[1].CommittedAt, Kind: store.ChangeUpdated},
	}, o.Versions)
	states := map[string]string{}
	for _, d := range o.Deliveries {
		states[d.Destination] = d.State
	}
	require.Equal(t, map[string]string{"acked": orderops.Delivered, "behind": orderops.Pending, "poisoned": orderops.SetAside,
		"ahead": orderops.Delivered, "other": orderops.NotForPlatform}, states)

	o, _, err = svc.Get(ctx, "sim-a", "1000000001", orderops.GetOptions{Raw: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"1000000001"}`, string(o.Raw))

	_, found, err = svc.Get(ctx, "sim-a", "nope", orderops.GetOptions{})
	require.NoError(t, err)
	require.False(t, found)
}

// TestStartRefetchStartsOneWorkflowPerOrder: each distinct id gets the
// Refetch workflow with its deterministic ID and USE_EXISTING (a request
// for an order in flight joins it), on the platform's task queue at the
// priority asked (default above backfill) with the platform's fairness
// key; the input names the platform by reference, no identity.
func TestStartRefetchStartsOneWorkflowPerOrder(t *testing.T) {
	ctx := context.Background()
	reg := accounts.NewMemory()
	e, err := accounts.PlatformEntry(platform("sim-a"), accounts.Active)
	register(t, reg, e, err)
	c := &mocks.Client{}
	run := &mocks.WorkflowRun{}
	run.On("GetRunID").Return("run-1")
	var starts []client.StartWorkflowOptions
	var inputs []api.RefetchInput
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, api.RefetchWorkflowType, mock.Anything).Run(func(args mock.Arguments) {
		starts = append(starts, args.Get(1).(client.StartWorkflowOptions))
		inputs = append(inputs, args.Get(3).(api.RefetchInput))
	}).Return(run, nil)
	svc := &orderops.Service{Store: openStore(t), Registry: reg, Temporal: c}

	rs, err := svc.StartRefetch(ctx, orderops.RefetchRequest{Platform: "sim-a", IDs: []string{"1", "2", "1", "gid://shopify/Order/3"}})
	require.NoError(t, err)
	require.Len(t, rs, 3, "the same id twice is one refetch")
	require.Len(t, starts, 3)
	for i, id := range []string{"1", "2", "gid://shopify/Order/3"} {
		o := starts[i]
		require.Equal(t, api.RefetchWorkflowID("sim-a", id), o.ID)
		require.Equal(t, "refetch/sim-a/"+id, o.ID)
		require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, o.WorkflowIDConflictPolicy)
		require.Equal(t, "orders-sim", o.TaskQueue)
		require.Equal(t, api.RefetchDefaultPriority, o.Priority.PriorityKey)
		require.Less(t, o.Priority.PriorityKey, api.BackfillPriority)
		require.Equal(t, fairness.Key("sim-a"), o.Priority.FairnessKey)
		require.Equal(t, id, inputs[i].OrderID)
		require.Equal(t, "sim-a", inputs[i].Platform.Name)
		b, err := json.Marshal(inputs[i])
		require.NoError(t, err)
		require.NotContains(t, string(b), "127.0.0.1", "no endpoint in the input")
		require.NotContains(t, string(b), "SIM_TOKEN", "no credential reference in the input")
		require.Equal(t, orderops.Running, rs[i].Outcome)
	}

	_, err = svc.StartRefetch(ctx, orderops.RefetchRequest{Platform: "sim-a", IDs: []string{"1"}, Priority: 1})
	require.NoError(t, err)
	require.Equal(t, 1, starts[3].Priority.PriorityKey)
}

// TestStartRefetchRefusesBeforeStartingAnything: a bad id anywhere in the
// request, a priority outside 1-5, too many ids or an unknown platform
// start nothing.
func TestStartRefetchRefusesBeforeStartingAnything(t *testing.T) {
	ctx := context.Background()
	reg := accounts.NewMemory()
	e, err := accounts.PlatformEntry(platform("sim-a"), accounts.Active)
	register(t, reg, e, err)
	removed, err := accounts.PlatformEntry(platform("sim-gone"), accounts.Removed)
	register(t, reg, removed, err)
	c := &mocks.Client{} // any ExecuteWorkflow call fails the test
	svc := &orderops.Service{Store: openStore(t), Registry: reg, Temporal: c}
	many := make([]string, orderops.MaxRefetchIDs+1)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, req := range []orderops.RefetchRequest{
		{Platform: "sim-a", IDs: []string{"1", "bad\x1bid"}},
		{Platform: "sim-a", IDs: []string{"1", ""}},
		{Platform: "sim-a"},
		{Platform: "sim-a", IDs: []string{"1"}, Priority: 6},
		{Platform: "sim-a", IDs: many},
	} {
		_, err := svc.StartRefetch(ctx, req)
		require.True(t, errors.Is(err, orderops.ErrBadRequest), "%v", err)
	}
	for _, name := range []string{"sim-nope", "sim-gone"} {
		_, err = svc.StartRefetch(ctx, orderops.RefetchRequest{Platform: name, IDs: []string{"1"}})
		require.True(t, errors.Is(err, orderops.ErrUnknownPlatform), "%v", err)
	}
	c.AssertNotCalled(t, "ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything)
}

// TestWaitReportsOutcomesAndFailures: the workflow's result, or its
// failure's own message.
func TestWaitReportsOutcomesAndFailures(t *testing.T) {
	c := &mocks.Client{}
	ok, bad, cut := &mocks.WorkflowRun{}, &mocks.WorkflowRun{}, &mocks.WorkflowRun{}
	ok.On("Get", mock.Anything, mock.Anything).Run(func(args mock.Arguments) {
		*args.Get(1).(*api.RefetchResult) = api.RefetchResult{Outcome: api.RefetchNotFound}
	}).Return(nil)
	bad.On("Get", mock.Anything, mock.Anything).Return(temporal.NewNonRetryableApplicationError("refetch order 2 of sim-a: HTTP 401", api.ErrRefetchFailed, nil))
	cut.On("Get", mock.Anything, mock.Anything).Return(errors.New("context deadline exceeded"))
	c.On("GetWorkflow", mock.Anything, "refetch/sim-a/1", "r1").Return(ok)
	c.On("GetWorkflow", mock.Anything, "refetch/sim-a/2", "r2").Return(bad)
	c.On("GetWorkflow", mock.Anything, "refetch/sim-a/3", "r3").Return(cut)
	svc := &orderops.Service{Temporal: c}
	rs := []orderops.Refetch{{OrderID: "1", WorkflowID: "refetch/sim-a/1", RunID: "r1", Outcome: orderops.Running},
		{OrderID: "2", WorkflowID: "refetch/sim-a/2", RunID: "r2", Outcome: orderops.Running},
		{OrderID: "3", WorkflowID: "refetch/sim-a/3", RunID: "r3", Outcome: orderops.Running}}
	svc.Wait(context.Background(), rs)
	require.Equal(t, api.RefetchNotFound, rs[0].Outcome)
	require.Equal(t, orderops.Failed, rs[1].Outcome)
	require.Contains(t, rs[1].Error, "HTTP 401")
	require.Equal(t, orderops.Running, rs[2].Outcome, "a wait cut short is no failure of the refetch")
	require.Contains(t, rs[2].Error, "waiting for the result")
}
