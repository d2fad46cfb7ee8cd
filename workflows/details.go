package workflows

import (
	"fmt"
	"strings"
	"time"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/searchattr"
)

// What the Temporal Web UI shows of ordersync's workflows besides their
// status: a child slice's summary and details (user metadata, fixed when
// it starts), a workflow's current details (workflow.SetCurrentDetails,
// Temporal markdown). Current details live in the worker's memory and are
// answered by the __temporal_workflow_metadata query the UI sends; they
// cost no history event, and a replay rebuilds them.

// uiTime is how the Web UI texts write instants: UTC, to the second.
const uiTime = "2006-01-02 15:04:05Z"

// sliceSummary is a slice child's one-line summary in the Web UI: its kind
// and window.
func sliceSummary(kind string, start, end time.Time) string {
	return fmt.Sprintf("%s slice %s → %s", kind, start.UTC().Format(uiTime), end.UTC().Format(uiTime))
}

// sliceStaticDetails says what a slice child fetches and why.
func sliceStaticDetails(kind, platform string, start, end time.Time, overlap time.Duration, why string) string {
	return fmt.Sprintf("**Platform** %s · **kind** %s\n\n**Window** [%s, %s) (%s)\n\n**Requested** [%s, %s): the window plus %s of overlap\n\n%s",
		platform, kind, start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano), end.Sub(start),
		start.Add(-overlap).UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano), overlap, why)
}

// sliceDetails is a slice's current details: its state so far or its
// outcome, with pages and orders.
func sliceDetails(state string, r api.SliceResult) string {
	var b strings.Builder
	switch state {
	case searchattr.StateRunning:
		fmt.Fprintf(&b, "**running**: %d page(s) so far", r.Pages)
	case searchattr.StateFailed:
		fmt.Fprintf(&b, "**failed** after %d page(s): %s", r.Pages, r.Error)
		if r.ErrorType != "" {
			fmt.Fprintf(&b, " (%s)", r.ErrorType)
		}
		b.WriteString("\n\nRecorded in the dead-letter workflow, where it can be reprocessed.")
	case "split":
		fmt.Fprintf(&b, "**split** after %d page(s): more than max_pages; its two halves run instead", r.Pages)
	default:
		fmt.Fprintf(&b, "**%s**: %d page(s)", state, r.Pages)
	}
	fmt.Fprintf(&b, "\n\n**Orders** %d fetched: %d new, %d updated, %d unchanged", r.OrdersFetched, r.OrdersInserted, r.OrdersUpdated, r.OrdersUnchanged)
	if n := r.OrdersRejected + r.OrdersFutureStamped; n > 0 {
		fmt.Fprintf(&b, "; %d not stored (%d rejected, %d future-stamped)", n, r.OrdersRejected, r.OrdersFutureStamped)
	}
	return b.String()
}

// deadLetteredMessage is the failure a dead-lettered slice ends with
// (api.ErrSliceDeadLettered): the cause, as the dead-letter entry has it.
func deadLetteredMessage(r api.SliceResult, attempts int) string {
	cause := r.Error
	if r.ErrorType != "" {
		cause += " (" + r.ErrorType + ")"
	}
	return fmt.Sprintf("slice dead-lettered after %d attempt(s) of page %d: %s", attempts, r.Pages+1, cause)
}

// platformState is the cursor's state in one word (searchattr.Platform*),
// for the PlatformState search attribute and the details' first line.
func (c *cursor) platformState() string {
	switch {
	case c.rec.BreakerOpen:
		return searchattr.PlatformBreakerOpen
	case c.rec.Paused:
		return searchattr.PlatformPaused
	case c.q.CaughtUp():
		return searchattr.PlatformCaughtUp
	default:
		return searchattr.PlatformBackfilling
	}
}

// details is the cursor's current details for the Web UI, built from its
// status. asOf dates the lag, which grows between updates.
func (c *cursor) details(s api.CursorStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** · waiting: %s", c.platformState(), s.Waiting)
	if !s.WaitUntil.IsZero() {
		fmt.Fprintf(&b, " until %s", s.WaitUntil.UTC().Format(uiTime))
	}
	fmt.Fprintf(&b, "\n\n**Watermark** %s · **lag** %s as of %s", s.Watermark.UTC().Format(uiTime),
		time.Duration(s.LagSeconds*float64(time.Second)).Round(time.Second), s.AsOf.UTC().Format(uiTime))
	fmt.Fprintf(&b, "\n\n**Slices** %d in flight, %d queued · %d completed, %d failed, %d split",
		len(s.InFlight), len(s.Queued), s.Counts.SlicesCompleted, s.Counts.SlicesFailed, s.Counts.SlicesSplit)
	fmt.Fprintf(&b, "\n\n**Orders** %d fetched: %d new, %d updated · %d pages",
		s.Counts.OrdersFetched, s.Counts.OrdersInserted, s.Counts.OrdersUpdated, s.Counts.Pages)
	breaker := "closed"
	if s.BreakerOpen {
		breaker = "open"
	}
	fmt.Fprintf(&b, "\n\n**Breaker** %s, %d failed slice(s) in a row", breaker, s.ConsecutiveFailures)
	if n := c.platform.BreakerFailures; n > 0 {
		fmt.Fprintf(&b, " (opens at %d)", n)
	}
	if s.LastError != "" {
		fmt.Fprintf(&b, "\n\n**Last error** %s", s.LastError)
	}
	return b.String()
}
