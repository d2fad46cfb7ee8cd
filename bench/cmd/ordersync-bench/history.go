package main

import (
	"context"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/activities"
)

// historyStats are read from the event histories of every workflow in a
// namespace: how long each workflow task was held, and how page attempts
// ended.
type historyStats struct {
	workflows     int
	wft           []float64 // WorkflowTaskStarted -> Completed/Failed, seconds, sorted
	retries       int       // activity attempts beyond the first
	slotWaitTasks int       // activity tasks that ended RequestSlotWait
	slotWaitLocal int       // local attempts (markers) that ended RequestSlotWait
	otherFailures map[string]int
	timers        int
}

func (h *historyStats) wftMax() float64 {
	if len(h.wft) == 0 {
		return 0
	}
	return h.wft[len(h.wft)-1]
}

func (h *historyStats) wftQuantile(q float64) float64 { return quantile(h.wft, q) }

func (h *historyStats) wftOver(d time.Duration) int {
	n := 0
	for _, s := range h.wft {
		if s > d.Seconds() {
			n++
		}
	}
	return n
}

// scanHistories reads every workflow's history in the namespace (open and
// closed, all runs).
func scanHistories(ctx context.Context, c client.Client, namespace string) (historyStats, error) {
	h := historyStats{otherFailures: map[string]int{}}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: namespace, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return h, err
		}
		for _, e := range resp.GetExecutions() {
			h.workflows++
			if err := h.add(ctx, c, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()); err != nil {
				return h, err
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	sort.Float64s(h.wft)
	if len(h.otherFailures) == 0 {
		h.otherFailures = nil
	}
	return h, nil
}

func (h *historyStats) add(ctx context.Context, c client.Client, id, runID string) error {
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var taskStarted time.Time
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return err
		}
		at := ev.GetEventTime().AsTime()
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			taskStarted = at
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			if !taskStarted.IsZero() {
				h.wft = append(h.wft, at.Sub(taskStarted).Seconds())
				taskStarted = time.Time{}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if ev.GetActivityTaskStartedEventAttributes().GetAttempt() > 1 {
				h.retries++
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			h.failure(ev.GetActivityTaskFailedEventAttributes().GetFailure(), &h.slotWaitTasks)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			h.otherFailures["timeout"]++
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			if f := ev.GetMarkerRecordedEventAttributes().GetFailure(); f != nil {
				h.failure(f, &h.slotWaitLocal)
			}
		case enumspb.EVENT_TYPE_TIMER_STARTED:
			h.timers++
		}
	}
	return nil
}

// failure counts a failed attempt: a slot wait, or a failure by its type.
func (h *historyStats) failure(f *failurepb.Failure, slotWaits *int) {
	for ; f != nil; f = f.GetCause() {
		if t := f.GetApplicationFailureInfo().GetType(); t != "" {
			if t == activities.ErrSlotWait {
				*slotWaits++
			} else {
				h.otherFailures[t]++
			}
			return
		}
	}
	h.otherFailures["other"]++
}
