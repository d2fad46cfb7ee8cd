package starter

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/searchattr"
)

// Engine is accounts.Engine on a Temporal client: it starts, reconfigures,
// pauses and ends the workflows of a registered platform. Signals, not
// updates, carry the changes: they are durable the moment the server takes
// them, so an account added or paused while its queue has no worker yet
// still gets there.
type Engine struct {
	Client client.Client
	// Now is the clock a relative start is resolved against (default time.Now).
	Now func() time.Time
}

// Start implements accounts.Engine.
func (e Engine) Start(ctx context.Context, p config.Platform, revision int64) error {
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	_, err := EnsureRegisteredCursor(ctx, e.Client, p, revision, now())
	return err
}

// Reconfigure implements accounts.Engine: the cursor gets the settings
// with its `config` signal (validated in the workflow), and the
// dead-letter workflow too, so reprocessing uses them.
func (e Engine) Reconfigure(ctx context.Context, p config.Platform, revision int64) error {
	s := settingsAt(p, revision) // the tuning only: identity stays in the registry
	if err := e.signal(ctx, api.CursorWorkflowID(p.Name), api.SignalConfig, s); err != nil {
		return err
	}
	// Reconciliation ends itself on reconcile: false; one turned on again
	// starts with the cursor (platform start, apply of a stopped platform).
	if err := e.signal(ctx, api.ReconcileWorkflowID(p.Name), api.SignalReconcileConfig, s); err != nil {
		return err
	}
	return e.signal(ctx, api.DeadLetterWorkflowID(p.Name), api.SignalDeadLetterConfig, s)
}

// Pause implements accounts.Engine.
func (e Engine) Pause(ctx context.Context, name, reason string) error {
	return e.signal(ctx, api.CursorWorkflowID(name), api.SignalPause, api.PauseRequest{Reason: reason})
}

// Resume implements accounts.Engine.
func (e Engine) Resume(ctx context.Context, name string) error {
	return e.signal(ctx, api.CursorWorkflowID(name), api.SignalResume, nil)
}

// Stop implements accounts.Engine: the cursor is cancelled (it ends at
// once, see workflows.PlatformCursor), then every slice of the platform
// still running is cancelled, and with discardDeadLetters the dead-letter
// workflow is terminated. The workers refuse the platform's pages from
// the moment the registry says removed, so nothing is fetched even while
// these cancellations travel.
func (e Engine) Stop(ctx context.Context, name string, discardDeadLetters bool) error {
	if err := e.Client.CancelWorkflow(ctx, api.CursorWorkflowID(name), ""); err != nil && !isNotFound(err) {
		return fmt.Errorf("cancel %s: %w", api.CursorWorkflowID(name), err)
	}
	if err := stopReconcile(ctx, e.Client, name); err != nil {
		return err
	}
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running' AND %s = '%s'",
		api.SliceWorkflowType, searchattr.Platform.GetName(), name)
	var token []byte
	for {
		resp, err := e.Client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list the running slices of %s: %w", name, err)
		}
		for _, x := range resp.GetExecutions() {
			id := x.GetExecution().GetWorkflowId()
			if err := e.Client.CancelWorkflow(ctx, id, ""); err != nil && !isNotFound(err) {
				return fmt.Errorf("cancel %s: %w", id, err)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	if discardDeadLetters {
		id := api.DeadLetterWorkflowID(name)
		if err := e.Client.TerminateWorkflow(ctx, id, "", "platform removed, its dead letters discarded"); err != nil && !isNotFound(err) {
			return fmt.Errorf("terminate %s: %w", id, err)
		}
	}
	return nil
}

// RunningQueue implements accounts.Engine.
func (e Engine) RunningQueue(ctx context.Context, name string) (string, bool, error) {
	d, err := e.Client.DescribeWorkflowExecution(ctx, api.CursorWorkflowID(name), "")
	switch {
	case isNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("describe %s: %w", api.CursorWorkflowID(name), err)
	}
	info := d.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return "", false, nil
	}
	return info.GetTaskQueue(), info.GetTaskQueue() != "", nil
}

// signal sends one signal; a workflow that does not run is left alone
// (Start makes it run, with the registry's settings).
func (e Engine) signal(ctx context.Context, id, name string, arg any) error {
	var err error
	if arg == nil {
		err = e.Client.SignalWorkflow(ctx, id, "", name, nil)
	} else {
		err = e.Client.SignalWorkflow(ctx, id, "", name, arg)
	}
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("signal %s to %s: %w", name, id, err)
	}
	return nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
