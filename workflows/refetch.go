package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Refetch fetches one order now through its platform's get-one-order call
// (activities.RefetchOrder) and reports the outcome: `orders refetch`.
//
// Its ID is api.RefetchWorkflowID and it is started with the conflict
// policy USE_EXISTING, so requests for an order whose refetch is in flight
// join it (one call to the platform per order at a time). Its tasks run on
// the platform's task queue with the request's priority key (default 2,
// ahead of the backfill's 3) and the platform's fairness key, and its call
// books the platform's request slot like any page, so it passes queued
// backfill work but never the account's rate limit. It moves no watermark:
// it talks to no cursor. Waiting for the rate (a slot booked out, a 429)
// sleeps on a durable timer, within the platform's rate_limit_wait;
// failures retry with the platform's retry policy; a permanent error or
// exhausted retries fail the workflow with api.ErrRefetchFailed. History
// holds the id, outcome and counts only.
//
// A webhook event for the order starts it by signal-with-start with
// api.RefetchSignalAgain: a burst of events while it runs is one more
// fetch after the one in flight (which may have read the order before the
// latest change), not one fetch per event, and never none.
func Refetch(ctx workflow.Context, in api.RefetchInput) (api.RefetchResult, error) {
	if err := checkRefetchInput(&in); err != nil {
		return api.RefetchResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	r := &refetchRun{in: in, res: api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID}}
	return r.run(ctx)
}

func checkRefetchInput(in *api.RefetchInput) error {
	if in.Platform.Name == "" || in.Platform.TaskQueue == "" {
		return errors.New("refetch: the platform's name and task queue are required")
	}
	if err := api.CheckRefetchOrderID(in.OrderID); err != nil {
		return fmt.Errorf("refetch of %s: %w", in.Platform.Name, err)
	}
	if in.Priority == 0 {
		in.Priority = api.RefetchDefaultPriority
	}
	if in.Priority < api.RefetchMinPriority || in.Priority > api.RefetchMaxPriority {
		return fmt.Errorf("refetch of %s: priority %d is outside %d-%d", in.Platform.Name, in.Priority, api.RefetchMinPriority, api.RefetchMaxPriority)
	}
	return nil
}

// maxRefetchFetches bounds the fetches of one run that again signals ask
// for; a run with signals still pending past it continues as new (a fresh
// run fetches at once), so its history stays small.
const maxRefetchFetches = 10

// maxRefetchWaits bounds the rate waits of one refetch, beside
// rate_limit_wait, so its history stays small (about five events a wait).
const maxRefetchWaits = 200

type refetchRun struct {
	in  api.RefetchInput
	res api.RefetchResult
}

func (r *refetchRun) run(ctx workflow.Context) (api.RefetchResult, error) {
	again := workflow.GetSignalChannel(ctx, api.RefetchSignalAgain)
	for fetches := 1; ; fetches++ {
		out, err := r.fetch(ctx, again)
		if err != nil {
			return out, err
		}
		if fetches > 1 {
			out.Fetches = fetches
		}
		if !drainAgain(again) {
			return out, nil
		}
		// Asked only here, when a signal came during the fetch: histories
		// without one never record the marker.
		if workflow.GetVersion(ctx, versionRefetchAgain, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
			return out, nil
		}
		if fetches >= maxRefetchFetches {
			return out, workflow.NewContinueAsNewError(ctx, api.RefetchWorkflowType, r.in)
		}
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("fetching order %s of %s again: an event arrived during fetch %d", textclip.Value(r.in.OrderID), r.in.Platform.Name, fetches))
	}
}

// drainAgain takes every again signal received so far and says whether
// there was one.
func drainAgain(ch workflow.ReceiveChannel) bool {
	got := false
	for ch.ReceiveAsync(nil) {
		got = true
	}
	return got
}

// fetch runs one fetch of the order, waiting for the platform's rate as it
// must. Again signals received before each attempt are taken: that attempt
// reads the order after them.
func (r *refetchRun) fetch(ctx workflow.Context, again workflow.ReceiveChannel) (api.RefetchResult, error) {
	p := r.in.Platform
	opts := RefetchActivityOptions(p, r.in.Priority)
	maxAttempts := p.Retries + 1
	budget := p.RateLimitWaitOrDefault()
	var since time.Time
	used, waits := 0, 0
	in := activities.RefetchOrderInput{Platform: p, OrderID: r.in.OrderID}
	for {
		drainAgain(again)
		actx := workflow.WithActivityOptions(ctx, opts)
		if used > 0 {
			rp := *opts.RetryPolicy
			rp.MaximumAttempts = int32(max(1, maxAttempts-used))
			o := opts
			o.RetryPolicy = &rp
			actx = workflow.WithActivityOptions(ctx, o)
		}
		var out api.RefetchResult
		err := workflow.ExecuteActivity(actx, acts.RefetchOrder, in).Get(ctx, &out)
		if err == nil {
			out.Waits, out.Attempts = r.res.Waits, used
			return out, nil
		}
		d, counted, waiting := refetchWait(err)
		if !waiting {
			return r.res, r.failed(err)
		}
		now := workflow.Now(ctx)
		if waits == 0 {
			since = now
		}
		if waits >= maxRefetchWaits || now.Sub(since)+d > budget {
			return r.res, r.failed(fmt.Errorf("waited for the platform's rate %d time(s) over %s, within rate_limit_wait %s: %s",
				waits, now.Sub(since).Round(time.Second), budget, rootMessage(err)))
		}
		waits++
		r.res.Waits++
		used = min(used+counted, maxAttempts-1)
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("waiting %s for the rate of %s (wait %d)", d.Round(time.Millisecond), p.Name, r.res.Waits))
		if err := workflow.Sleep(ctx, d); err != nil {
			return r.res, err
		}
	}
}

// failed is the workflow's error: api.ErrRefetchFailed with the cause's
// message (already clipped by the activity), never retried by a caller's
// retry policy.
func (r *refetchRun) failed(cause error) error {
	var canceled *temporal.CanceledError
	if errors.As(cause, &canceled) {
		return cause
	}
	return temporal.NewNonRetryableApplicationError(textclip.Message(fmt.Sprintf("refetch order %s of %s: %s",
		textclip.Value(r.in.OrderID), r.in.Platform.Name, rootMessage(cause))), api.ErrRefetchFailed, nil)
}

// refetchWait says whether an attempt only waited for the platform's rate
// (its request slots booked out, or a 429/THROTTLED answer), how long to
// sleep, and how many attempts failed for other reasons before it.
func refetchWait(err error) (time.Duration, int, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		return 0, 0, false
	}
	attempt := 1
	switch app.Type() {
	case activities.ErrSlotWait:
		var a activities.SlotWaitAnswer
		if app.HasDetails() && app.Details(&a) == nil && a.Attempt > 0 {
			attempt = a.Attempt
		}
	case activities.ErrRateLimited:
		var a activities.RateLimitAnswer
		if app.HasDetails() && app.Details(&a) == nil && a.Attempt > 0 {
			attempt = a.Attempt
		}
	default:
		return 0, 0, false
	}
	d := app.NextRetryDelay()
	if d <= 0 {
		d = time.Second
	}
	return d, attempt - 1, true
}

// RefetchActivityOptions are the refetch activity's: on the platform's
// task queue with the refetch's priority key and the platform's fairness
// key, each attempt bounded by the platform's timeout, retried by its
// retry settings (as a page's activity; permanent errors are not).
func RefetchActivityOptions(p api.Settings, priority int) workflow.ActivityOptions {
	opts := pageActivityOptions(p)
	opts.Priority = RefetchPriority(p.Name, priority)
	return opts
}

// RefetchPriority is the Temporal priority of a refetch's workflow and
// activity tasks: its priority key, with the platform's fairness key so
// the accounts of a queue stay fair among themselves.
func RefetchPriority(platform string, priority int) temporal.Priority {
	pr := fairness.Priority(platform)
	pr.PriorityKey = priority
	return pr
}
