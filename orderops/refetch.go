package orderops

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/workflows"
)

// MaxRefetchIDs bounds the orders of one refetch request.
const MaxRefetchIDs = 100

// RefetchRequest asks for orders of one platform now.
type RefetchRequest struct {
	Platform string
	IDs      []string
	// Priority is the Temporal priority key (1 first .. 5 last; 0:
	// api.RefetchDefaultPriority, ahead of backfill's 3).
	Priority int
	// Again starts each refetch by signal-with-start of
	// api.RefetchSignalAgain (webhook events): a refetch of the order in
	// flight is joined and fetches once more when its fetch ends, since
	// that fetch may have read the order before the change the event
	// reports. Without it (orders refetch) a refetch in flight is joined
	// as it is.
	Again bool
}

// Refetch is one order's refetch: its workflow and, once known, its
// result or why it failed.
type Refetch struct {
	OrderID    string `json:"order_id"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Outcome is api.RefetchCreated, ... once the workflow ended well;
	// "running" before; "failed" with Error when it failed.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	Waits   int    `json:"waits,omitempty"`
	run     client.WorkflowRun
}

// Outcomes besides the api.Refetch* ones.
const (
	Running = "running"
	Failed  = "failed"
)

// StartRefetch starts (or joins) the Refetch workflow of every order of
// req: ID api.RefetchWorkflowID, conflict policy USE_EXISTING (a refetch of
// an order in flight is joined, not repeated), on the platform's task
// queue with req's priority and its fairness key. The same id twice in a
// request is one refetch. It validates everything before starting
// anything.
func (s *Service) StartRefetch(ctx context.Context, req RefetchRequest) ([]Refetch, error) {
	if s.Temporal == nil {
		return nil, errors.New("refetch: no Temporal connection")
	}
	prio := req.Priority
	if prio == 0 {
		prio = api.RefetchDefaultPriority
	}
	if prio < api.RefetchMinPriority || prio > api.RefetchMaxPriority {
		return nil, fmt.Errorf("%w: priority %d: want %d (first) to %d (last); backfill runs at %d",
			ErrBadRequest, req.Priority, api.RefetchMinPriority, api.RefetchMaxPriority, api.BackfillPriority)
	}
	var ids []string
	seen := map[string]bool{}
	for _, id := range req.IDs {
		if err := api.CheckRefetchOrderID(id); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		return nil, fmt.Errorf("%w: no order ids", ErrBadRequest)
	case len(ids) > MaxRefetchIDs:
		return nil, fmt.Errorf("%w: %d order ids, at most %d in one request", ErrBadRequest, len(ids), MaxRefetchIDs)
	}
	p, rev, err := s.platform(ctx, req.Platform)
	if err != nil {
		return nil, err
	}
	settings := p.Settings()
	settings.Revision = rev
	out := make([]Refetch, 0, len(ids))
	for _, id := range ids {
		wid := api.RefetchWorkflowID(p.Name, id)
		opts := client.StartWorkflowOptions{
			ID:                       wid,
			TaskQueue:                p.TaskQueue,
			Priority:                 workflows.RefetchPriority(p.Name, prio),
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			TypedSearchAttributes:    temporal.NewSearchAttributes(searchattr.Platform.ValueSet(p.Name)),
		}
		in := api.RefetchInput{Platform: settings, OrderID: id, Priority: prio}
		var run client.WorkflowRun
		if req.Again {
			run, err = s.Temporal.SignalWithStartWorkflow(ctx, wid, api.RefetchSignalAgain, nil, opts, api.RefetchWorkflowType, in)
		} else {
			run, err = s.Temporal.ExecuteWorkflow(ctx, opts, api.RefetchWorkflowType, in)
		}
		if err != nil {
			return out, fmt.Errorf("start the refetch of order %s of %s: %w", textclip.Value(id), p.Name, err)
		}
		out = append(out, Refetch{OrderID: id, WorkflowID: wid, RunID: run.GetRunID(), Outcome: Running, run: run})
	}
	return out, nil
}

// Wait waits for each refetch's result until ctx ends; those still
// running then keep Outcome Running. A failure to read a result (the
// connection, a long poll cut short) leaves the refetch Running with the
// reason in Error: only the workflow's own end is an outcome.
func (s *Service) Wait(ctx context.Context, rs []Refetch) {
	for i := range rs {
		r := &rs[i]
		if r.run == nil {
			r.run = s.Temporal.GetWorkflow(ctx, r.WorkflowID, r.RunID)
		}
		var res api.RefetchResult
		err := r.run.Get(ctx, &res)
		switch {
		case err == nil:
			r.Outcome, r.Waits, r.Error = res.Outcome, res.Waits, res.Reason
		case workflowEnded(err):
			r.Outcome, r.Error = Failed, textclip.Message(rootMessage(err))
		case ctx.Err() != nil:
			return
		default:
			r.Error = textclip.Message("waiting for the result: " + err.Error())
		}
	}
}

// workflowEnded says whether err is a workflow's own end (failed,
// terminated, timed out, cancelled), not a failure to wait for it.
func workflowEnded(err error) bool {
	var app *temporal.ApplicationError
	var term *temporal.TerminatedError
	var timeout *temporal.TimeoutError
	var canceled *temporal.CanceledError
	return errors.As(err, &app) || errors.As(err, &term) || errors.As(err, &timeout) || errors.As(err, &canceled)
}

// rootMessage is the innermost message of a workflow's failure (the
// refetch's own, not the SDK's wrapping).
func rootMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
