// Package workflows holds ordersync's three workflows.
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
// Workflow code reads time only through workflow.Now and must stay
// deterministic: replay tests in this package run recorded histories from
// testdata/histories against it.
package workflows
