package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

// ReconcileCountInput asks for one window's counts: the platform's and
// the store's. Platform is by reference, as for FetchPageInput.
type ReconcileCountInput struct {
	Platform api.Settings `json:"platform"`
	From     time.Time    `json:"from"`
	To       time.Time    `json:"to"`
	// Check is api.ReconcileFirst or api.ReconcileRecheck.
	Check string `json:"check"`
	// First, when set, is this check's count before the window's
	// reprocess: this is the recount after it.
	First *api.ReconcileResult `json:"first,omitempty"`
	// Force counts a recount without looking at the cursor: it waited
	// long enough for the reprocess.
	Force bool `json:"force,omitempty"`
}

// ReconcileCountResult is a window's counts and outcome, or why it was
// not counted now.
type ReconcileCountResult struct {
	// Gate, when set, is why nothing was counted: api.ReconcileWaitCursor
	// (the cursor has not passed the window, is paused or not running)
	// or api.ReconcileWaitReprocess (a reprocess of the window is queued
	// or running).
	Gate string `json:"gate,omitempty"`
	// Watermark is the cursor's watermark, when its status was read.
	Watermark time.Time `json:"watermark,omitzero"`
	// Unsupported: the platform has no count call (ErrCountUnsupported).
	Unsupported bool                `json:"unsupported,omitempty"`
	Result      api.ReconcileResult `json:"result"`
}

// ReconcileCount counts one window of a platform twice, on the platform
// (its count call, through the same rate limiter and points meter as a
// page) and in the store (current versions with updated_at in the
// window), and decides the check's outcome (api.ReconcileMatch, ...). A
// first count that finds the platform ahead says api.ReconcileReprocessing:
// the workflow has the cursor fetch the window again, then asks for the
// recount (First set), whose outcome is closed or open. Every outcome is
// kept in the store (reconcile report; reprocessing until its recount
// replaces it), and a decided one is counted in the metrics.
//
// Nothing is counted before the cursor passed the window: its status
// (query) must show a watermark at or after To, not paused; a recount
// waits while a reprocess of the window is queued or running. Waiting for
// the rate is ErrSlotWait or ErrRateLimited, as for RefetchOrder.
func (a *Activities) ReconcileCount(ctx context.Context, in ReconcileCountInput) (ReconcileCountResult, error) {
	res := ReconcileCountResult{Result: api.ReconcileResult{From: in.From, To: in.To, Check: in.Check}}
	if !in.From.Before(in.To) {
		return res, temporal.NewNonRetryableApplicationError(fmt.Sprintf("reconcile %s: empty window [%s, %s)",
			in.Platform.Name, in.From.Format(time.RFC3339), in.To.Format(time.RFC3339)), ErrPermanent, nil)
	}
	rs, ok := a.Store.(store.Reconciliation)
	if !ok {
		return res, temporal.NewNonRetryableApplicationError("reconcile: the store cannot count windows", ErrPermanent, nil)
	}
	gate, watermark, err := a.reconcileGate(ctx, in)
	res.Watermark = watermark
	if err != nil || gate != "" {
		res.Gate = gate
		return res, err
	}
	conn, err := a.pacedConnector(ctx, in.Platform)
	if err != nil {
		return res, err
	}
	n, err := connectors.CountOrders(ctx, conn, connectors.CountRequest{From: in.From, To: in.To, Meter: a.Limiters.Meter(in.Platform)})
	switch {
	case errors.Is(err, connectors.ErrCountUnsupported):
		res.Unsupported = true
		return res, nil
	case err != nil:
		a.countPointsWait(in.Platform.Name, err)
		err = fmt.Errorf("count orders of %s in [%s, %s): %w", in.Platform.Name, in.From.UTC().Format(time.RFC3339), in.To.UTC().Format(time.RFC3339), err)
		var rl *connectors.RateLimitError
		if errors.As(err, &rl) {
			a.learn(in.Platform.Name, rl.Limit)
			return res, a.rateLimited(ctx, in.Platform, rl, err)
		}
		err = a.refetchWait(ctx, classify(err))
		a.Metrics.FetchError(in.Platform.Name, errorClass(err))
		return res, err
	}
	stored, err := rs.CountUpdated(ctx, in.Platform.Name, in.From, in.To)
	if err != nil {
		return res, temporal.NewApplicationErrorWithCause(textclip.Message(err.Error()), ErrStore, boundedCause(err))
	}
	res.Result = reconcileOutcome(in, n, stored, time.Now().UTC())
	r := res.Result
	// A difference is kept as reprocessing until its recount replaces it.
	if err := rs.SaveReconcileResult(ctx, store.ReconcileResult{Platform: in.Platform.Name, From: r.From, To: r.To, Check: r.Check,
		PlatformCount: r.PlatformCount, Precision: r.Precision, StoreCount: r.StoreCount, Outcome: r.Outcome, Reprocessed: r.Reprocessed,
		RecountPlatform: r.RecountPlatform, RecountStore: r.RecountStore, CheckedAt: r.CheckedAt}); err != nil {
		return res, temporal.NewApplicationErrorWithCause(textclip.Message(err.Error()), ErrStore, boundedCause(err))
	}
	if r.Outcome == api.ReconcileReprocessing {
		return res, nil // counted in the metrics once its recount decided it
	}
	diff := r.PlatformCount - r.StoreCount
	if r.Reprocessed {
		diff = r.RecountPlatform - r.RecountStore
	}
	a.Metrics.ReconcileChecked(in.Platform.Name, r.Check, r.Outcome, diff)
	if r.Outcome != api.ReconcileMatch {
		log := a.logger().Warn
		if r.Outcome == api.ReconcileClosed {
			log = a.logger().Info
		}
		log("reconcile: the platform's count of a window differed from the store's", "platform", in.Platform.Name,
			"from", r.From, "to", r.To, "check", r.Check, "outcome", r.Outcome, "platform_count", r.PlatformCount, "store_count", r.StoreCount,
			"recount_platform", r.RecountPlatform, "recount_store", r.RecountStore)
	}
	return res, nil
}

// reconcileOutcome decides a check from its counts. A count at least N
// (the platform stopped counting) shows a difference only when the store
// holds fewer than N.
func reconcileOutcome(in ReconcileCountInput, platform connectors.Count, stored int, now time.Time) api.ReconcileResult {
	r := api.ReconcileResult{From: in.From, To: in.To, Check: in.Check, PlatformCount: platform.N, Precision: platform.Precision,
		StoreCount: stored, CheckedAt: now}
	ahead := platform.N > stored
	behind := platform.Precision != connectors.CountAtLeast && platform.N < stored
	if in.First != nil {
		r.PlatformCount, r.Precision, r.StoreCount = in.First.PlatformCount, in.First.Precision, in.First.StoreCount
		r.Reprocessed, r.RecountPlatform, r.RecountStore = true, platform.N, stored
		switch {
		case ahead:
			r.Outcome = api.ReconcileOpen
		case behind:
			r.Outcome = api.ReconcileStoreAhead
		default:
			r.Outcome = api.ReconcileClosed
		}
		return r
	}
	switch {
	case ahead:
		r.Outcome = api.ReconcileReprocessing
	case behind:
		r.Outcome = api.ReconcileStoreAhead
	default:
		r.Outcome = api.ReconcileMatch
	}
	return r
}

// reconcileGate reads the cursor's status: "" when the window may be
// counted now, and the cursor's watermark.
func (a *Activities) reconcileGate(ctx context.Context, in ReconcileCountInput) (string, time.Time, error) {
	if in.First != nil && in.Force {
		return "", time.Time{}, nil
	}
	if a.Client == nil {
		return "", time.Time{}, temporal.NewNonRetryableApplicationError("reconcile: the worker has no Temporal client to read the cursor", ErrPermanent, nil)
	}
	v, err := a.Client.QueryWorkflow(ctx, api.CursorWorkflowID(in.Platform.Name), "", api.QueryStatus)
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return api.ReconcileWaitCursor, time.Time{}, nil
	case err != nil:
		return "", time.Time{}, temporal.NewApplicationError(textclip.Message(fmt.Sprintf("reconcile %s: query the cursor's status: %v", in.Platform.Name, err)), ErrTransient)
	}
	var st api.CursorStatus
	if err := v.Get(&st); err != nil {
		return "", time.Time{}, temporal.NewApplicationError(textclip.Message(fmt.Sprintf("reconcile %s: read the cursor's status: %v", in.Platform.Name, err)), ErrTransient)
	}
	if st.Paused || st.Watermark.Before(in.To) {
		return api.ReconcileWaitCursor, st.Watermark, nil
	}
	if in.First != nil {
		for _, s := range append(st.InFlight, st.Queued...) {
			if s.Kind == "reprocess" && s.Start.Before(in.To) && in.From.Before(s.End) {
				return api.ReconcileWaitReprocess, st.Watermark, nil
			}
		}
	}
	return "", st.Watermark, nil
}

// ReconcileReprocessInput asks the cursor to fetch one window again.
type ReconcileReprocessInput struct {
	Platform string    `json:"platform"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
}

// ReconcileReprocess sends the cursor its `reprocess` signal for the
// window (api.ReprocessRequest, not forced: work windows still hold). A
// second send is harmless: the store keeps the newest version.
func (a *Activities) ReconcileReprocess(ctx context.Context, in ReconcileReprocessInput) error {
	if a.Client == nil {
		return temporal.NewNonRetryableApplicationError("reconcile: the worker has no Temporal client to signal the cursor", ErrPermanent, nil)
	}
	err := a.Client.SignalWorkflow(ctx, api.CursorWorkflowID(in.Platform), "", api.SignalReprocess, api.ReprocessRequest{From: in.From, To: in.To})
	if err != nil {
		return temporal.NewApplicationError(textclip.Message(fmt.Sprintf("reconcile %s: signal reprocess [%s, %s) to its cursor: %v",
			in.Platform, in.From.Format(time.RFC3339), in.To.Format(time.RFC3339), err)), ErrTransient)
	}
	return nil
}
