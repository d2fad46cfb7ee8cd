package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/config"
)

// acts is how workflows name activities: method values on a nil pointer.
var acts *activities.Activities

// pageActivityContext mirrors the platform's retry settings: retry_interval
// is the first wait, retry_backoff grows it (the growing interval), retries
// limits the attempts, timeout bounds each attempt.
func pageActivityContext(ctx workflow.Context, p config.Platform) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           p.TaskQueue,
		StartToCloseTimeout: p.Timeout.D(),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        p.RetryInterval.D(),
			BackoffCoefficient:     p.RetryBackoff,
			MaximumInterval:        p.MaxRetryInterval.D(),
			MaximumAttempts:        int32(p.Retries + 1),
			NonRetryableErrorTypes: []string{activities.ErrPermanent},
		},
	})
}

// bookkeepingActivityContext is for recording dead letters and alerts: they
// must eventually succeed, so they retry without limit.
func bookkeepingActivityContext(ctx workflow.Context, p config.Platform) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           p.TaskQueue,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})
}
