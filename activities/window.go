package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/textclip"
)

// FetchWindowInput asks for a caught-up cursor's live window in one
// activity (workflows, cursor_inline.go): its pages in turn, at most
// MaxPages of them, each bounded by the platform's timeout.
type FetchWindowInput struct {
	Platform api.Settings `json:"platform"`
	SliceID  string       `json:"slice_id"`
	// From and To are the request window, already widened by the overlap.
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	MaxPages int       `json:"max_pages"`
}

// FetchWindowResult is what one window's pages stored (counts only) and,
// unless the window is done, where it stopped: Stopped.Page is the page
// to go on from with Stopped.Token, and Stopped.Attempt that page's failed
// attempt (nil: not tried, because MaxPages were fetched or the platform
// handed out a token again).
type FetchWindowResult struct {
	Counted api.SliceResult `json:"counted"`
	Stopped *api.Handover   `json:"stopped,omitempty"`
}

// FetchWindow fetches and stores a window's pages, one attempt each,
// within one activity: however many pages the window holds, it costs the
// cursor one activity in history (docs/performance.md, B12). A failed
// page is not retried here; the cursor hands the window over to a slice
// workflow at that page, which retries with the platform's policy. The
// activity itself fails only when cancelled or timed out.
func (a *Activities) FetchWindow(ctx context.Context, in FetchWindowInput) (FetchWindowResult, error) {
	return PageThroughWindow(ctx, in, a.FetchPage)
}

// PageThroughWindow is FetchWindow with fetch for one page attempt (tests
// of workflows give it their mock of FetchPage).
func PageThroughWindow(ctx context.Context, in FetchWindowInput, fetch func(context.Context, FetchPageInput) (FetchPageResult, error)) (FetchWindowResult, error) {
	var out FetchWindowResult
	p := in.Platform
	followed := map[string]bool{}
	token := ""
	for page := 1; ; page++ {
		if page > in.MaxPages {
			out.Stopped = &api.Handover{Page: page, Token: token, Counted: out.Counted}
			return out, nil
		}
		pageCtx, cancel := context.WithTimeout(ctx, p.Timeout.D())
		r, err := fetch(pageCtx, FetchPageInput{Platform: p, SliceID: in.SliceID, From: in.From, To: in.To, Token: token, Page: page})
		cancel()
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return out, cerr // the activity's own end: cancelled or timed out
			}
			out.Stopped = &api.Handover{Page: page, Token: token, Attempt: AttemptOf(err), Counted: out.Counted}
			return out, nil
		}
		AddPage(&out.Counted, r)
		if r.NextToken == "" {
			out.Counted.Outcome = api.SliceCompleted
			return out, nil
		}
		if followed[r.NextToken] {
			// A stall or a cycle: the slice workflow judges which.
			out.Stopped = &api.Handover{Page: page + 1, Token: r.NextToken, Counted: out.Counted}
			return out, nil
		}
		followed[r.NextToken] = true
		token = r.NextToken
	}
}

// AttemptOf is a failed page attempt as a slice input carries it: its
// type, clipped message (it may quote the platform), whether it may be
// retried, and the wait the platform asked for.
func AttemptOf(err error) *api.FailedAttempt {
	a := &api.FailedAttempt{}
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	switch {
	case errors.As(err, &app):
		a.Message, a.Type = app.Message(), app.Type()
		a.NonRetryable, a.RetryAfter = app.NonRetryable(), app.NextRetryDelay()
	case errors.As(err, &timeout):
		a.Message, a.Type = "activity timed out: "+timeout.Error(), "Timeout"
	case errors.Is(err, context.DeadlineExceeded):
		a.Message, a.Type = fmt.Sprintf("page timed out: %v", err), "Timeout"
	default:
		a.Message = err.Error()
	}
	a.Message = textclip.Message(a.Message)
	return a
}

// AddPage adds a stored page's counts to a window's result.
func AddPage(res *api.SliceResult, r FetchPageResult) {
	res.Pages++
	res.OrdersFetched += r.Fetched
	res.OrdersInserted += r.Inserted
	res.OrdersUpdated += r.Updated
	res.OrdersUnchanged += r.Unchanged
	res.OrdersOutsideRange += r.OutsideRange
	res.OrdersRejected += r.Rejected
	res.OrdersFutureStamped += r.FutureStamped
	if r.StatedRate > 0 {
		res.StatedRate = r.StatedRate
	}
}
