package starter

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/workflows"
)

// ensureReconcile starts the platform's count reconciliation beside its
// cursor (api.ReconcileWorkflowID, conflict policy USE_EXISTING: one that
// runs keeps its state), from the cursor's backfill start. Nothing starts
// for a kind without a count call (connectors.CountSupported) or with
// reconcile: false; a running one is then ended.
func ensureReconcile(ctx context.Context, c client.Client, p config.Platform, revision int64, start time.Time) error {
	s := settingsAt(p, revision)
	if !connectors.CountSupported(p) || !s.ReconcileOn() {
		return stopReconcile(ctx, c, p.Name)
	}
	_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       api.ReconcileWorkflowID(p.Name),
		TaskQueue:                p.TaskQueue,
		Priority:                 workflows.ReconcileTaskPriority(p.Name),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    temporal.NewSearchAttributes(searchattr.Platform.ValueSet(p.Name)),
	}, api.ReconcileWorkflowType, api.ReconcileInput{Platform: s, Start: start})
	if err != nil {
		return fmt.Errorf("start reconciliation of %s: %w", p.Name, err)
	}
	return nil
}

// stopReconcile cancels the platform's reconciliation, if one runs.
func stopReconcile(ctx context.Context, c client.Client, name string) error {
	if err := c.CancelWorkflow(ctx, api.ReconcileWorkflowID(name), ""); err != nil && !isNotFound(err) {
		return fmt.Errorf("cancel %s: %w", api.ReconcileWorkflowID(name), err)
	}
	return nil
}
