package workflows

import (
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/fairness"
	"github.com/ordersync/ordersync/internal/searchattr"
)

// Bulk backfill. A Shopify slice at least options.bulk_min_span wide (a
// backfill slice: live slices are one interval) runs as one bulk query
// instead of pages: StartBulk, then a durable timer and a short PollBulk
// until Shopify is done, then DownloadBulk streams the result into the
// store, heartbeating its position so a retried attempt resumes there.
// Nothing is held open while Shopify works, and only ids, states and counts
// enter history. When the bulk query cannot deliver the whole window (it
// FAILED: its partial data is stored first; it was busy, expired or
// cancelled too often; any error), the slice pages through the window as
// usual: bulk is a shortcut, never the only way, so nothing is lost.

const (
	// maxBulkRuns bounds how often one slice starts its bulk query again
	// after the result expired or someone cancelled it.
	maxBulkRuns = 3
	// maxBulkPolls bounds the looks at one operation (with the default
	// poll interval, almost 6 hours); past it the slice cancels the query
	// and pages instead, so a stuck operation cannot grow history forever.
	maxBulkPolls = 2000
	// maxBulkBusyWaits bounds how long a slice waits for the shop to run
	// fewer bulk queries before it pages instead.
	maxBulkBusyWaits = 200
	// maxBulkWait and maxBulkHistory bound all of a slice's bulk waits
	// together (versionBulkBudget): every run, busy wait and look. Past
	// either the slice cancels its query and pages. Each look costs ~11
	// history events, so maxBulkPolls alone, three runs over, would pass
	// Temporal's 51,200-event limit; 20,000 events leave the paging that
	// follows more than half of it. Six hours is what maxBulkPolls meant
	// at the default poll interval; with a longer interval it would have
	// meant up to two weeks.
	maxBulkWait    = 6 * time.Hour
	maxBulkHistory = 20_000
)

// bulkOverBudget says whether the slice's bulk waits have spent their
// time or history budget and should give up for paging. The version is
// asked only then (lazily), so a slice recorded before it, which waited
// on, replays its waits.
func (s *sliceRun) bulkOverBudget(ctx workflow.Context, began time.Time) bool {
	spent := workflow.Now(ctx).Sub(began)
	events := workflow.GetInfo(ctx).GetCurrentHistoryLength()
	if spent < maxBulkWait && events < maxBulkHistory {
		return false
	}
	if workflow.GetVersion(ctx, versionBulkBudget, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return false
	}
	workflow.GetLogger(ctx).Warn("bulk query waited past its budget; paging the slice instead", "slice", s.id,
		"waited", spent.String(), "history_events", events, "budget", maxBulkWait.String(), "event_budget", maxBulkHistory)
	return true
}

// bulkEligible says whether the slice runs as a bulk query.
func (s *sliceRun) bulkEligible() bool {
	return readBulkSettings(s.in.Platform, s.in.End.Sub(s.in.Start)).use
}

// bulkActivityContext is for the short bulk calls: the page's timeout and
// retries.
func bulkActivityContext(ctx workflow.Context, s *sliceRun) workflow.Context {
	return pageActivityContext(ctx, s.in.Platform)
}

// bulkDownloadContext is for the download: as long as a large file needs,
// with a heartbeat after every stored batch so a dead worker is noticed
// and its successor resumes.
func bulkDownloadContext(ctx workflow.Context, s *sliceRun) workflow.Context {
	opts := pageActivityOptions(s.in.Platform)
	beat := max(2*opts.StartToCloseTimeout, 30*time.Second)
	opts.StartToCloseTimeout = max(time.Hour, opts.StartToCloseTimeout)
	opts.HeartbeatTimeout = beat
	opts.RetryPolicy.NonRetryableErrorTypes = append(opts.RetryPolicy.NonRetryableErrorTypes, activities.ErrBulkExpired)
	return workflow.WithActivityOptions(ctx, opts)
}

// runBulk fetches the slice as bulk queries. It reports whether the whole
// window is stored; false means page through it. Its only error is the
// slice's cancellation, after cancelling the running operation.
func (s *sliceRun) runBulk(ctx workflow.Context) (bool, error) {
	p := s.in.Platform
	poll := readBulkSettings(p, s.in.End.Sub(s.in.Start)).poll
	log := workflow.GetLogger(ctx)
	in := activities.BulkInput{Platform: p, SliceID: s.id, From: s.in.Start.Add(-p.Overlap.D()), To: s.in.End}
	began := workflow.Now(ctx)
	for run := 1; run <= maxBulkRuns; run++ {
		if run > 1 && s.bulkOverBudget(ctx, began) {
			return false, nil
		}
		st, err := s.startBulk(ctx, in, poll, began)
		if err != nil || st.ID == "" {
			if isCanceled(ctx, err) {
				return false, err
			}
			log.Warn("bulk query did not start; paging the slice instead", "slice", s.id, "error", errText(err))
			return false, nil
		}
		in.ID, in.Partial = st.ID, false
		s.res.BulkOperations++
		st, err = s.awaitBulk(ctx, in, st, poll, began)
		if err != nil {
			if isCanceled(ctx, err) {
				s.cancelBulk(ctx, in)
				return false, err
			}
			log.Warn("bulk query lost; paging the slice instead", "slice", s.id, "operation", in.ID, "error", errText(err))
			return false, nil
		}
		switch st.Status {
		case connectors.BulkCompleted:
			err := s.downloadBulk(ctx, in)
			switch {
			case err == nil:
				return true, nil
			case isCanceled(ctx, err):
				return false, err
			case errorType(err) == activities.ErrBulkExpired:
				continue
			}
			log.Warn("bulk result not stored; paging the slice instead", "slice", s.id, "operation", in.ID, "error", errText(err))
			return false, nil
		case connectors.BulkFailed:
			log.Warn("bulk query failed; storing its partial data, then paging the slice", "slice", s.id,
				"operation", in.ID, "error_code", st.ErrorCode, "partial", st.HasPartial)
			if st.HasPartial {
				in.Partial = true
				if err := s.downloadBulk(ctx, in); isCanceled(ctx, err) {
					return false, err
				}
			}
			return false, nil
		case connectors.BulkCanceled, connectors.BulkExpired:
			log.Warn("bulk query ended without a result; running it again", "slice", s.id, "operation", in.ID, "status", st.Status)
			continue
		default: // gave up waiting
			s.cancelBulk(ctx, in)
			return false, nil
		}
	}
	return false, nil
}

// startBulk starts the operation, waiting on a timer while the shop runs
// as many bulk queries as it allows.
func (s *sliceRun) startBulk(ctx workflow.Context, in activities.BulkInput, poll time.Duration, began time.Time) (activities.BulkState, error) {
	var st activities.BulkState
	for waits := 0; ; waits++ {
		err := workflow.ExecuteActivity(bulkActivityContext(ctx, s), acts.StartBulk, in).Get(ctx, &st)
		if err == nil || errorType(err) != activities.ErrBulkBusy || waits >= maxBulkBusyWaits || s.bulkOverBudget(ctx, began) {
			return st, err
		}
		if err := workflow.Sleep(ctx, poll); err != nil {
			return st, err
		}
	}
}

// awaitBulk looks at the operation every poll until it has ended. A state
// other than an ending one means it gave up: after maxBulkPolls looks, or
// past the slice's bulk budget (bulkOverBudget).
func (s *sliceRun) awaitBulk(ctx workflow.Context, in activities.BulkInput, st activities.BulkState, poll time.Duration, began time.Time) (activities.BulkState, error) {
	for n := 0; n < maxBulkPolls; n++ {
		// What the Web UI shows meanwhile; current details never enter history.
		workflow.SetCurrentDetails(ctx, fmt.Sprintf("**bulk query** %s: %s, %d objects so far\n\n%s",
			st.ID, st.Status, st.ObjectCount, sliceDetails(searchattr.StateRunning, s.res)))
		switch st.Status {
		case connectors.BulkCompleted, connectors.BulkFailed, connectors.BulkCanceled, connectors.BulkExpired:
			return st, nil
		}
		if s.bulkOverBudget(ctx, began) {
			return st, nil
		}
		if err := workflow.Sleep(ctx, poll); err != nil {
			return st, err
		}
		if err := workflow.ExecuteActivity(bulkActivityContext(ctx, s), acts.PollBulk, in).Get(ctx, &st); err != nil {
			return st, err
		}
	}
	return st, nil
}

// downloadBulk stores the result (or the partial data) and counts it.
func (s *sliceRun) downloadBulk(ctx workflow.Context, in activities.BulkInput) error {
	var r activities.FetchPageResult
	if err := workflow.ExecuteActivity(bulkDownloadContext(ctx, s), acts.DownloadBulk, in).Get(ctx, &r); err != nil {
		return err
	}
	s.countPage(r)
	return nil
}

// cancelBulk cancels the slice's operation, also when the slice itself is
// being cancelled (a disconnected context), so Shopify stops working for
// nobody and the shop's bulk slot frees up. A failure is logged: Shopify
// ends the operation on its own.
func (s *sliceRun) cancelBulk(ctx workflow.Context, in activities.BulkInput) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	actx := workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
		TaskQueue:           s.in.Platform.TaskQueue,
		Priority:            fairness.Priority(s.in.Platform.Name),
		StartToCloseTimeout: max(s.in.Platform.Timeout.D(), 10*time.Second),
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{activities.ErrPermanent}},
	})
	if err := workflow.ExecuteActivity(actx, acts.CancelBulk, in).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("could not cancel the bulk query", "slice", s.id, "operation", in.ID, "error", err)
	}
}

// isCanceled says whether err is the slice's own cancellation.
func isCanceled(ctx workflow.Context, err error) bool {
	var canceled *temporal.CanceledError
	return err != nil && (errors.As(err, &canceled) || ctx.Err() != nil)
}

func errText(err error) string {
	if err == nil {
		return "no operation id"
	}
	return rootMessage(err)
}
