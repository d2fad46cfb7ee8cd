package orderops_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/orderops"
)

// TestStartRefetchAgainSignalsWithStart: a webhook's refetch
// (RefetchRequest.Again) starts by signal-with-start of the again signal,
// with the same ID, policies, queue and input as a plain refetch, so a
// refetch of the order in flight is joined and fetches once more.
func TestStartRefetchAgainSignalsWithStart(t *testing.T) {
	ctx := context.Background()
	reg := accounts.NewMemory()
	e, err := accounts.PlatformEntry(platform("sim-a"), accounts.Active)
	register(t, reg, e, err)
	c := &mocks.Client{}
	run := &mocks.WorkflowRun{}
	run.On("GetRunID").Return("run-1")
	var opts client.StartWorkflowOptions
	var in api.RefetchInput
	c.On("SignalWithStartWorkflow", mock.Anything, "refetch/sim-a/42", api.RefetchSignalAgain, nil, mock.Anything, api.RefetchWorkflowType, mock.Anything).
		Run(func(args mock.Arguments) {
			opts = args.Get(4).(client.StartWorkflowOptions)
			in = args.Get(6).(api.RefetchInput)
		}).Return(run, nil)
	svc := &orderops.Service{Store: openStore(t), Registry: reg, Temporal: c}

	rs, err := svc.StartRefetch(ctx, orderops.RefetchRequest{Platform: "sim-a", IDs: []string{"42"}, Again: true})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, "refetch/sim-a/42", opts.ID)
	require.Equal(t, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, opts.WorkflowIDConflictPolicy)
	require.Equal(t, "orders-sim", opts.TaskQueue)
	require.Equal(t, api.RefetchDefaultPriority, opts.Priority.PriorityKey)
	require.Equal(t, "42", in.OrderID)
	c.AssertNotCalled(t, "ExecuteWorkflow", mock.Anything, mock.Anything, mock.Anything, mock.Anything)
}
