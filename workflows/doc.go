// Package workflows holds ordersync's workflows: three that pull orders in
// and one that delivers them onward.
//
// PlatformCursor (cursor/<platform>) walks time in slices of the platform's
// interval, from the configured start to the present and then along with it.
// It keeps up to `concurrency` FetchSlice children in flight and starts a
// slice only once its end is at least `settle` in the past.
//
// The watermark rule: the watermark is the start of the oldest regular slice
// that has not finished, or, when none is pending, the start of the next
// slice to schedule. A slice "finishes" when it completed or when its failure
// is recorded in the dead-letter workflow, so every instant before the
// watermark is either stored or visible and reprocessable. Slices completing
// out of order never move the watermark past an unfinished one.
//
// FetchSlice (slice/<platform>/<start>-<end>) pages through the platform for
// [start - overlap, end); each page is one activity that fetches and stores
// in the same step. A slice that needs more than max_pages pages reports
// "split" and its parent runs the two halves instead.
//
// DeadLetter (deadletter/<platform>) holds slices that exhausted their
// retries, raises an alert for each, and runs them again on request.
//
// Delivery (delivery/<destination>) moves one destination along the
// store's change feed. Its state is a sequence number, Acked: every change
// at or below it was confirmed by the destination (or set aside). Loop:
// wait while paused, the breaker is open, outside the work windows or out
// of rate tokens; list the seqs of the next batch after Acked (an activity
// that long-polls an idle feed); deliver (After, last] (an activity that
// reads the changes and sends them); on success Acked = last.
//
//	listed -> delivered -> Acked moves
//	       -> refused whole -> one change at a time -> refused alone -> poison list, Acked moves past it
//	       -> failed after retries -> backoff, or the breaker opens (alert) -> resume
//
// Only seqs and counts enter history. One batch at a time keeps the changes
// of each order in order; retried poison changes carry the order as stored
// now, so they never take a receiver back to an older version. Messages
// (pause, resume, retry, skip, config) come from one table as signals and
// updates; the run continues as new with its state after
// DefaultMaxBatchesPerRun batches or when the server suggests it.
//
// Workflow code reads time only through workflow.Now and must stay
// deterministic: replay tests in this package run recorded histories from
// testdata/histories against it.
package workflows
