package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/tuning"
)

// errNotRunning explains how to get a cursor going.
func errNotRunning(workflowID, platform string) error {
	return fmt.Errorf("%s is not running; start it with: ordersync platform start %s", workflowID, platform)
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// cursorStatus queries a platform's cursor; found is false when none runs.
func cursorStatus(ctx context.Context, c client.Client, platform string) (st api.CursorStatus, found bool, err error) {
	v, err := c.QueryWorkflow(ctx, api.CursorWorkflowID(platform), "", api.QueryStatus)
	if err != nil {
		if isNotFound(err) || strings.Contains(err.Error(), "workflow execution already completed") {
			return st, false, nil
		}
		return st, false, fmt.Errorf("query %s: %w", api.CursorWorkflowID(platform), err)
	}
	if err := v.Get(&st); err != nil {
		return st, false, fmt.Errorf("decode status of %s: %w", platform, err)
	}
	return st, true, nil
}

// deadLetters lists a platform's dead letters; none when the workflow never ran.
func deadLetters(ctx context.Context, c client.Client, platform string) ([]api.DeadLetterEntry, error) {
	v, err := c.QueryWorkflow(ctx, api.DeadLetterWorkflowID(platform), "", api.QueryDeadLetterList)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("query %s: %w", api.DeadLetterWorkflowID(platform), err)
	}
	var entries []api.DeadLetterEntry
	if err := v.Get(&entries); err != nil {
		return nil, fmt.Errorf("decode dead letters of %s: %w", platform, err)
	}
	return entries, nil
}

// DefaultUpdateTimeout is how long a command waits for a cursor to answer
// an update. A running worker answers within a second; without one the
// server holds the update and would keep the command waiting forever.
const DefaultUpdateTimeout = 15 * time.Second

// addTimeoutFlag adds --timeout, the wait for a workflow's answer, to a
// command that sends updates.
func addTimeoutFlag(cmd *cobra.Command, timeout *time.Duration) {
	durationDaysVar(cmd.Flags(), timeout, "timeout", DefaultUpdateTimeout,
		"how long to wait for the workflow's answer (a worker must run); without one the command fails with exit status 1")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if *timeout <= 0 {
			return Usage(fmt.Errorf("--timeout must be positive, got %s", *timeout))
		}
		return nil
	}
}

// updateWaitHelp is the help paragraph of every command that sends updates.
const updateWaitHelp = `The cursor answers through a worker. If no worker answers within --timeout
(default 15s), the command fails with exit status 1 and names the task queue
that needs a running ordersync worker. The request was then not confirmed:
the cursor may still receive it when a worker starts, or it may be dropped;
run the command again once a worker runs (repeating it is harmless).`

// deadLetterStatus asks a dead-letter workflow for its counts and the last
// signal it refused; ok is false when it cannot answer (never started).
func deadLetterStatus(ctx context.Context, c client.Client, platform string) (st api.DeadLetterStatus, ok bool) {
	v, err := c.QueryWorkflow(ctx, api.DeadLetterWorkflowID(platform), "", api.QueryDeadLetterStatus)
	if err != nil || v.Get(&st) != nil {
		return st, false
	}
	return st, true
}

// updateCursor runs an update on p's cursor and waits up to timeout for its
// answer; a validator's rejection comes back as a usage error, no answer
// in time as a failure that says which task queue needs a worker.
func (a *App) updateCursor(ctx context.Context, c client.Client, p config.Platform, timeout time.Duration, name string, result any, args ...any) error {
	id := api.CursorWorkflowID(p.Name)
	uctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h, err := c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   name,
		Args:         args,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	timedOut := func() bool { return uctx.Err() != nil && ctx.Err() == nil }
	if err != nil {
		switch {
		case isNotFound(err):
			return errNotRunning(id, p.Name)
		case timedOut():
			return a.noWorkerAnswered(ctx, c, p, name, timeout)
		}
		return fmt.Errorf("%s %s: %w", name, id, err)
	}
	if err := h.Get(uctx, result); err != nil {
		if timedOut() {
			return a.noWorkerAnswered(ctx, c, p, name, timeout)
		}
		return Usage(fmt.Errorf("%s %s rejected: %w", name, id, err))
	}
	return nil
}

// noWorkerAnswered explains an update that got no answer in time: which
// task queue the cursor runs on (as the server knows it, else as the file
// says) and whether any worker polls it.
func (a *App) noWorkerAnswered(ctx context.Context, c client.Client, p config.Platform, name string, timeout time.Duration) error {
	id := api.CursorWorkflowID(p.Name)
	queue, polling := p.TaskQueue, "no worker polls it"
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if d, err := c.DescribeWorkflowExecution(dctx, id, ""); err == nil && d.GetWorkflowExecutionInfo().GetTaskQueue() != "" {
		queue = d.GetWorkflowExecutionInfo().GetTaskQueue()
	}
	switch d, err := c.DescribeTaskQueue(dctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW); {
	case err != nil:
		polling = "it could not be described: " + err.Error()
	case len(d.GetPollers()) > 0:
		polling = fmt.Sprintf("%d worker(s) polled it recently but none answered; stopped a moment ago, or too busy? see their logs", len(d.GetPollers()))
	}
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf(
		"no worker answered the %s update of %s within %s (task queue %q: %s). Is `ordersync worker` running for platform %s against %s, namespace %s? "+
			"The request was not confirmed: it may still reach the cursor when a worker starts, or be dropped; run the command again then, or wait longer with --timeout",
		name, id, timeout, queue, polling, p.Name, a.Process.TemporalAddress, a.Process.TemporalNamespace)}
}

// parseTime reads a flag time: RFC3339, or a negative duration relative to
// now ("-6h", "-2d", "-1d12h").
func parseTime(flag, v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	if d, err := tuning.ParseDays(v); err == nil && d <= 0 {
		return now.Add(d).UTC(), nil
	}
	return time.Time{}, Usage(fmt.Errorf("--%s %q: want an RFC3339 time (2026-11-20T00:00:00Z) or a negative duration (-6h, -2d)", flag, clipText(v, 60)))
}
