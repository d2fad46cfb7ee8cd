package activities

import (
	"context"
	"errors"
	"fmt"
	"github.com/ordersync/ordersync/api"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Bulk query activities (Shopify's bulkOperationRunQuery, see
// connectors/shopify_bulk.go). The slice workflow starts the operation,
// waits on durable timers between short looks at it, and downloads the
// result; no activity is held open while Shopify works, and none returns
// order data or the result's signed URL, only ids, states and counts.
const (
	// ErrBulkBusy is no failure: the shop runs as many bulk queries as it
	// allows. Not retried by the activity; the slice waits on a timer and
	// asks again.
	ErrBulkBusy = "BulkBusy"
	// ErrBulkExpired: the operation's result has expired (status EXPIRED);
	// the slice runs the query again.
	ErrBulkExpired = "BulkExpired"
)

// bulkBatchOrders is how many orders of a bulk result go to the store in
// one transaction; the download's position is committed after each.
const bulkBatchOrders = 250

// BulkInput names a slice's bulk query.
type BulkInput struct {
	Platform api.Settings `json:"platform"`
	SliceID  string       `json:"slice_id"`
	// From and To are the request window, already widened by the overlap.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// ID is the operation (gid://shopify/BulkOperation/...), once started.
	ID string `json:"id,omitempty"`
	// Partial downloads what a FAILED operation got (partialDataUrl).
	Partial bool `json:"partial,omitempty"`
}

// BulkState is what the workflow learns of an operation: no URL.
type BulkState struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	ErrorCode   string `json:"error_code,omitempty"`
	ObjectCount int64  `json:"object_count"`
	HasURL      bool   `json:"has_url,omitempty"`
	HasPartial  bool   `json:"has_partial,omitempty"`
}

func bulkState(op connectors.BulkOperation) BulkState {
	return BulkState{ID: op.ID, Status: op.Status, ErrorCode: op.ErrorCode, ObjectCount: op.ObjectCount,
		HasURL: op.URL != "", HasPartial: op.PartialDataURL != ""}
}

// bulkProgress is the download's heartbeat: where the next attempt
// resumes (the first byte of the first order not yet stored) and what the
// attempts before it stored.
type bulkProgress struct {
	ID      string `json:"id"`
	Partial bool   `json:"partial"`
	Offset  int64  `json:"offset"`
	Batches int    `json:"batches"`
	// Objects is how many objects (orders and their line items) the file
	// holds before Offset: with the operation's objectCount it bounds
	// what a resumed attempt may read.
	Objects int64           `json:"objects,omitempty"`
	Counts  FetchPageResult `json:"counts"`
}

// bulkConnector is the platform's connector as a bulk lister.
func (a *Activities) bulkConnector(p api.Settings) (connectors.BulkLister, error) {
	conn, err := a.Connectors.Connector(p)
	if err != nil {
		return nil, classify(fmt.Errorf("connector for %s: %w", p.Name, err))
	}
	b, ok := connectors.AsBulk(conn)
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s: kind %s cannot run bulk queries (options.bulk_backfill needs kind shopify with api graphql)", p.Name, p.Kind), ErrPermanent, nil)
	}
	return b, nil
}

// bulkRequest is the platform's bulk connector once one request may go
// out (StartBulk, PollBulk, CancelBulk send one each).
func (a *Activities) bulkRequest(ctx context.Context, p api.Settings) (connectors.BulkLister, error) {
	b, err := a.bulkConnector(p)
	if err != nil {
		return nil, err
	}
	if err := a.request(ctx, p); err != nil {
		return nil, err
	}
	return b, nil
}

// request waits for the platform's request rate, as a page does.
func (a *Activities) request(ctx context.Context, p api.Settings) error {
	if err := a.Limiters.Wait(ctx, p); err != nil {
		return classify(fmt.Errorf("rate limiter wait: %w", err))
	}
	a.Metrics.Request(p.Name)
	return nil
}

// StartBulk starts the slice's bulk query, or adopts the one an earlier
// attempt started.
func (a *Activities) StartBulk(ctx context.Context, in BulkInput) (BulkState, error) {
	b, err := a.bulkRequest(ctx, in.Platform)
	if err != nil {
		return BulkState{}, err
	}
	op, err := b.StartBulk(ctx, in.From, in.To, a.Limiters.Meter(in.Platform))
	if err != nil {
		var busy *connectors.BulkBusyError
		if errors.As(err, &busy) {
			return BulkState{}, temporal.NewApplicationErrorWithOptions(err.Error(), ErrBulkBusy,
				temporal.ApplicationErrorOptions{NonRetryable: true})
		}
		return BulkState{}, a.bulkError(in, "start bulk query", err)
	}
	a.logger().Info("bulk query started", "platform", in.Platform.Name, "slice", in.SliceID, "operation", op.ID, "status", op.Status)
	return bulkState(op), nil
}

// PollBulk looks at the operation once.
func (a *Activities) PollBulk(ctx context.Context, in BulkInput) (BulkState, error) {
	b, err := a.bulkRequest(ctx, in.Platform)
	if err != nil {
		return BulkState{}, err
	}
	op, err := b.BulkStatus(ctx, in.ID, a.Limiters.Meter(in.Platform))
	if err != nil {
		return BulkState{}, a.bulkError(in, "look at bulk query", err)
	}
	return bulkState(op), nil
}

// CancelBulk cancels the operation of a slice that was cancelled.
func (a *Activities) CancelBulk(ctx context.Context, in BulkInput) error {
	b, err := a.bulkRequest(ctx, in.Platform)
	if err != nil {
		return err
	}
	if err := b.CancelBulk(ctx, in.ID, a.Limiters.Meter(in.Platform)); err != nil {
		return a.bulkError(in, "cancel bulk query", err)
	}
	a.logger().Info("bulk query cancelled", "platform", in.Platform.Name, "slice", in.SliceID, "operation", in.ID)
	return nil
}

// DownloadBulk stores the operation's result (or its partial data) in
// batches, heartbeating after each committed batch where the next one
// begins; a retried attempt (the worker died, the connection broke, the
// URL expired) resumes there with a freshly signed URL. Storing a batch
// twice would be harmless anyway (the store keeps the newest version).
func (a *Activities) DownloadBulk(ctx context.Context, in BulkInput) (FetchPageResult, error) {
	b, err := a.bulkConnector(in.Platform)
	if err != nil {
		return FetchPageResult{}, err
	}
	prog := bulkProgress{ID: in.ID, Partial: in.Partial}
	if activity.HasHeartbeatDetails(ctx) {
		var last bulkProgress
		if activity.GetHeartbeatDetails(ctx, &last) == nil && last.ID == in.ID && last.Partial == in.Partial {
			prog = last
		}
	}
	if err := a.request(ctx, in.Platform); err != nil {
		return prog.Counts, err
	}
	op, err := b.BulkStatus(ctx, in.ID, a.Limiters.Meter(in.Platform))
	if err != nil {
		return prog.Counts, a.bulkError(in, "look at bulk query", err)
	}
	url := op.URL
	if in.Partial {
		url = op.PartialDataURL
	}
	switch {
	case op.Status == connectors.BulkExpired:
		return prog.Counts, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s: bulk query %s of %s has expired; it runs again", in.Platform.Name, in.ID, in.SliceID), ErrBulkExpired, nil)
	case url == "":
		return prog.Counts, nil // nothing matched, or a failure that got nothing
	}
	page := FetchPageInput{Platform: in.Platform, SliceID: in.SliceID, From: in.From, To: in.To}
	// The read heartbeats the committed position about once a second also
	// while no batch completes (a long order, a slow host), so the
	// heartbeat timeout tells a stuck attempt from a busy one; what the
	// file may hold is bounded by the operation's own objectCount and
	// fileSize.
	read := connectors.BulkRead{URL: url, Offset: prog.Offset, Objects: prog.Objects, Batch: bulkBatchOrders,
		ObjectCount: op.ObjectCount, FileSize: op.FileSize, Beat: func() { activity.RecordHeartbeat(ctx, prog) }}
	err = b.ReadBulk(ctx, read, func(orders []connectors.Order, next int64) error {
		var res FetchPageResult
		page.Page = prog.Batches + 1
		res.Fetched = len(orders)
		toStore := a.screen(page, orders, &res)
		if len(toStore) > 0 {
			up, err := a.Store.UpsertOrders(ctx, toStore)
			if err != nil {
				return temporal.NewApplicationErrorWithCause(
					textclip.Message(fmt.Sprintf("store batch %d of bulk query %s of %s: %v", page.Page, textclip.Value(in.ID), in.SliceID, err)), ErrStore, boundedCause(err))
			}
			res.Inserted, res.Updated, res.Unchanged = up.Inserted, up.Updated, up.Unchanged
			res.Rejected += len(up.Rejected) // refused by the database alone (PostgreSQL backstop)
		}
		a.Metrics.Page(in.Platform.Name, res.Inserted, res.Updated, res.Unchanged)
		a.Metrics.NotStored(in.Platform.Name, res.Rejected, res.FutureStamped)
		prog.Counts.add(res)
		prog.Offset, prog.Batches = next, prog.Batches+1
		for _, o := range orders {
			prog.Objects += 1 + int64(len(o.Lines))
		}
		activity.RecordHeartbeat(ctx, prog)
		return nil
	})
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			return prog.Counts, err // the store's
		}
		var expired *connectors.BulkURLExpiredError
		if errors.As(err, &expired) {
			// Retried: the next attempt looks again and gets a fresh URL,
			// or learns the operation has expired.
			return prog.Counts, temporal.NewApplicationError(err.Error(), ErrTransient)
		}
		return prog.Counts, a.bulkError(in, "download bulk result", err)
	}
	if prog.Counts.OutsideRange > 0 {
		a.logger().Warn("platform returned orders outside the asked window",
			"platform", in.Platform.Name, "slice", in.SliceID, "operation", in.ID, "count", prog.Counts.OutsideRange)
	}
	return prog.Counts, nil
}

// add sums a batch's counts into r.
func (r *FetchPageResult) add(b FetchPageResult) {
	r.Fetched += b.Fetched
	r.Inserted += b.Inserted
	r.Updated += b.Updated
	r.Unchanged += b.Unchanged
	r.OutsideRange += b.OutsideRange
	r.Rejected += b.Rejected
	r.FutureStamped += b.FutureStamped
}

// bulkError counts and classifies a connector error.
func (a *Activities) bulkError(in BulkInput, what string, err error) error {
	var rl *connectors.RateLimitError
	if errors.As(err, &rl) {
		a.Limiters.Report(in.Platform.Name, rl.Limit)
	}
	var bound *connectors.BulkBoundError
	if errors.As(err, &bound) {
		// Not the operation's result: reading it again would store the
		// same junk. The slice pages instead.
		err = temporal.NewNonRetryableApplicationError(fmt.Sprintf("%s of %s: %v", what, in.SliceID, err), ErrPermanent, nil)
	} else {
		err = classify(fmt.Errorf("%s of %s: %w", what, in.SliceID, err))
	}
	a.Metrics.FetchError(in.Platform.Name, errorClass(err))
	return err
}
