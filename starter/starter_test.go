package starter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/starter"
)

// startCapturing is a client on which no workflow runs yet: it records the
// options ExecuteWorkflow is given.
func startCapturing(t *testing.T, workflowID, workflowType string) (*mocks.Client, *client.StartWorkflowOptions) {
	t.Helper()
	c := &mocks.Client{}
	c.On("DescribeWorkflowExecution", mock.Anything, workflowID, "").Return(nil, serviceerror.NewNotFound("not found"))
	run := &mocks.WorkflowRun{}
	run.On("GetRunID").Return("run-1")
	got := &client.StartWorkflowOptions{}
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, workflowType, mock.Anything).
		Run(func(args mock.Arguments) { *got = args.Get(1).(client.StartWorkflowOptions) }).
		Return(run, nil).Once()
	t.Cleanup(func() { c.AssertExpectations(t) })
	return c, got
}

// TestEnsureCursorStartsWithTheFairnessKey: the cursor's own tasks, and
// through the server's inheritance those of everything it starts, carry
// the platform's fairness key.
func TestEnsureCursorStartsWithTheFairnessKey(t *testing.T) {
	p := config.BuiltinDefaults()
	p.Name, p.Kind, p.TaskQueue, p.Start = "shop-eu", "shopify", "orders-shopify", "-24h"
	c, got := startCapturing(t, api.CursorWorkflowID(p.Name), api.CursorWorkflowType)
	run := &mocks.WorkflowRun{}
	rec := &client.StartWorkflowOptions{}
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, api.ReconcileWorkflowType, mock.Anything).
		Run(func(args mock.Arguments) { *rec = args.Get(1).(client.StartWorkflowOptions) }).Return(run, nil).Once()
	res, err := starter.EnsureCursor(context.Background(), c, p, time.Now())
	require.NoError(t, err)
	require.True(t, res.Started)
	require.Equal(t, "orders-shopify", got.TaskQueue)
	require.Equal(t, fairness.Priority("shop-eu"), got.Priority)
	// The count reconciliation beside it: same queue and fairness key,
	// after backfill.
	require.Equal(t, api.ReconcileWorkflowID("shop-eu"), rec.ID)
	require.Equal(t, "orders-shopify", rec.TaskQueue)
	require.Equal(t, fairness.Key("shop-eu"), rec.Priority.FairnessKey)
	require.Equal(t, api.ReconcilePriority, rec.Priority.PriorityKey)
}

// TestEnsureCursorWithoutCountEndsReconcile: a kind without a count call
// (or reconcile: false) starts no reconciliation and ends one that runs.
func TestEnsureCursorWithoutCountEndsReconcile(t *testing.T) {
	off := false
	for _, p := range []config.Platform{
		{Name: "amz", Kind: "amazon", TaskQueue: "orders-amazon", Start: "-24h"},
		{Name: "shop-off", Kind: "shopify", TaskQueue: "orders-shopify", Start: "-24h", Reconcile: &off},
	} {
		c, _ := startCapturing(t, api.CursorWorkflowID(p.Name), api.CursorWorkflowType)
		c.On("CancelWorkflow", mock.Anything, api.ReconcileWorkflowID(p.Name), "").Return(serviceerror.NewNotFound("not found")).Once()
		_, err := starter.EnsureCursor(context.Background(), c, p, time.Now())
		require.NoError(t, err, p.Name)
	}
}

// TestEnsureDeliveryStartsWithTheFairnessKey: a Delivery's key is its
// destination's name.
func TestEnsureDeliveryStartsWithTheFairnessKey(t *testing.T) {
	d := config.DestinationDefaults()
	d.Name, d.TaskQueue = "warehouse", "deliveries"
	c, got := startCapturing(t, api.DeliveryWorkflowID(d.Name), api.DeliveryWorkflowType)
	_, err := starter.EnsureDelivery(context.Background(), c, d)
	require.NoError(t, err)
	require.Equal(t, fairness.Priority("warehouse"), got.Priority)
}
