package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
)

// Alerts across continue-as-new.
//
// SendAlert retries without limit (an alert must not be lost), so while the
// alert webhook is down an alert stays in flight. Runs before
// versionAlertHandover waited for every alert in flight before they
// continued as new, so a dead webhook stopped a cursor's fetching and a
// destination's delivery at their next continue-as-new: an alerting outage
// became an order-flow outage.
//
// Decision: continue-as-new does not wait for alerts. The alerts still in
// flight are handed to the next run: their activities are cancelled (the
// history shows which), the alerts travel in the input
// (api.AlertHandover) and the next run sends them again before anything
// else. No alert is lost (up to the bound below), and none waits longer
// than it would have. A
// receiver may see an alert twice (the cancelled attempt may have posted
// it); its Key, sent as Idempotency-Key, lets it drop the repeat. At most
// maxCarriedAlerts travel, the newest; the older ones are logged and
// counted (status: alerts_dropped), so a long outage cannot grow the input
// without bound. Rejected: a limit on SendAlert's retries (an outage longer
// than the limit loses alerts); a separate alert workflow (one more
// long-running workflow to run, version and continue as new, with the
// same question at its own continue-as-new).

// maxCarriedAlerts bounds the alerts one run hands to the next; each is
// about a kilobyte at most (its message is clipped to
// maxCarriedAlertMessage), so the input grows by 60 KB at most.
const maxCarriedAlerts = 50

// maxCarriedAlertMessage clips a carried alert's message: it may quote a
// platform's or destination's error.
const maxCarriedAlertMessage = 1000

// alertSender sends a workflow's alerts without blocking it and knows
// which are still in flight, to hand them over at continue-as-new.
type alertSender struct {
	inFlight []*alertCall // in the order sent
	// dropped counts alerts dropped at handovers over the workflow's life.
	dropped int64
	// handover is this run's answer to versionAlertHandover: 0 not asked
	// yet, 1 hand alerts over, -1 wait for them (a history from before).
	handover int8
}

type alertCall struct {
	alert      api.Alert
	future     workflow.Future
	cancel     workflow.CancelFunc
	handedOver bool
}

// resume takes what the previous run handed over and sends its alerts
// again, oldest first. Sending them is versioned by the input: a run
// continued by code without the handover carries none.
func (s *alertSender) resume(ctx, activityCtx workflow.Context, h *api.AlertHandover, done func()) {
	if h == nil {
		return
	}
	// An input not written by a handover is held to the same bounds.
	s.dropped = max(h.Dropped, 0)
	alerts := h.Alerts
	if n := len(alerts) - maxCarriedAlerts; n > 0 {
		s.drop(ctx, alerts[:n])
		alerts = alerts[n:]
	}
	for _, a := range alerts {
		a.Message = clip(a.Message, maxCarriedAlertMessage)
		s.send(ctx, activityCtx, a, done)
	}
}

// drop logs and counts alerts given up on.
func (s *alertSender) drop(ctx workflow.Context, alerts []api.Alert) {
	logger := workflow.GetLogger(ctx)
	for _, a := range alerts {
		logger.Error("alert dropped: more alerts wait for the webhook than a run hands over",
			"key", a.Key, "kind", a.Kind, "limit", maxCarriedAlerts)
	}
	s.dropped += int64(len(alerts))
}

// send starts SendAlert with activityCtx's options; done (if set) runs
// once it has ended, delivered or not.
func (s *alertSender) send(ctx, activityCtx workflow.Context, a api.Alert, done func()) {
	activityCtx, cancel := workflow.WithCancel(activityCtx)
	call := &alertCall{alert: a, cancel: cancel}
	s.inFlight = append(s.inFlight, call)
	call.future = workflow.ExecuteActivity(activityCtx, acts.SendAlert, a)
	workflow.Go(ctx, func(ctx workflow.Context) {
		err := call.future.Get(ctx, nil)
		s.inFlight = slices.DeleteFunc(s.inFlight, func(c *alertCall) bool { return c == call })
		if err != nil && !call.handedOver {
			workflow.GetLogger(ctx).Error("alert not delivered", "key", a.Key, "error", err)
		}
		if done != nil {
			done()
		}
	})
}

// pending is how many alerts are in flight.
func (s *alertSender) pending() int { return len(s.inFlight) }

// handsOver says whether this run hands its alerts in flight over at
// continue-as-new instead of waiting for them. It asks
// versionAlertHandover, so call it only with alerts in flight: where the
// new rule decides differently.
func (s *alertSender) handsOver(ctx workflow.Context) bool {
	if s.handover == 0 {
		s.handover = -1
		if workflow.GetVersion(ctx, versionAlertHandover, workflow.DefaultVersion, 1) >= 1 {
			s.handover = 1
		}
	}
	return s.handover > 0
}

// mayContinue says whether the alerts let the run continue as new now:
// none in flight, or they will be handed over.
func (s *alertSender) mayContinue(ctx workflow.Context) bool {
	return s.pending() == 0 || s.handsOver(ctx)
}

// settled is mayContinue for a wait condition, which must not ask a
// version: true when none is in flight or the run hands them over, false
// while the handover is not decided (ask mayContinue first).
func (s *alertSender) settled() bool { return s.pending() == 0 || s.handover > 0 }

// undecided says whether alerts are in flight and the handover has not
// been asked yet: a wait should end so the caller can ask.
func (s *alertSender) undecided() bool { return s.pending() > 0 && s.handover == 0 }

// handOver cancels the alerts in flight and returns them, with the drop
// count, for the next run's input (nil when there is nothing to hand
// over, as for every run before versionAlertHandover, which continued as
// new only once none was in flight).
func (s *alertSender) handOver(ctx workflow.Context) *api.AlertHandover {
	var carried []api.Alert
	if s.pending() > 0 && s.handsOver(ctx) {
		for _, c := range s.inFlight {
			if c.future.IsReady() {
				continue // ended (delivered) in this task; its goroutine has not run yet
			}
			c.handedOver = true
			c.cancel()
			a := c.alert
			a.Message = clip(a.Message, maxCarriedAlertMessage)
			carried = append(carried, a)
		}
		s.inFlight = nil
	}
	if n := len(carried) - maxCarriedAlerts; n > 0 {
		s.drop(ctx, carried[:n])
		carried = carried[n:]
	}
	if len(carried) == 0 && s.dropped == 0 {
		return nil
	}
	return &api.AlertHandover{Alerts: carried, Dropped: s.dropped}
}
