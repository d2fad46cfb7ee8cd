package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// A page of the GraphQL connector is one orders query and a follow-up
// query for every further nested page of lines. Under a small bucket
// those follow-ups wait behind other slices' pages, and a page that had to
// be fetched again from scratch on every attempt never finished (issue 23:
// 252 page queries, the watermark never moved). So a page's progress is
// never thrown away: when a follow-up fails or cannot be booked within the
// attempt, the page's orders (those complete, and those with part of their
// lines) and the follow-ups still to run with their cursors go to the
// request's PageProgress, and the next attempt of the same page resumes
// from there: the page query is not sent again, and the failed follow-up
// retries alone.

// shopifyProgressVersion is the format of a kept page; another is ignored.
const shopifyProgressVersion = 2 // 2: follow-ups name their connection

// shopifyPageState is a page in progress: its orders, the orders whose
// lines go on (first to run first), and the next-page token.
type shopifyPageState struct {
	V      int         `json:"v"`
	Token  string      `json:"token"` // the request this is a page of
	From   time.Time   `json:"from"`
	To     time.Time   `json:"to"`
	Next   string      `json:"next"`
	Orders []Order     `json:"orders"`
	More   []moreLines `json:"more"`
}

// shopifyProgressTimeout bounds the progress store's work, which runs even
// when the attempt's own context has ended.
const shopifyProgressTimeout = 10 * time.Second

// resume loads the page's kept progress, if it belongs to this request.
func (c *shopifyGraphQL) resume(ctx context.Context, req PageRequest) (*shopifyPageState, bool) {
	if req.Progress == nil {
		return nil, false
	}
	b, err := req.Progress.Load(ctx)
	if err != nil || len(b) == 0 {
		return nil, false // nothing kept, or unreadable: the page starts over
	}
	var st shopifyPageState
	if json.Unmarshal(b, &st) != nil || st.V != shopifyProgressVersion || st.Token != req.Token ||
		!st.From.Equal(req.From) || !st.To.Equal(req.To) {
		return nil, false
	}
	for _, m := range st.More {
		if m.Index < 0 || m.Index >= len(st.Orders) || m.After == "" || m.GID == "" {
			return nil, false
		}
	}
	return &st, true
}

// keep saves the page's progress after err ended this attempt, and returns
// the error to report. An order that vanished makes the page worth listing
// again, so nothing is kept then; nor is a page whose resumed follow-up was
// refused for good (a cursor that expired while kept): that page is listed
// again, as transient.
func (c *shopifyGraphQL) keep(ctx context.Context, req PageRequest, st *shopifyPageState, resumed bool, err error) error {
	if req.Progress == nil {
		return err
	}
	var perm *PermanentError
	switch {
	case errors.Is(err, errVanished):
		c.forget(ctx, req)
		return err
	case errors.As(err, &perm) && resumed:
		c.forget(ctx, req)
		// Not wrapped: the refusal must not classify as permanent.
		return &TransientError{Platform: c.platform, Msg: "a follow-up of the page kept from an earlier attempt was refused (" +
			perm.Msg + "); the page is listed again"}
	}
	st.V, st.Token, st.From, st.To = shopifyProgressVersion, req.Token, req.From, req.To
	b, merr := json.Marshal(st)
	if merr != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shopifyProgressTimeout)
	defer cancel()
	_ = req.Progress.Save(sctx, b) // unsaved: the next attempt lists the page again
	return err
}

// forget drops the page's kept progress.
func (c *shopifyGraphQL) forget(ctx context.Context, req PageRequest) {
	if req.Progress == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shopifyProgressTimeout)
	defer cancel()
	_ = req.Progress.Clear(sctx)
}

// errVanished marks an order gone while its lines were listed.
var errVanished = errors.New("order vanished")
