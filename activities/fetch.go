package activities

import (
	"context"
	"errors"
	"fmt"
	"github.com/ordersync/ordersync/api"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/store"
)

// Error types workflows and retry policies act on.
const (
	// ErrPermanent marks errors retrying cannot fix (bad credentials, a
	// rejected request); the slice goes to the dead-letter workflow at once.
	ErrPermanent   = "PermanentError"
	ErrRateLimited = "RateLimited"
	ErrTransient   = "TransientError"
	// ErrNotDeclared: this worker's platforms file lacks the platform
	// (NotDeclaredError). Retried, so a worker that declares it takes the
	// page; never a reason to dead-letter a page on its own.
	ErrNotDeclared = "PlatformNotDeclared"
	ErrMalformed   = "MalformedResponse"
	ErrStore       = "StoreError"
	// ErrSlotWait is no error: the platform's request rate is booked out
	// for longer than the attempt may wait (always, for a page's first,
	// local attempt: it must not hold the workflow task). Not retried by
	// the activity; the slice waits NextRetryDelay on a durable timer and
	// asks again, without counting an attempt.
	ErrSlotWait = "RequestSlotWait"
)

// A page the platform answers with its rate limit (429, Shopify's
// THROTTLED) fails its attempt as ErrRateLimited, NonRetryable, with the
// platform's wait (Retry-After, else one request's spacing at the rate in
// force) as NextRetryDelay and a RateLimitAnswer as details. The activity's
// retry policy never retries it, so it never uses an attempt: the slice
// waits on a durable timer and asks again, as for ErrSlotWait, within the
// platform's rate_limit_wait (workflows, fetchPageRegular).

// SlotWaitAnswer details an ErrSlotWait failure of a regular attempt after
// the first: the attempts before it failed for other reasons and count,
// although the slot wait itself does not (workflows, fetchPageRegular).
type SlotWaitAnswer struct {
	Attempt int `json:"attempt"`
}

// RateLimitAnswer details an ErrRateLimited failure.
type RateLimitAnswer struct {
	// Attempt is the activity attempt the platform refused (1: the
	// first). The attempts before it failed for other reasons and count;
	// the refused one does not.
	Attempt int `json:"attempt"`
	// Limit is the requests/s the platform stated with its answer, if any.
	Limit float64 `json:"limit,omitempty"`
}

// FetchPageInput asks for one page of a slice. Platform is the platform's
// settings by reference: where the request goes and with which secret is
// the registry's (ConnectorCache), only its tuning comes from here.
type FetchPageInput struct {
	Platform api.Settings `json:"platform"`
	SliceID  string       `json:"slice_id"`
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
	// updated_at, an id or text or lines the store refuses: see
	// store.CheckOrder, and store.UpsertResult.Rejected). They are
	// the platform's bad data, set aside alone so the rest of the page is
	// stored.
	Rejected int `json:"rejected"`
	// FutureStamped counts orders stamped further ahead of now than the
	// allowed skew. Such a version is not stored: it would count as newest
	// until its date and hide the real versions. It is stored once its
	// time has come, if the platform still shows it then.
	FutureStamped int `json:"future_stamped"`
	// StatedRate is the request rate (per second) the platform stated in
	// this page's answer (x-amzn-RateLimit-Limit, X-RateLimit-Limit), 0
	// when it stated none: the cursor shows the latest in its status.
	StatedRate float64 `json:"stated_rate,omitempty"`
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
		// Waiting for the platform's rate, not an API error. A retry that
		// waits says which attempt it was, so the failures before it
		// still count toward the page's retries.
		if activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt > 1 {
			return res, temporal.NewApplicationErrorWithOptions(appErr.Message(), ErrSlotWait, temporal.ApplicationErrorOptions{
				NonRetryable: true, NextRetryDelay: appErr.NextRetryDelay(),
				Details: []any{SlotWaitAnswer{Attempt: int(activity.GetInfo(ctx).Attempt)}}})
		}
		return res, err
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
		err = fmt.Errorf("fetch page %d of %s: %w", in.Page, in.SliceID, err)
		var rl *connectors.RateLimitError
		if errors.As(err, &rl) {
			a.learn(in.Platform.Name, rl.Limit)
			return res, a.rateLimited(ctx, in.Platform, rl, err)
		}
		return res, classify(err)
	}
	a.learn(in.Platform.Name, page.RateLimit)
	if page.RateLimit > 0 && !math.IsInf(page.RateLimit, 0) {
		res.StatedRate = page.RateLimit
	}
	res.Fetched = len(page.Orders)
	toStore := a.screen(in, page.Orders, &res)
	if len(toStore) > 0 {
		up, err := a.Store.UpsertOrders(ctx, toStore)
		if err != nil {
			return res, temporal.NewApplicationErrorWithCause(
				textclip.Message(fmt.Sprintf("store page %d of %s: %v", in.Page, in.SliceID, err)), ErrStore, boundedCause(err))
		}
		res.Inserted, res.Updated, res.Unchanged = up.Inserted, up.Updated, up.Unchanged
		if len(up.Rejected) > 0 { // refused by the database alone (store.UpsertResult.Rejected)
			res.Rejected += len(up.Rejected)
			ids := make([]string, 0, len(up.Rejected))
			for _, r := range up.Rejected {
				ids = append(ids, r.ID+" ("+r.Reason+")")
			}
			a.logger().Warn("the store refused orders; rejected them, stored the rest of the page",
				"platform", in.Platform.Name, "slice", in.SliceID, "page", in.Page, "count", len(up.Rejected), "orders", firstIDs(ids))
		}
	}
	res.NextToken = page.NextToken
	if res.OutsideRange > 0 {
		a.logger().Warn("platform returned orders outside the asked window",
			"platform", in.Platform.Name, "slice", in.SliceID, "page", in.Page, "count", res.OutsideRange)
	}
	return res, nil
}

// learn records the request rate a platform stated (0: none) for the
// pacing of the next requests and in the learned-limit gauge.
func (a *Activities) learn(platform string, rps float64) {
	if rps <= 0 {
		return
	}
	a.Limiters.Report(platform, rps)
	a.Metrics.LearnedRateLimit(platform, rps)
}

// rateLimited is the failure of an attempt the platform answered with its
// rate limit: a wait for the workflow, never retried by the activity (see
// RateLimitAnswer).
func (a *Activities) rateLimited(ctx context.Context, p api.Settings, rl *connectors.RateLimitError, err error) error {
	wait := rl.RetryAfter
	if wait <= 0 {
		rps, _ := a.Limiters.Effective(p)
		wait = slotRetryDelay(rps)
	}
	attempt := 1
	if activity.IsActivity(ctx) {
		attempt = int(activity.GetInfo(ctx).Attempt)
	}
	return temporal.NewApplicationErrorWithOptions(err.Error(), ErrRateLimited, temporal.ApplicationErrorOptions{
		NonRetryable: true, NextRetryDelay: wait, Details: []any{RateLimitAnswer{Attempt: attempt, Limit: rl.Limit}}})
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
		// CheckOrder: what either store cannot keep (an id too long, NUL
		// bytes, lines); it names fields, never their content.
		checkErr := store.CheckOrder(o)
		switch {
		case o.ID == "":
			rejected = append(rejected, fmt.Sprintf("(order %d on the page: no id)", i))
		case o.UpdatedAt.IsZero():
			rejected = append(rejected, textclip.Value(o.ID)+" (no updated_at)")
		case checkErr != nil && (len(o.ID) > store.MaxOrderIDBytes || !utf8.ValidString(o.ID) || strings.IndexByte(o.ID, 0) >= 0):
			// The id itself is the problem: name the order by position.
			rejected = append(rejected, fmt.Sprintf("(order %d on the page: %s)", i, textclip.Value(checkErr.Error())))
		case checkErr != nil:
			rejected = append(rejected, fmt.Sprintf("%s (%s)", textclip.Value(o.ID), textclip.Value(checkErr.Error())))
		case o.UpdatedAt.After(horizon):
			future = append(future, textclip.Value(o.ID))
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

// boundedCause keeps an error that carries the platform's text (a store
// error may quote an order id) within textclip.MessageMax: a cause is
// recorded in history beside the error's own message.
func boundedCause(err error) error {
	if textclip.Over(err.Error(), textclip.MessageMax) {
		return errors.New(textclip.Message(err.Error()))
	}
	return err
}

// classify turns connector errors into Temporal application errors whose
// type drives the retry policy.
func classify(err error) error {
	msg := textclip.Message(err.Error()) // platform text reaches history through it
	var rl *connectors.RateLimitError
	var perm *connectors.PermanentError
	var mal *connectors.MalformedError
	var slot *SlotWaitError
	switch {
	case errors.As(err, &slot):
		return temporal.NewApplicationErrorWithOptions(msg, ErrSlotWait,
			temporal.ApplicationErrorOptions{NonRetryable: true, NextRetryDelay: slot.Delay})
	case errors.As(err, &rl):
		return temporal.NewApplicationErrorWithOptions(msg, ErrRateLimited,
			temporal.ApplicationErrorOptions{NextRetryDelay: rl.RetryAfter})
	case errors.As(err, &perm):
		return temporal.NewNonRetryableApplicationError(msg, ErrPermanent, nil)
	case errors.As(err, new(*NotDeclaredError)):
		return temporal.NewApplicationError(msg, ErrNotDeclared) // retried with the platform's back-off
	case errors.As(err, &mal):
		return temporal.NewApplicationError(msg, ErrMalformed)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return temporal.NewApplicationError(msg, ErrTransient)
	default:
		return temporal.NewApplicationError(msg, ErrTransient)
	}
}
