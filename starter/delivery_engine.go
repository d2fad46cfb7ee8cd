package starter

import (
	"context"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
)

// Engine implements accounts.DeliveryEngine too.
var _ accounts.DeliveryEngine = Engine{}

// DeliveryStopWait is how long StopDelivery waits for a cancelled Delivery
// to end before it terminates it: a served Delivery ends within a
// workflow task of the request, so only one whose task queue no worker
// serves waits this long.
const DeliveryStopWait = 15 * time.Second

// StartDelivery implements accounts.DeliveryEngine: the Delivery is
// started with d (read at revision), or, when it runs, handed d with its
// `config` signal so it delivers with the registry's settings.
func (e Engine) StartDelivery(ctx context.Context, d config.Destination, revision int64) error {
	r, err := EnsureDeliveryAt(ctx, e.Client, d, revision)
	if err != nil {
		return err
	}
	if r.Started {
		return nil
	}
	return e.ReconfigureDelivery(ctx, d, revision)
}

// ReconfigureDelivery implements accounts.DeliveryEngine. A signal, as for
// cursors: it is durable once the server takes it, so a Delivery whose
// queue has no worker right now still gets it. The workflow checks it
// (name, validation) as it checks the update of `deliveries` commands.
//
// A new task queue cannot be signalled: the workflow's own tasks stay on
// the queue it was started on, which workers started later no longer
// poll once no destination uses it. Such a Delivery is ended (as
// StopDelivery does) and started again on the new queue; the new run
// resumes after the store's record of the destination's acknowledgement,
// which stays below its oldest set-aside change, so nothing is skipped.
func (e Engine) ReconfigureDelivery(ctx context.Context, d config.Destination, revision int64) error {
	id := api.DeliveryWorkflowID(d.Name)
	info, err := e.runningExecution(ctx, id)
	if err != nil || info == nil {
		return err
	}
	if q := info.GetTaskQueue(); q != "" && q != d.TaskQueue {
		if err := e.StopDelivery(ctx, d.Name); err != nil {
			return fmt.Errorf("move %s from task queue %s to %s: %w", id, q, d.TaskQueue, err)
		}
		if _, err := EnsureDeliveryAt(ctx, e.Client, d, revision); err != nil {
			return fmt.Errorf("move %s from task queue %s to %s: %w", id, q, d.TaskQueue, err)
		}
		return nil
	}
	return e.signal(ctx, id, api.SignalDeliveryConfig, destinationAt(d, revision))
}

// StopDelivery implements accounts.DeliveryEngine. It cancels the
// Delivery rather than terminating it: a cancellation reaches the
// workflow, which ends as cancelled at its next step, and its activities,
// whose batch in flight stops at the next heartbeat; the closed run keeps
// its acknowledged seq, counts and poison list for a status query, and the
// feed keeps every change (the caller releases the consumer row only once
// this returns). It waits until the run has ended, so nothing of it
// acknowledges the feed afterwards, and terminates it only when it has not
// ended DeliveryStopWait after the request (no worker serves its queue).
// A cancellation that meets a continue-as-new is sent to the new run.
func (e Engine) StopDelivery(ctx context.Context, name string) error {
	id := api.DeliveryWorkflowID(name)
	cancelled := ""
	deadline := time.Now().Add(DeliveryStopWait)
	for {
		info, err := e.runningExecution(ctx, id)
		if err != nil || info == nil {
			return err
		}
		run := info.GetExecution().GetRunId()
		if run != cancelled {
			if err := e.Client.CancelWorkflow(ctx, id, run); err != nil && !isNotFound(err) {
				return fmt.Errorf("cancel %s: %w", id, err)
			}
			cancelled = run
		}
		if time.Now().After(deadline) {
			err := e.Client.TerminateWorkflow(ctx, id, run,
				fmt.Sprintf("destination removed; its Delivery did not end within %s of its cancellation (no worker serves its task queue %s?)",
					DeliveryStopWait, info.GetTaskQueue()))
			if err != nil && !isNotFound(err) {
				return fmt.Errorf("terminate %s: %w", id, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to end: %w", id, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runningExecution describes workflow id's latest run: nil (and no error)
// when there is none or it is not running, which both callers take as
// nothing to do.
func (e Engine) runningExecution(ctx context.Context, id string) (*workflowpb.WorkflowExecutionInfo, error) {
	desc, err := e.Client.DescribeWorkflowExecution(ctx, id, "")
	switch {
	case isNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("describe %s: %w", id, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	if info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return nil, nil
	}
	return info, nil
}
