package starter

import (
	"context"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/workflows"
)

// EnsureDelivery starts the destination's Delivery workflow unless one is
// running, with settings of unknown registry revision (a destination only
// a platforms file declares). A new one starts after seq 0: every
// retained change.
func EnsureDelivery(ctx context.Context, c client.Client, d config.Destination) (Result, error) {
	return EnsureDeliveryAt(ctx, c, d, 0)
}

// EnsureDeliveryAt is EnsureDelivery with d as read at the registry's
// revision: the Delivery's input names it, so the Web UI and a status
// show which registry entry a Delivery was started from.
func EnsureDeliveryAt(ctx context.Context, c client.Client, d config.Destination, revision int64) (Result, error) {
	id := api.DeliveryWorkflowID(d.Name)
	if desc, err := c.DescribeWorkflowExecution(ctx, id, ""); err == nil &&
		desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return Result{WorkflowID: id, RunID: desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()}, nil
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                d.TaskQueue,
		Priority:                 fairness.Priority(d.Name),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, api.DeliveryWorkflowType, api.DeliveryInput{Destination: destinationAt(d, revision), MaxBatchesPerRun: workflows.DefaultMaxBatchesPerRun})
	if err != nil {
		return Result{}, fmt.Errorf("start delivery to %s: %w", d.Name, err)
	}
	return Result{WorkflowID: id, RunID: run.GetRunID(), Started: true}, nil
}

// destinationAt is d's settings as read at the registry's revision.
func destinationAt(d config.Destination, revision int64) api.DestinationSettings {
	s := d.Settings()
	s.Revision = revision
	return s
}
