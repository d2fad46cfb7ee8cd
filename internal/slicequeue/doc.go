// Package slicequeue is the life of a cursor's slices, as plain Go: which
// slice starts next, splitting, completion, re-sweeps, reprocess requests
// and the watermark. It imports no Temporal package, reads no clock and does
// no I/O; the PlatformCursor workflow (package workflows) drives it with
// timers, child workflows and messages, and carries its Snapshot across
// continue-as-new.
//
// # Slices
//
// A slice is a half-open window [Start, End) of order update time, of one
// of three kinds. Regular slices tile time from the cursor's start: each
// new one starts at Next, where the last one ended, and covers one or more
// whole intervals (span.go). With Rules.Aligned they lie on the platform's
// grid (grid.go): whole intervals shifted by a per-platform phase, the
// start rounded down to it, and a Next off the grid bridged by one shorter
// slice up to the next grid point. With Rules.Batch (hybrid pacing) a
// regular slice near the present waits until Batch grid intervals have
// settled and covers them all. Reprocess slices fetch a range again at an
// operator's request, cut at the grid's points when it is aligned (so a
// regular slice's window gets its ID again). Resweep slices fetch a recent regular slice's window
// once more when it is resweep_delay old. Only regular slices hold the
// watermark; the others come after them in launch priority.
//
// # State model
//
//	 new regular slice,           Launch: due, settled,
//	 reprocess, re-sweep          in a work window or forced,
//	────────────────────► queued ─────────────────────────────► running
//	                       ▲  ▲   no slice of its ID running     │  │  │
//	                       │  └──── Retry: no report, due ───────┘  │  │
//	                       │        after a back-off                │  │
//	                       └─────── Split: two halves take ─────────┘  │
//	                                its place                          │ completed or
//	                                                                   │ dead-lettered
//	                                               other kinds ◄───────┤
//	                                               dropped             │ regular
//	                                                                   ▼
//	                                                                  held
//	                                                                   │ every earlier regular
//	                                                                   ▼ slice has finished
//	                                                           below the watermark
//
// A queued slice whose Due is still ahead is "waiting" (until Due) in
// status: a retry's back-off, or a re-sweep that is not due yet.
//
// # The watermark
//
// The watermark is the start of the first regular slice the queue still
// tracks, or Next when there is none. Regular slices tile [Watermark, Next)
// with no gap and no overlap; a finished regular slice is held until every
// earlier one has finished, and only then drops below the watermark. So
// every instant before the watermark lies in a regular slice that completed
// or whose failure is recorded in the dead-letter workflow (where it is
// visible and reprocessable), slices finishing out of order never move the
// watermark past an unfinished one, and reprocess requests and re-sweeps
// never move it at all. A split replaces its slice in place by two halves
// that cover exactly its window, so coverage survives splitting.
// property_test.go checks these rules over random runs, and checks that it
// notices when they are broken.
//
// # Failures
//
// A slice that fails records itself in the dead-letter workflow before it
// reports (workflows.FetchSlice), so DeadLettered counts as finished. A
// child that ends without a report (it could not start because another
// run of its ID was open, or it was terminated or timed out) is queued
// again with a back-off (Retry); it keeps holding the watermark meanwhile.
package slicequeue
