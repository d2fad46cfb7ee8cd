package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
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

// updateCursor runs an update on a cursor and waits for its answer; a
// validator's rejection comes back as a usage error.
func updateCursor(ctx context.Context, c client.Client, platform, name string, result any, args ...any) error {
	id := api.CursorWorkflowID(platform)
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   name,
		Args:         args,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		if isNotFound(err) {
			return errNotRunning(id, platform)
		}
		return fmt.Errorf("%s %s: %w", name, id, err)
	}
	if err := h.Get(ctx, result); err != nil {
		return Usage(fmt.Errorf("%s %s rejected: %w", name, id, err))
	}
	return nil
}

// parseTime reads a flag time: RFC3339, or a negative duration relative to
// now ("-6h").
func parseTime(flag, v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d <= 0 {
		return now.Add(d).UTC(), nil
	}
	return time.Time{}, Usage(fmt.Errorf("--%s %q: want an RFC3339 time (2026-11-20T00:00:00Z) or a negative duration (-6h)", flag, v))
}
