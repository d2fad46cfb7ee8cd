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
	// OutsideRange counts orders whose updated_at fell outside the asked
	// window. They are stored anyway (the newest version wins, so storing
	// is harmless) and counted so operators can see a misbehaving platform.
	OutsideRange int `json:"outside_range"`
}

// FetchPage fetches one page and upserts its orders in the same step, so the
// orders themselves never pass through Temporal.
func (a *Activities) FetchPage(ctx context.Context, in FetchPageInput) (FetchPageResult, error) {
	res, err := a.fetchPage(ctx, in)
	if err != nil {
		a.Metrics.FetchError(in.Platform.Name, errorClass(err))
	} else {
		a.Metrics.Page(in.Platform.Name, res.Inserted, res.Updated, res.Unchanged)
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
		return res, temporal.NewApplicationError("rate limiter wait: "+err.Error(), ErrTransient)
	}
	page, err := conn.ListOrders(ctx, connectors.PageRequest{
		From: in.From, To: in.To, Token: in.Token, PageSize: in.Platform.PageSize, Page: in.Page,
		Meter: a.Limiters.Meter(in.Platform),
	})
	if err != nil {
		var rl *connectors.RateLimitError
		if errors.As(err, &rl) {
			a.Limiters.Report(in.Platform.Name, rl.Limit)
		}
		return res, classify(fmt.Errorf("fetch page %d of %s: %w", in.Page, in.SliceID, err))
	}
	a.Limiters.Report(in.Platform.Name, page.RateLimit)
	for i := range page.Orders {
		o := &page.Orders[i]
		o.Platform = in.Platform.Name
		o.UpdatedAt = o.UpdatedAt.UTC()
		o.CreatedAt = o.CreatedAt.UTC()
		if o.UpdatedAt.Before(in.From) || !o.UpdatedAt.Before(in.To) {
			res.OutsideRange++
		}
	}
	if len(page.Orders) > 0 {
		up, err := a.Store.UpsertOrders(ctx, page.Orders)
		if err != nil {
			return res, temporal.NewApplicationErrorWithCause(
				fmt.Sprintf("store page %d of %s: %v", in.Page, in.SliceID, err), ErrStore, err)
		}
		res.Inserted, res.Updated, res.Unchanged = up.Inserted, up.Updated, up.Unchanged
	}
	res.Fetched = len(page.Orders)
	res.NextToken = page.NextToken
	if res.OutsideRange > 0 {
		a.logger().Warn("platform returned orders outside the asked window",
			"platform", in.Platform.Name, "slice", in.SliceID, "page", in.Page, "count", res.OutsideRange)
	}
	return res, nil
}

// classify turns connector errors into Temporal application errors whose
// type drives the retry policy.
func classify(err error) error {
	var rl *connectors.RateLimitError
	var perm *connectors.PermanentError
	var mal *connectors.MalformedError
	switch {
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
