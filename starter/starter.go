// Package starter starts platform cursors idempotently: starting a cursor
// that already runs is a no-op, so the CLI, `ordersync dev` and deploy
// scripts can all call it freely.
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
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/workflows"
)

// Result tells what EnsureCursor found or did.
type Result struct {
	WorkflowID string
	RunID      string
	// Started is false when the cursor was already running.
	Started bool
}

// EnsureCursor starts the platform's cursor unless one is running. A
// relative start ("-2160h") is resolved against now. The cursor gets p's
// settings by reference (api.Settings), at an unknown registry revision.
func EnsureCursor(ctx context.Context, c client.Client, p config.Platform, now time.Time) (Result, error) {
	return EnsureRegisteredCursor(ctx, c, p, 0, now)
}

// EnsureRegisteredCursor is EnsureCursor for p as the account registry
// holds it at revision.
func EnsureRegisteredCursor(ctx context.Context, c client.Client, p config.Platform, revision int64, now time.Time) (Result, error) {
	id := api.CursorWorkflowID(p.Name)
	start, err := p.ResolveStart(now)
	if err != nil {
		return Result{}, fmt.Errorf("platform %s: start: %w", p.Name, err)
	}
	// Count reconciliation runs beside the cursor (reconcile.go).
	if err := ensureReconcile(ctx, c, p, revision, start); err != nil {
		return Result{}, err
	}
	if desc, err := c.DescribeWorkflowExecution(ctx, id, ""); err == nil &&
		desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return Result{WorkflowID: id, RunID: desc.GetWorkflowExecutionInfo().GetExecution().GetRunId()}, nil
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       id,
		TaskQueue:                p.TaskQueue,
		Priority:                 fairness.Priority(p.Name),
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    temporal.NewSearchAttributes(searchattr.Platform.ValueSet(p.Name)),
	}, api.CursorWorkflowType, api.CursorInput{Platform: settingsAt(p, revision), Start: start, MaxSlicesPerRun: workflows.DefaultMaxSlicesPerRun})
	if err != nil {
		return Result{}, fmt.Errorf("start cursor of %s: %w", p.Name, err)
	}
	return Result{WorkflowID: id, RunID: run.GetRunID(), Started: true}, nil
}

// EnsureCursors starts every platform's cursor, stopping at the first error.
func EnsureCursors(ctx context.Context, c client.Client, platforms []config.Platform, now time.Time) ([]Result, error) {
	out := make([]Result, 0, len(platforms))
	for _, p := range platforms {
		r, err := EnsureCursor(ctx, c, p, now)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// settingsAt is p's settings as read at the registry's revision.
func settingsAt(p config.Platform, revision int64) api.Settings {
	s := p.Settings()
	s.Revision = revision
	return s
}
