package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

// RefetchOrderInput asks for one order now, by the platform's id for it.
// Platform is by reference, as for FetchPageInput.
type RefetchOrderInput struct {
	Platform api.Settings `json:"platform"`
	OrderID  string       `json:"order_id"`
}

// RefetchOrder fetches one order through its platform's get-one-order
// call and upserts it in the same step, like FetchPage: the order never
// passes through Temporal, and the store's newest-version rule, change
// feed and destinations treat it as any fetched version. It books the
// platform's request slot (and Shopify's points, through the Meter) like a
// page, so a refetch never exceeds the account's rate limit; no watermark
// is read or moved.
//
// The platform's "no such order" is the outcome RefetchNotFound, not an
// error. Waiting for the rate is ErrSlotWait or ErrRateLimited (not
// retried by the activity: the workflow sleeps on a timer); everything
// else is classified as for a page.
func (a *Activities) RefetchOrder(ctx context.Context, in RefetchOrderInput) (api.RefetchResult, error) {
	res := api.RefetchResult{Platform: in.Platform.Name, OrderID: in.OrderID}
	if err := api.CheckRefetchOrderID(in.OrderID); err != nil {
		return res, temporal.NewNonRetryableApplicationError(textclip.Message(err.Error()), ErrPermanent, nil)
	}
	conn, err := a.pacedConnector(ctx, in.Platform)
	if err != nil {
		return res, err
	}
	o, err := connectors.GetOrder(ctx, conn, connectors.OrderRequest{ID: in.OrderID, Meter: a.Limiters.Meter(in.Platform)})
	switch {
	case errors.Is(err, connectors.ErrOrderNotFound):
		res.Outcome = api.RefetchNotFound
		return res, nil
	case err != nil:
		a.countPointsWait(in.Platform.Name, err)
		err = fmt.Errorf("refetch order %s of %s: %w", textclip.Value(in.OrderID), in.Platform.Name, err)
		var rl *connectors.RateLimitError
		if errors.As(err, &rl) {
			a.learn(in.Platform.Name, rl.Limit)
			return res, a.rateLimited(ctx, in.Platform, rl, err)
		}
		err = a.refetchWait(ctx, classify(err))
		a.Metrics.FetchError(in.Platform.Name, errorClass(err))
		return res, err
	}
	if reason := a.screenOne(in, &o); reason != "" {
		res.Outcome, res.Reason = api.RefetchRejected, reason
		if reason == reasonFuture {
			res.Outcome, res.Reason = api.RefetchFutureStamped, ""
		}
		a.logger().Warn("refetch: the platform's order cannot be stored", "platform", in.Platform.Name,
			"order_id", textclip.Value(in.OrderID), "outcome", res.Outcome, "reason", reason)
		return res, nil
	}
	up, err := a.Store.UpsertOrders(ctx, []connectors.Order{o})
	if err != nil {
		return res, temporal.NewApplicationErrorWithCause(
			textclip.Message(fmt.Sprintf("store refetched order %s of %s: %v", textclip.Value(in.OrderID), in.Platform.Name, err)), ErrStore, boundedCause(err))
	}
	switch {
	case up.Inserted > 0:
		res.Outcome = api.RefetchCreated
	case up.Updated > 0:
		res.Outcome = api.RefetchUpdated
	case len(up.Rejected) > 0:
		res.Outcome, res.Reason = api.RefetchRejected, up.Rejected[0].Reason
	default:
		res.Outcome = api.RefetchUnchanged
	}
	return res, nil
}

const reasonFuture = "stamped in the future"

// screenOne applies a page's screening (screen) to one order: stamped with
// the platform, times in UTC; it returns why the order cannot be stored,
// "" when it can. An order with another id than asked is refused: storing
// it would report on the wrong order.
func (a *Activities) screenOne(in RefetchOrderInput, o *connectors.Order) string {
	o.Platform = in.Platform.Name
	o.UpdatedAt, o.CreatedAt = o.UpdatedAt.UTC(), o.CreatedAt.UTC()
	switch {
	case o.ID != in.OrderID:
		return fmt.Sprintf("the platform answered with order %s", textclip.Value(o.ID))
	case o.UpdatedAt.IsZero():
		return "no updated_at"
	case o.UpdatedAt.After(time.Now().Add(a.futureSkew())):
		return reasonFuture
	}
	if err := store.CheckOrder(*o); err != nil {
		return textclip.Value(err.Error())
	}
	return ""
}

// refetchWait marks a slot wait of a retry with its attempt, as FetchPage
// does, so the workflow counts the attempts that failed before it.
func (a *Activities) refetchWait(ctx context.Context, err error) error {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrSlotWait && activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1 {
		return temporal.NewApplicationErrorWithOptions(appErr.Message(), ErrSlotWait, temporal.ApplicationErrorOptions{
			NonRetryable: true, NextRetryDelay: appErr.NextRetryDelay(),
			Details: []any{SlotWaitAnswer{Attempt: int(activity.GetInfo(ctx).Attempt)}}})
	}
	return err
}

// pacedConnector is the platform's connector once the platform's rate
// allows one more request, counted: what a refetch or a count sends goes
// through the same limiter as the pages. A wait the limiter refuses comes
// back as the rate-limit error a workflow waits out on a timer.
func (a *Activities) pacedConnector(ctx context.Context, p api.Settings) (connectors.Connector, error) {
	conn, err := a.Connectors.Connector(p)
	if err != nil {
		return nil, classify(fmt.Errorf("connector for %s: %w", p.Name, err))
	}
	if err := a.Limiters.Wait(ctx, p); err != nil {
		return nil, a.refetchWait(ctx, classify(fmt.Errorf("rate limiter wait: %w", err)))
	}
	a.Metrics.Request(p.Name)
	return conn, nil
}
