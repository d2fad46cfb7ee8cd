package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/api"
)

// Delivery in lanes (max_in_flight > 1).
//
// The next range of the feed after the acknowledged seq is listed split
// into up to max_in_flight lanes by order (activities.LaneOf): every
// change of one order in the range is in one lane, each lane in seq
// order. The lanes are delivered at once, one activity each. The
// acknowledged seq moves to the range's end only when every lane is
// confirmed (or its refused changes set aside); a lane that fails is
// retried alone, with the same batch id, while the confirmed lanes are not
// sent again; the next range is listed only after that. So:
//
//   - one order's changes reach the destination for the first time in
//     seq order: within a range they travel in one batch, in order, and a
//     later range waits for every lane of this one;
//   - a redelivery repeats changes the receiver may have had, in the same
//     order, before anything newer of those orders is sent: a lane retried
//     after a failure the receiver may have half-processed (same batch
//     id); or the range again, listed anew from the same acknowledged seq,
//     after a worker lost a workflow task of local activities or when its
//     changes were no longer all there (the same changes first, with the
//     same per-change ids, but the batch boundaries and ids may differ).
//     After dropping what it has seen by id (per change: its seq), a
//     receiver sees each order's changes in order;
//   - lanes of one range land in any order relative to each other, which
//     only reorders different orders.
//
// The range and its unconfirmed lanes (seqs only) are in the state
// (Pending), so continue-as-new and a failed lane keep them.
//
// Round trips: while a backlog waits (the last range filled a lane), the
// listing (without a long poll) and the lanes (one attempt each) run as
// local activities, so a range costs the server one workflow task. A lane
// whose local attempt fails goes again at once as a regular activity with
// the destination's retries, and the range stays on regular activities
// until it is confirmed; only a regular failure counts for the breaker.

// stepLanes lists the next range when none is pending, then delivers the
// pending range's lanes once.
func (d *delivery) stepLanes(ctx workflow.Context) error {
	if d.st.Pending == nil {
		lanes := d.dest.MaxInFlight
		req := api.NextBatchRequest{Destination: d.dest.Name, After: d.st.Acked, Limit: d.dest.BatchSize, Wait: deliveryLongPoll,
			Resume: d.resume, Lanes: lanes, OldestSetAside: d.oldestSetAside(ctx)}
		var next api.NextBatchResult
		if d.backlog {
			// The last range was cut by a full lane: more is waiting, so
			// list without waiting, in this workflow task (a local
			// activity), instead of a round trip through the server.
			req.Wait = 0
			if err := workflow.ExecuteLocalActivity(d.localFeedActivityContext(ctx), acts.NextBatch, req).Get(ctx, &next); err != nil {
				d.backlog = false // list the regular way, with its retries
				return nil
			}
		} else {
			if err := workflow.ExecuteActivity(d.feedActivityContext(ctx), acts.NextBatch, req).Get(ctx, &next); err != nil {
				return fmt.Errorf("list the next range after %d: %w", d.st.Acked, err)
			}
		}
		if d.resume {
			d.resume, d.st.Acked = false, max(d.st.Acked, next.After)
		}
		if next.After != d.st.Acked || next.To <= next.After || len(next.Lanes) == 0 {
			d.backlog = false
			return nil // nothing yet (or listed from a seq since passed): list again
		}
		d.st.Pending = &api.PendingRange{SeqRange: api.SeqRange{After: next.After, To: next.To}, Lanes: lanes, Left: next.Lanes}
		d.backlog = false
		for _, l := range next.Lanes {
			d.backlog = d.backlog || len(l.Seqs) >= d.dest.BatchSize
		}
	}
	d.now = workflow.Now(ctx)
	if _, _, ok := d.blocked(); ok {
		return nil // paused (or a window closed) during the long poll: the range waits
	}
	return d.deliverPending(ctx)
}

// deliverPending delivers every lane left of the pending range at once and
// settles each: confirmed lanes leave, refused ones are delivered change by
// change, failed ones stay for the next turn.
func (d *delivery) deliverPending(ctx workflow.Context) error {
	p := d.st.Pending
	futures := make([]workflow.Future, len(p.Left))
	// While a backlog waits, the lanes run as local activities, one
	// attempt each: a range then costs the server one workflow task, not a
	// task per lane (B8 in docs/performance.md). Otherwise, and once a
	// local attempt failed, regular activities, which the server retries
	// (the destination's retries) and shows.
	local := d.backlog && !d.regularOnly
	for i, lane := range p.Left {
		d.takeToken()
		req := api.DeliverRequest{Destination: d.dest.Name, SeqRange: p.SeqRange, Expect: len(lane.Seqs), Lane: lane.Lane, Lanes: p.Lanes, Seqs: lane.Seqs}
		if local {
			futures[i] = workflow.ExecuteLocalActivity(d.localDeliverActivityContext(ctx), acts.DeliverChanges, req)
		} else {
			futures[i] = workflow.ExecuteActivity(d.deliverActivityContext(ctx), acts.DeliverChanges, req)
		}
	}
	d.inFlight, d.inFlightLanes = &api.SeqRange{After: p.After, To: p.To}, len(futures)
	errs := make([]error, len(futures))
	for i, f := range futures {
		errs[i] = f.Get(ctx, nil)
	}
	d.inFlight, d.inFlightLanes = nil, 0

	var left []api.LaneBatch
	var failure error
	gone := false
	for i, lane := range p.Left {
		d.batchesThisRun++
		err := errs[i]
		switch {
		case local && err != nil && !isRefused(err) && !isGone(err):
			// Not a failure yet: the lane goes again at once as a regular
			// activity, with the destination's retries.
			d.regularOnly = true
			left = append(left, lane)
			continue
		case err == nil:
			d.laneDelivered(len(lane.Seqs))
			continue
		case isRefused(err) && len(lane.Seqs) == 1:
			d.poison(ctx, lane.Seqs[0], err)
			continue
		case isRefused(err):
			d.st.Counts.Bisected++
			rest, berr := d.bisectLane(ctx, lane.Seqs)
			if len(rest) == 0 {
				continue
			}
			lane.Seqs, err = rest, berr
		}
		gone = gone || isGone(err)
		failure = err
		left = append(left, lane)
	}
	switch {
	case len(left) == 0:
		d.st.Acked, d.st.Pending, d.regularOnly = p.To, nil, false
		return nil
	case failure == nil:
		p.Left = left // only local attempts failed
		return nil
	case gone:
		// The range no longer holds what it was listed with: list it
		// again. Lanes confirmed already are sent again (duplicates only).
		d.st.Pending = nil
	default:
		p.Left = left
	}
	return d.failed(ctx, failure)
}

// bisectLane delivers a refused lane one change at a time, in order,
// setting aside the changes refused alone. On another failure it stops and
// returns the changes not yet settled, to be retried as the lane.
func (d *delivery) bisectLane(ctx workflow.Context, seqs []int64) ([]int64, error) {
	for i, seq := range seqs {
		err := d.deliver(ctx, seq-1, seq, 1)
		switch {
		case err == nil:
			d.laneDelivered(1)
		case isRefused(err):
			d.poison(ctx, seq, err)
		default:
			return seqs[i:], err
		}
	}
	return nil, nil
}

// laneDelivered counts a confirmed lane batch; the acknowledged seq moves
// only when the whole range is confirmed.
func (d *delivery) laneDelivered(n int) {
	d.st.Counts.Batches++
	d.st.Counts.Changes += int64(n)
	d.st.ConsecutiveFailures = 0
}

// localFeedActivityContext runs a listing that does not wait as a local
// activity; failures fall back to the regular, long-polling listing.
func (d *delivery) localFeedActivityContext(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumAttempts: 1},
	})
}

// localDeliverActivityContext delivers a lane in a local activity, one
// attempt with the destination's timeout: a failed lane is retried as a
// regular activity (deliverPending).
func (d *delivery) localDeliverActivityContext(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: d.dest.Timeout.D() + 5*time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}
