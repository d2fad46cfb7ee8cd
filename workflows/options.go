package workflows

import (
	"github.com/ordersync/ordersync/api"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/internal/fairness"
)

// acts is how workflows name activities: method values on a nil pointer.
var acts *activities.Activities

// pageActivityContext mirrors the platform's retry settings: retry_interval
// is the first wait, retry_backoff grows it (the growing interval), retries
// limits the attempts, timeout bounds each attempt.
func pageActivityContext(ctx workflow.Context, p api.Settings) workflow.Context {
	return workflow.WithActivityOptions(ctx, pageActivityOptions(p))
}

func pageActivityOptions(p api.Settings) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		TaskQueue:           p.TaskQueue,
		Priority:            fairness.Priority(p.Name),
		StartToCloseTimeout: p.Timeout.D(),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        p.RetryInterval.D(),
			BackoffCoefficient:     p.RetryBackoff,
			MaximumInterval:        p.MaxRetryInterval.D(),
			MaximumAttempts:        int32(p.Retries + 1),
			NonRetryableErrorTypes: []string{activities.ErrPermanent},
		},
	}
}

// inlinePageActivityContext is for a page a cursor fetches itself (an
// inline live window): one attempt; any retry is the handed-over slice's.
func inlinePageActivityContext(ctx workflow.Context, p api.Settings) workflow.Context {
	opts := pageActivityOptions(p)
	opts.RetryPolicy.MaximumAttempts = 1
	return workflow.WithActivityOptions(ctx, opts)
}

// windowActivityContext is for a FetchWindow activity of up to pages
// pages: one attempt (a failed page is handed over, not retried here),
// each page bounded by the platform's timeout inside the activity.
func windowActivityContext(ctx workflow.Context, p api.Settings, pages int) workflow.Context {
	opts := pageActivityOptions(p)
	opts.StartToCloseTimeout = time.Duration(pages)*p.Timeout.D() + time.Minute
	opts.RetryPolicy.MaximumAttempts = 1
	return workflow.WithActivityOptions(ctx, opts)
}

// localPageActivityContext is for a page's first attempt, run as a local
// activity: one attempt bounded by the platform's timeout; retries are
// fetchPageLocalFirst's business.
func localPageActivityContext(ctx workflow.Context, p api.Settings) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: p.Timeout.D(),
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// pageRetryActivityContext is for the retries after a failed local first
// attempt: retries attempts more, continuing the back-off where the first
// wait (retry_interval) left it, so the waits are those of one activity
// with the platform's retry policy.
func pageRetryActivityContext(ctx workflow.Context, p api.Settings) workflow.Context {
	opts := pageActivityOptions(p)
	rp := opts.RetryPolicy
	rp.InitialInterval = time.Duration(float64(rp.InitialInterval) * rp.BackoffCoefficient)
	if rp.MaximumInterval > 0 {
		rp.InitialInterval = min(rp.InitialInterval, rp.MaximumInterval)
	}
	rp.MaximumAttempts = int32(p.Retries)
	return workflow.WithActivityOptions(ctx, opts)
}

// bookkeepingActivityContext is for recording dead letters and alerts: they
// must eventually succeed, so they retry without limit.
func bookkeepingActivityContext(ctx workflow.Context, p api.Settings) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           p.TaskQueue,
		Priority:            fairness.Priority(p.Name),
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})
}
