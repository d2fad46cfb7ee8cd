package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/store"
)

// Error types workflows and retry policies act on.
const (
	// ErrPermanent marks errors retrying cannot fix (bad credentials, a
	// rejected request); the slice goes to the dead-letter workflow at once.
	ErrPermanent   = "PermanentError"
	ErrRateLimited = "RateLimited"
	ErrTransient   = "TransientError"
	ErrMalformed   = "MalformedResponse"
	ErrStore       = "StoreError"
	// ErrSlotWait is no error: the platform's request rate is booked out
	// for longer than the attempt may wait (always, for a page's first,
	// local attempt: it must not hold the workflow task). Not retried by
	// the activity; the slice waits NextRetryDelay on a durable timer and
	// asks again, without counting an attempt.
	ErrSlotWait = "RequestSlotWait"
)

// FetchPageInput asks for one page of a slice.
type FetchPageInput struct {
	Platform config.Platform `json:"platform"`
	SliceID  string          `json:"slice_id"`
	// From and To are the request window, already widened by the overlap.
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	Token string    `json:"token,omitempty"`
	Page  int       `json:"page"`
}

// FetchPageResult holds counts and the next token: no order data.
type FetchPageResult struct {
	NextToken string `json:"next_token,omitempty"`
	Fetched   int    `json:"fetched"`
	Inserted  int    `json:"inserted"`
	Updated   int    `json:"updated"`
	Unchanged int    `json:"unchanged"`
	// OutsideRange counts stored orders whose updated_at fell outside the
	// asked window. They are stored anyway (the newest version wins, so
	// storing is harmless) and counted so operators can see a misbehaving
	// platform.
	OutsideRange int `json:"outside_range"`
	// Rejected counts orders that cannot be stored (no id, zero
	// updated_at, lines the store refuses: see store.CheckLines). They are
	// the platform's bad data, set aside alone so the rest of the page is
	// stored.
	Rejected int `json:"rejected"`
	// FutureStamped counts orders stamped further ahead of now than the
	// allowed skew. Such a version is not stored: it would count as newest
	// until its date and hide the real versions. It is stored once its
	// time has come, if the platform still shows it then.
	FutureStamped int `json:"future_stamped"`
}

// DefaultFutureSkew is how far ahead of now an order's updated_at may lie
// when Activities.FutureSkew is zero; the store heals versions stamped
// beyond the same default.
const DefaultFutureSkew = store.DefaultFutureSkew

// maxLoggedIDs bounds the order ids one warning lists.
const maxLoggedIDs = 20

// FetchPage fetches one page and upserts its orders in the same step, so the
// orders themselves never pass through Temporal.
func (a *Activities) FetchPage(ctx context.Context, in FetchPageInput) (FetchPageResult, error) {
	res, err := a.fetchPage(ctx, in)
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() == ErrSlotWait {
		return res, err // waiting for the platform's rate, not an API error
	}
	if err != nil {
		a.Metrics.FetchError(in.Platform.Name, errorClass(err))
	} else {
		a.Metrics.Page(in.Platform.Name, res.Inserted, res.Updated, res.Unchanged)
		a.Metrics.NotStored(in.Platform.Name, res.Rejected, res.FutureStamped)
	}
	return res, err
}

// errorClass maps an activity error type to its metrics class.
func errorClass(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		switch appErr.Type() {
		case ErrRateLimited:
			return metrics.ClassRateLimited
		case ErrPermanent:
			return metrics.ClassPermanent
		case ErrMalformed:
			return metrics.ClassMalformed
		case ErrStore:
			return metrics.ClassStore
		}
	}
	return metrics.ClassTransient
}

func (a *Activities) fetchPage(ctx context.Context, in FetchPageInput) (FetchPageResult, error) {
	var res FetchPageResult
	conn, err := a.Connectors.Connector(in.Platform)
	if err != nil {
		return res, classify(fmt.Errorf("connector for %s: %w", in.Platform.Name, err))
	}
	if err := a.Limiters.Wait(ctx, in.Platform); err != nil {
		return res, classify(fmt.Errorf("rate limiter wait: %w", err))
	}
	a.Metrics.Request(in.Platform.Name)
	page, err := conn.ListOrders(ctx, connectors.PageRequest{
		From: in.From, To: in.To, Token: in.Token, PageSize: in.Platform.PageSize, Page: in.Page,
		Meter: a.Limiters.Meter(in.Platform), Progress: a.pageProgress(in),
	})
	if err != nil {
		a.countPointsWait(in.Platform.Name, err)
		var rl *connectors.RateLimitError
		if errors.As(err, &rl) {
			a.Limiters.Report(in.Platform.Name, rl.Limit)
		}
		return res, classify(fmt.Errorf("fetch page %d of %s: %w", in.Page, in.SliceID, err))
	}
	a.Limiters.Report(in.Platform.Name, page.RateLimit)
	res.Fetched = len(page.Orders)
	toStore := a.screen(in, page.Orders, &res)
	if len(toStore) > 0 {
		up, err := a.Store.UpsertOrders(ctx, toStore)
		if err != nil {
			return res, temporal.NewApplicationErrorWithCause(
				fmt.Sprintf("store page %d of %s: %v", in.Page, in.SliceID, err), ErrStore, err)
		}
		res.Inserted, res.Updated, res.Unchanged = up.Inserted, up.Updated, up.Unchanged
	}
	res.NextToken = page.NextToken
	if res.OutsideRange > 0 {
		a.logger().Warn("platform returned orders outside the asked window",
			"platform", in.Platform.Name, "slice", in.SliceID, "page", in.Page, "count", res.OutsideRange)
	}
	return res, nil
}

// screen stamps the page's orders with the platform and UTC times and
// returns those to store. Platform data is untrusted: an order that cannot
// be stored is rejected alone rather than failing its page (the store would
// fail the whole batch, and retrying cannot fix the platform's data), and a
// version stamped beyond now plus the skew is set aside so it cannot pin the
// order. Both are counted in res and logged by order id, never with order
// data.
func (a *Activities) screen(in FetchPageInput, orders []connectors.Order, res *FetchPageResult) []connectors.Order {
	horizon := time.Now().Add(a.futureSkew())
	toStore := orders[:0]
	var rejected, future []string
	for i, o := range orders {
		o.Platform = in.Platform.Name
		o.UpdatedAt = o.UpdatedAt.UTC()
		o.CreatedAt = o.CreatedAt.UTC()
		linesErr := store.CheckLines(o) // names lines by position, never their content
		switch {
		case o.ID == "":
			rejected = append(rejected, fmt.Sprintf("(order %d on the page: no id)", i))
		case o.UpdatedAt.IsZero():
			rejected = append(rejected, o.ID+" (no updated_at)")
		case linesErr != nil:
			rejected = append(rejected, fmt.Sprintf("%s (%v)", o.ID, linesErr))
		case o.UpdatedAt.After(horizon):
			future = append(future, o.ID)
		default:
			if o.UpdatedAt.Before(in.From) || !o.UpdatedAt.Before(in.To) {
				res.OutsideRange++
			}
			toStore = append(toStore, o)
		}
	}
	res.Rejected, res.FutureStamped = len(rejected), len(future)
	if len(rejected) > 0 {
		a.logger().Warn("platform returned orders that cannot be stored; rejected them, stored the rest of the page",
			"platform", in.Platform.Name, "slice", in.SliceID, "page", in.Page,
			"count", len(rejected), "orders", firstIDs(rejected))
	}
	if len(future) > 0 {
		a.logger().Warn("platform returned orders stamped in the future; set them aside",
			"platform", in.Platform.Name, "slice", in.SliceID, "page", in.Page,
			"count", len(future), "order_ids", firstIDs(future), "allowed_skew", a.futureSkew().String())
	}
	return toStore
}

func (a *Activities) futureSkew() time.Duration {
	if a.FutureSkew > 0 {
		return a.FutureSkew
	}
	return DefaultFutureSkew
}

// firstIDs keeps a warning short when a whole page is bad.
func firstIDs(ids []string) []string {
	if len(ids) <= maxLoggedIDs {
		return ids
	}
	return append(ids[:maxLoggedIDs:maxLoggedIDs], fmt.Sprintf("and %d more", len(ids)-maxLoggedIDs))
}

// classify turns connector errors into Temporal application errors whose
// type drives the retry policy.
func classify(err error) error {
	var rl *connectors.RateLimitError
	var perm *connectors.PermanentError
	var mal *connectors.MalformedError
	var slot *SlotWaitError
	switch {
	case errors.As(err, &slot):
		return temporal.NewApplicationErrorWithOptions(err.Error(), ErrSlotWait,
			temporal.ApplicationErrorOptions{NonRetryable: true, NextRetryDelay: slot.Delay})
	case errors.As(err, &rl):
		return temporal.NewApplicationErrorWithOptions(err.Error(), ErrRateLimited,
			temporal.ApplicationErrorOptions{NextRetryDelay: rl.RetryAfter})
	case errors.As(err, &perm):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, nil)
	case errors.As(err, &mal):
		return temporal.NewApplicationError(err.Error(), ErrMalformed)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return temporal.NewApplicationError(err.Error(), ErrTransient)
	default:
		return temporal.NewApplicationError(err.Error(), ErrTransient)
	}
}
