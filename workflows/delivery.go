package workflows

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/textclip"
)

// DefaultMaxBatchesPerRun caps one Delivery run's history when the input
// does not say otherwise; the workflow then continues as new.
const DefaultMaxBatchesPerRun = 500

// deliveryLongPoll is how long one NextBatch activity waits for a change on
// an idle feed: an idle destination writes a handful of events a minute.
const deliveryLongPoll = 20 * time.Second

// deliveryPollHeartbeat is the long poll's heartbeat timeout: it heartbeats
// every second (activities.NextBatch), the SDK sends one per 80% of this,
// so a busy worker keeps a second of slack and a dead one is noticed in 5s.
const deliveryPollHeartbeat = 5 * time.Second

// deliverHeartbeat is DeliverChanges' heartbeat timeout. It heartbeats
// every second while it reads and sends, and the SDK sends one per 80% of
// this; a missed beat here costs more than a poll's (the batch is sent
// again and the retry counts against the destination's retries), so it
// keeps two seconds of slack, and a dead worker is noticed in 10s rather
// than after the destination's timeout plus 5s. Replay does not compare
// activity timeouts, so the value can change without a version.
const deliverHeartbeat = 10 * time.Second

// Delivery moves one destination along the change feed: it lists the next
// batch after its acknowledged seq (seqs only), has an activity read and
// deliver it, and moves the acknowledged seq only once the destination
// confirmed. Order data never enters its history.
func Delivery(ctx workflow.Context, in api.DeliveryInput) error {
	// The tuning only: the input carries no identity (settings by
	// reference). The starters check the whole destination before they
	// start it, so no Delivery was started with an identity only this
	// check would have refused (versions.go, "Destinations by reference").
	if ve := config.ValidateDestinationSettings(in.Destination); ve != nil {
		return temporal.NewNonRetryableApplicationError("invalid destination settings: "+ve.Error(), "InvalidInput", nil)
	}
	if in.Destination.MaxInFlight > 1 && !lanesAllowed(ctx) {
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("invalid destination settings: destination %q: field \"max_in_flight\": must be 1 for this run, got %d",
				in.Destination.Name, in.Destination.MaxInFlight), "InvalidInput", nil)
	}
	d, err := newDelivery(in)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "InvalidInput", nil)
	}
	return d.run(ctx)
}

type delivery struct {
	dest       api.DestinationSettings
	windows    config.Windows
	st         api.DeliveryState
	maxBatches int

	batchesThisRun int
	now            time.Time
	waiting        string
	waitUntil      time.Time
	inFlight       *api.SeqRange
	inFlightLanes  int
	woken          bool        // set by message handlers, so waits end early
	alerts         alertSender // alerts in flight (alerts.go)

	// backlog: the last range listed in lanes was cut by a full lane, so
	// the next listing need not wait and the lanes run as local
	// activities (delivery_lanes.go).
	backlog bool
	// regularOnly: a lane of the pending range failed as a local
	// activity; until the range is confirmed its lanes go as regular ones.
	regularOnly bool

	// resume is set until the first listing of a workflow started without
	// state: it continues after the store's record of the destination.
	resume bool
	// rate limit: a token bucket of batches, refilled from workflow time.
	tokens   float64
	tokensAt time.Time
	// carriedAlerts are the previous run's, sent again when the run starts.
	carriedAlerts *api.AlertHandover
}

// lanesAllowed says whether this run may deliver in lanes: every run since
// versionDeliveryLanes; a history from before refuses, as it did.
func lanesAllowed(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, versionDeliveryLanes, workflow.DefaultVersion, 1) >= 1
}

func newDelivery(in api.DeliveryInput) (*delivery, error) {
	ws, err := config.ParseWindows(in.Destination.Windows)
	if err != nil {
		return nil, err
	}
	d := &delivery{dest: in.Destination, windows: ws, maxBatches: in.MaxBatchesPerRun, tokens: float64(in.Destination.RateLimit.Burst),
		carriedAlerts: in.Alerts}
	if d.maxBatches <= 0 {
		d.maxBatches = DefaultMaxBatchesPerRun
	}
	if in.State != nil {
		d.st = *in.State
	} else {
		d.resume = true
	}
	d.st.Runs++
	return d, nil
}

func (d *delivery) run(ctx workflow.Context) error {
	if err := d.registerHandlers(ctx); err != nil {
		return err
	}
	d.alerts.resume(ctx, d.bookkeepingContext(ctx), d.carriedAlerts, nil)
	for {
		d.now = workflow.Now(ctx)
		if d.continueDue(ctx) {
			return d.continueAsNew(ctx)
		}
		if wait, until, ok := d.blocked(); ok {
			if err := d.sleep(ctx, wait, until); err != nil {
				return err
			}
			continue
		}
		if len(d.st.Retrying) > 0 {
			d.takeToken()
			seq := d.st.Retrying[0]
			d.st.Retrying = d.st.Retrying[1:]
			if err := d.retryPoison(ctx, seq); err != nil {
				return err
			}
			continue
		}
		if d.st.Pending != nil || d.dest.MaxInFlight > 1 {
			// Several batches in flight (delivery_lanes.go). Histories of
			// before it hold max_in_flight 1 only (the one value accepted
			// then) and no pending range, so they replay the path below.
			if err := d.stepLanes(ctx); err != nil {
				return err
			}
			continue
		}
		var next api.NextBatchResult
		err := workflow.ExecuteActivity(d.feedActivityContext(ctx), acts.NextBatch, api.NextBatchRequest{
			Destination: d.dest.Name, After: d.st.Acked, Limit: d.dest.BatchSize, Wait: deliveryLongPoll, Resume: d.resume,
			OldestSetAside: d.oldestSetAside(ctx)}).Get(ctx, &next)
		if err != nil {
			return fmt.Errorf("list the next batch after %d: %w", d.st.Acked, err)
		}
		if d.resume {
			d.resume, d.st.Acked = false, max(d.st.Acked, next.After)
		}
		d.now = workflow.Now(ctx)
		if _, _, ok := d.blocked(); ok || len(next.Seqs) == 0 {
			continue // paused (or a window closed) during the long poll: list again later
		}
		d.takeToken()
		if err := d.deliverBatch(ctx, next.Seqs); err != nil {
			return err
		}
	}
}

// blocked says whether delivery must wait now, why, and until when (zero:
// until a message arrives).
func (d *delivery) blocked() (string, time.Time, bool) {
	if why, until, ok := d.held(d.now); ok {
		return why, until, true
	}
	d.refill()
	return d.rateWait(d.now, d.tokens)
}

// held says whether the state or the work windows hold delivery at now.
func (d *delivery) held(now time.Time) (string, time.Time, bool) {
	switch {
	case d.st.BreakerOpen:
		return "breaker open", time.Time{}, true
	case d.st.Paused:
		return "paused", time.Time{}, true
	case len(d.windows) > 0 && !d.windows.OpenAt(now):
		return "outside work windows", d.windows.NextOpen(now), true
	}
	return "", time.Time{}, false
}

// rateWait says whether delivery waits for a rate token, holding tokens.
func (d *delivery) rateWait(now time.Time, tokens float64) (string, time.Time, bool) {
	if tokens < 1 {
		need := time.Duration((1 - tokens) / d.dest.RateLimit.RPS * float64(time.Second))
		return "rate limit", now.Add(max(need, time.Millisecond)), true
	}
	return "", time.Time{}, false
}

func (d *delivery) refill() { d.tokens, d.tokensAt = d.tokensNow(d.now), d.now }

// tokensNow is the rate tokens at now, refilled since the last refill;
// it changes nothing.
func (d *delivery) tokensNow(now time.Time) float64 {
	tokens := d.tokens
	if !d.tokensAt.IsZero() {
		tokens += now.Sub(d.tokensAt).Seconds() * d.dest.RateLimit.RPS
	}
	return min(tokens, float64(d.dest.RateLimit.Burst))
}

func (d *delivery) takeToken() { d.tokens-- }

// sleep waits until until (zero: no timer) or a message, whichever first.
func (d *delivery) sleep(ctx workflow.Context, why string, until time.Time) error {
	d.waiting, d.waitUntil, d.woken = why, until, false
	defer func() { d.waiting, d.waitUntil = "", time.Time{} }()
	wake := func() bool { return d.woken || d.continueDue(ctx) }
	if until.IsZero() {
		return workflow.Await(ctx, wake)
	}
	_, err := workflow.AwaitWithTimeout(ctx, until.Sub(d.now), wake)
	return err
}

// deliverBatch delivers (Acked, last seq]. A batch the destination refuses
// as a whole is delivered again one change at a time, so only the changes
// it refuses alone are set aside.
func (d *delivery) deliverBatch(ctx workflow.Context, seqs []int64) error {
	after, to := d.st.Acked, seqs[len(seqs)-1]
	err := d.deliver(ctx, after, to, len(seqs))
	switch {
	case err == nil:
		d.delivered(to, len(seqs))
		return nil
	case isRefused(err) && len(seqs) == 1:
		d.setAside(ctx, to, err)
		return nil
	case isRefused(err):
		d.st.Counts.Bisected++
		prev := after
		for _, seq := range seqs {
			err := d.deliver(ctx, prev, seq, 1)
			switch {
			case err == nil:
				d.delivered(seq, 1)
			case isRefused(err):
				d.setAside(ctx, seq, err)
			default:
				return d.failed(ctx, err)
			}
			prev = seq
		}
		return nil
	default:
		return d.failed(ctx, err)
	}
}

func (d *delivery) deliver(ctx workflow.Context, after, to int64, n int) error {
	d.inFlight = &api.SeqRange{After: after, To: to}
	defer func() { d.inFlight = nil }()
	var res api.DeliverResult
	return workflow.ExecuteActivity(d.deliverActivityContext(ctx), acts.DeliverChanges, api.DeliverRequest{
		Destination: d.dest.Name, SeqRange: api.SeqRange{After: after, To: to}, Expect: n}).Get(ctx, &res)
}

func (d *delivery) delivered(to int64, n int) {
	d.st.Acked = to
	d.st.Counts.Batches++
	d.st.Counts.Changes += int64(n)
	d.st.ConsecutiveFailures = 0
	d.batchesThisRun++
}

// failed records a batch that failed after all its retries; the breaker
// pauses delivery after breaker_failures of them in a row, otherwise the
// batch is tried again after a pause that grows with the failures.
func (d *delivery) failed(ctx workflow.Context, err error) error {
	d.st.ConsecutiveFailures++
	d.st.Counts.Failures++
	d.st.LastError = clipError(err)
	d.batchesThisRun++
	if d.dest.BreakerFailures > 0 && d.st.ConsecutiveFailures >= d.dest.BreakerFailures {
		d.st.BreakerOpen = true
		d.alert(ctx, api.AlertDeliveryBreaker, fmt.Sprintf("delivery to %s paused after %d failed batches in a row: %s",
			d.dest.Name, d.st.ConsecutiveFailures, d.st.LastError), fmt.Sprintf("%d", d.st.Counts.Failures))
		return nil
	}
	backoff := min(time.Duration(d.st.ConsecutiveFailures)*d.dest.RetryInterval.D(), time.Minute)
	d.now = workflow.Now(ctx) // the failed attempts took time
	return d.sleep(ctx, "retry backoff", d.now.Add(backoff))
}

// setAside puts a refused change on the poison list and moves past it.
func (d *delivery) setAside(ctx workflow.Context, seq int64, err error) {
	d.st.Acked = max(d.st.Acked, seq)
	d.poison(ctx, seq, err)
}

// poison puts a refused change on the poison list, where an operator
// retries or skips it, and alerts.
func (d *delivery) poison(ctx workflow.Context, seq int64, err error) {
	reason := refusalReason(err)
	// Lowest seq first, as the poison query promises; lanes settle out of
	// seq order.
	i, _ := slices.BinarySearchFunc(d.st.Poison, seq, func(p api.PoisonChange, seq int64) int { return cmp.Compare(p.Seq, seq) })
	d.st.Poison = slices.Insert(d.st.Poison, i, api.PoisonChange{Seq: seq, Reason: reason, At: workflow.Now(ctx)})
	d.st.Counts.Poisoned++
	d.st.ConsecutiveFailures = 0
	d.alert(ctx, api.AlertDeliveryPoison, fmt.Sprintf("%s refused change %d (%s); set aside, retry or skip it", d.dest.Name, seq, reason),
		fmt.Sprintf("%d", seq))
}

// retryPoison delivers one set-aside change again. It is older than what
// was delivered since, but it carries its order as stored now, so the
// receiver never goes back to an older version.
func (d *delivery) retryPoison(ctx workflow.Context, seq int64) error {
	i := d.poisonIndex(seq)
	if i < 0 {
		return nil // skipped meanwhile
	}
	err := d.deliver(ctx, seq-1, seq, 1)
	switch {
	case err == nil:
		d.st.Poison = append(d.st.Poison[:i], d.st.Poison[i+1:]...)
		d.st.Counts.Retried++
		d.st.Counts.Changes++
	case isRefused(err):
		d.st.Poison[i].Reason, d.st.Poison[i].At = refusalReason(err), workflow.Now(ctx)
	case isGone(err):
		d.st.Poison = append(d.st.Poison[:i], d.st.Poison[i+1:]...)
		d.st.LastError = fmt.Sprintf("change %d was compacted before its retry; dropped", seq)
		d.st.Counts.Skipped++
	default:
		d.st.LastError = clipError(err)
	}
	return nil
}

// oldestSetAside is the lowest seq on the poison list, which the store's
// record of the destination's acknowledgement stays below (0: none, or a
// run from before versionPoisonHold).
func (d *delivery) oldestSetAside(ctx workflow.Context) int64 {
	var oldest int64
	for _, p := range d.st.Poison {
		if p.Seq > 0 && (oldest == 0 || p.Seq < oldest) {
			oldest = p.Seq
		}
	}
	if oldest == 0 || workflow.GetVersion(ctx, versionPoisonHold, workflow.DefaultVersion, 1) < 1 {
		return 0
	}
	return oldest
}

func (d *delivery) poisonIndex(seq int64) int {
	for i, p := range d.st.Poison {
		if p.Seq == seq {
			return i
		}
	}
	return -1
}

// alert sends an alert without blocking delivery (alerts.go).
func (d *delivery) alert(ctx workflow.Context, kind, msg, key string) {
	a := api.Alert{Kind: kind, Message: msg, At: workflow.Now(ctx), Key: fmt.Sprintf("%s/%s/%s", kind, d.dest.Name, key)}
	d.alerts.send(ctx, d.bookkeepingContext(ctx), a, nil)
}

// continueDue is true once this run's history should end; the loop then
// drains messages and continues as new with the state.
func (d *delivery) continueDue(ctx workflow.Context) bool {
	return d.batchesThisRun >= d.maxBatches || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
}

// continueAsNew lets every message handler finish, applies the signals
// already delivered, and carries the state, and the alerts still in
// flight (alerts.go), to the next run. A history from before
// versionAlertHandover waits for its alerts instead.
func (d *delivery) continueAsNew(ctx workflow.Context) error {
	d.alerts.mayContinue(ctx) // decides the handover if alerts are in flight
	if err := workflow.Await(ctx, func() bool { return d.alerts.settled() && workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	d.drainSignals(ctx)
	st := d.st
	return workflow.NewContinueAsNewError(ctx, api.DeliveryWorkflowType,
		api.DeliveryInput{Destination: d.dest, State: &st, MaxBatchesPerRun: d.maxBatches, Alerts: d.alerts.handOver(ctx)})
}

func isRefused(err error) bool { return hasErrorType(err, activities.ErrDeliveryRefused) }

func isGone(err error) bool { return hasErrorType(err, activities.ErrChangesGone) }

func hasErrorType(err error, typ string) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == typ
}

// refusalReason is the destination's status from a refusal ("HTTP 422").
func refusalReason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return textclip.Value(appErr.Message())
	}
	return clipError(err)
}

// clipError is an error's text as kept in state and alerts
// (internal/textclip: a whole message).
func clipError(err error) string { return textclip.Message(err.Error()) }

// clip bounds a text to n bytes JSON-encoded (internal/textclip).
func clip(s string, n int) string { return textclip.Clip(s, n) }

// feedActivityContext is for the long-polling NextBatch. It heartbeats,
// so a worker killed mid-poll is noticed after deliveryPollHeartbeat and
// another worker polls again a second later, not after the start-to-close
// timeout (versionPollHeartbeat; runs of before keep polling without).
func (d *delivery) feedActivityContext(ctx workflow.Context) workflow.Context {
	opts := workflow.ActivityOptions{
		TaskQueue:           d.dest.TaskQueue,
		Priority:            fairness.Priority(d.dest.Name),
		StartToCloseTimeout: deliveryLongPoll + 30*time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	}
	if workflow.GetVersion(ctx, versionPollHeartbeat, workflow.DefaultVersion, 1) >= 1 {
		opts.HeartbeatTimeout = deliveryPollHeartbeat
	}
	return workflow.WithActivityOptions(ctx, opts)
}

// deliverActivityContext mirrors the destination's retries; a refusal is
// not retried (the workflow sets the change aside instead). The activity
// heartbeats while it sends, so a worker killed mid-batch is noticed after
// deliverHeartbeat and the batch is retried at once, not after the
// start-to-close timeout (versionDeliverHeartbeat; runs of before keep
// delivering without a heartbeat timeout).
func (d *delivery) deliverActivityContext(ctx workflow.Context) workflow.Context {
	opts := workflow.ActivityOptions{
		TaskQueue:           d.dest.TaskQueue,
		Priority:            fairness.Priority(d.dest.Name),
		StartToCloseTimeout: d.dest.Timeout.D() + 5*time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        d.dest.RetryInterval.D(),
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        int32(d.dest.Retries + 1),
			NonRetryableErrorTypes: []string{activities.ErrDeliveryRefused, activities.ErrChangesGone, activities.ErrPermanent},
		},
	}
	if workflow.GetVersion(ctx, versionDeliverHeartbeat, workflow.DefaultVersion, 1) >= 1 {
		opts.HeartbeatTimeout = deliverHeartbeat
	}
	return workflow.WithActivityOptions(ctx, opts)
}

func (d *delivery) bookkeepingContext(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           d.dest.TaskQueue,
		Priority:            fairness.Priority(d.dest.Name),
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
}
