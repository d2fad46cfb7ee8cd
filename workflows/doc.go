// Package workflows holds ordersync's workflows: three that pull orders in
// and one that delivers them onward.
//
// # Overview
//
// PlatformCursor (cursor/<platform>) walks time in slices of the
// platform's interval, from the configured start to the present and then
// along with it, on the platform's slice grid (whole intervals shifted by
// a stable per-platform phase, so one window has one ID and a fleet's
// slices do not all fall due at once; versions.go, slice-grid), keeping up to `concurrency` FetchSlice children in flight.
// What to fetch next, how to split, when a slice has finished and how far
// the watermark may move are decided by the slice lifecycle,
// internal/slicequeue: plain Go with no Temporal in it, tested by table and
// property tests. The cursor only drives it (cursor.go): it starts the
// children the queue hands out, reports their results back, sleeps on one
// timer until the next thing can happen (cursor_wait.go), takes messages
// (cursor_messages.go) and continues as new with its state
// (cursor_state.go).
//
// FetchSlice (slice/<platform>/<start>-<end>) pages through the platform
// for [start - overlap, end); each page is one activity that fetches and
// stores in the same step. A slice that needs more than max_pages pages
// reports "split" and its parent runs the two halves instead.
//
// DeadLetter (deadletter/<platform>) holds slices that exhausted their
// retries, raises an alert for each, and runs them again on request, or on
// its own on the platform's backoff schedule when the cause is transient
// (deadletter_retry.go).
//
// Delivery (delivery/<destination>) moves one destination along the
// store's change feed. Its state is a sequence number, Acked: every change
// at or below it was confirmed by the destination (or set aside). Loop:
// wait while paused, the breaker is open, outside the work windows or out
// of rate tokens; list the seqs of the next batch after Acked (an activity
// that long-polls an idle feed, heartbeating so a killed worker's poll is
// taken over in seconds); deliver (After, last] (an activity that
// reads the changes and sends them, heartbeating likewise); on success
// Acked = last.
//
//	listed -> delivered -> Acked moves
//	       -> refused whole -> one change at a time -> refused alone -> poison list, Acked moves past it
//	       -> failed after retries -> backoff, or the breaker opens (alert) -> resume
//
// The store's record of the acknowledgement (what compaction and a
// Delivery started anew go by) stays below the oldest set-aside change.
// Only seqs and counts enter history. One batch at a time keeps the changes
// of each order in order. With max_in_flight N > 1 (delivery_lanes.go) the
// workflow lists a range of up to N batches split into lanes by order,
// delivers the lanes at once, and moves Acked to the range's end once every
// lane is confirmed; a failed lane is retried alone, the range and its
// unconfirmed lanes travel in the state (Pending), and the next range waits
// for this one, so each order's changes still arrive in order. While a
// backlog waits, listing and lanes run as local activities. Retried poison
// changes carry the order as stored
// now, so they never take a receiver back to an older version. Messages
// (pause, resume, retry, skip, config) come from one table as signals and
// updates; the run continues as new with its state after
// DefaultMaxBatchesPerRun batches or when the server suggests it.
//
// Refetch (refetch/<platform>/<order id>, refetch.go) fetches one order
// now through the platform's get-one-order call (`orders refetch`): one
// activity on the platform's task queue at a higher task priority than
// backfill, inside its request slots; rate waits sleep on timers. Starts
// use the conflict policy USE_EXISTING, so a second request for an order
// in flight joins the first. It touches no cursor and no watermark.
//
// # State model
//
// Each slice the cursor tracks is regular (it tiles time from the start),
// reprocess (an operator asked for it) or resweep (a recent window fetched
// once more, resweep_delay later), and in one state:
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
// Status shows running slices as in flight and queued ones as queued, or
// waiting (until their due time: a retry's back-off, a re-sweep not yet
// due). The cursor itself is always waiting for something with a name
// (api.Wait*): paused, breaker open, draining, concurrency limit, outside
// a work window, settling, retry back-off, re-sweep pending; one function
// (cursor.wait) gives both the reason status shows and the time the loop
// wakes at, so the two never disagree.
//
// # The watermark
//
// The watermark is the start of the oldest regular slice that has not
// finished, or, when none is tracked, the start of the next slice to add.
// A slice finishes when it completed, or when its failure is recorded in
// the dead-letter workflow (FetchSlice records it before it reports). So
// every instant before the watermark is either stored or visible and
// reprocessable there. Slices finishing out of order are held and never
// move the watermark past an unfinished one; splits replace a slice by two
// halves covering exactly its window; reprocess requests and re-sweeps
// never move the watermark. internal/slicequeue's property test checks
// these rules over random runs, and that it notices when one is broken.
//
// # Failure handling
//
// A page that fails is retried as the platform's retry settings say (first
// attempt a local activity, retries regular activities); a slice whose
// retries are exhausted, or that meets a permanent error, is recorded in
// the dead-letter workflow and then reports "failed": it ends FAILED with
// an api.ErrSliceDeadLettered error carrying its result, so the Web UI
// shows it failed, when its caller set api.SliceInput.FailedAsError (as
// cursors and the dead-letter workflow do), or else completes with
// Outcome "failed"; both callers read both (sliceOutcome). A slice that
// ended FAILED with any other error did not report. breaker_failures failed
// slices in a row pause the cursor (circuit breaker) and alert; resume
// closes it. A child that ends without reporting (it could not start
// because another run of its ID was open, or it was terminated or timed
// out) is started again after max(retry_interval, 10s), holding the
// watermark meanwhile. A caught-up cursor whose watermark falls lag_alert
// behind alerts once. Alerts (here, in the dead-letter workflow and in
// Delivery) go out through an activity that retries without limit; a run
// that continues as new hands the alerts still in flight to its next run,
// which sends them again, instead of waiting for them, so a dead alert
// webhook never holds fetching or delivery (alerts.go). Messages with
// payloads that are not valid never
// fail a workflow task: updates are rejected by their validator, signals
// leave the reason in status (last_error).
//
// # Messages
//
// Each cursor message (pause, resume, reprocess, config) is one row of
// cursorMessages, from which both its signal and its update are registered:
// the same decoding (strict; v0.1's lenient rule on old histories, see
// decodeSignal), the same check (the update's validator; for signals
// before applying, or as a recorded verdict where the check may grow
// stricter), the same apply. One wrapper reads the clock, applies and
// wakes the loop, for signals and updates alike. Before continuing as new
// the cursor waits for every update handler to finish, then applies the
// signals already delivered, so none is lost.
//
// # Settings by reference
//
// Workflows know a platform by its name and its tuning (api.Settings:
// interval, settle, overlap, concurrency, page and retry limits, windows,
// the Shopify bulk span, and the registry revision they were read at).
// Where requests go and with which secret (endpoint, credentials, options,
// allow_plaintext) is never in a workflow input or message: the page and
// bulk activities resolve it from the account registry by name
// (activities.ConnectorCache) and overlay the tuning. A `config` message
// changes the tuning only; identity fields in its payload are ignored. The
// checks are one rule (internal/tuning, used by config for the file and
// by the cursor for messages). Runs started with settings by value keep
// working (versions.go, "Settings by reference"). Destinations travel the
// same way: a Delivery knows its destination by name and tuning
// (api.DestinationSettings); the delivery activities resolve where to send
// and with which secret from the registry by name.
//
// # Versioning
//
// Workflow code reads time only through workflow.Now and must take the
// same path on replay. The rule, for every change to workflow code:
//
//  1. A change that would issue other commands (other slices, timers,
//     activities, markers; other inputs for them) for an existing history
//     gets a change ID in versions.go with a line on what it guards, and
//     asks workflow.GetVersion for it lazily, at the point where the new
//     rule would decide differently, so runs that never get there record
//     nothing.
//  2. A rule that belongs to a child, or that the caller must choose, is
//     versioned by a field of the workflow's input instead (listed in
//     versions.go); its zero value is the old rule.
//  3. Checks that may grow stricter (settings validation) stay at the edges:
//     update validators, which never replay, and recorded verdicts for
//     signals. Workflow code keeps only the frozen structural check.
//  4. The state carried across continue-as-new is read in the previous
//     release's form too, and written in it until no worker of the
//     previous release runs (versions.go, "Carried state").
//  5. Every release records histories from real runs into its own folder,
//     testdata/histories/<release>/ (make histories RELEASE=...), which is
//     never rewritten. Every folder replays in TestReplayRecordedHistories,
//     and TestReplayIssuesTheRecordedCommands compares each command's
//     content with the recorded event, which the SDK's replayer does not.
//     A history that stops replaying means the change needs rule 1 or 2:
//     fix the code, never re-record.
//
// # Worker deployments
//
// Workers may run as versions (builds) of a Temporal Worker Deployment
// (`ordersync worker --deployment-name --build-id`). Every workflow type is
// registered auto-upgrade (register.go): when a new build is promoted,
// each running cursor, slice, dead-letter and delivery workflow runs its
// next workflow task on it, replaying its history there; the rules above
// are what makes that safe, so versioning adds no rule of its own. Pinned
// was rejected: a cursor never completes, so pinning would hold the old
// build until every cursor continues as new, and pinned slices would strand
// (their tasks wait for the old build's workers) if that build stopped
// before they finished. With nothing pinned, the old build is drained as
// soon as the server's visibility catches up; "written in it until no
// worker of the previous release runs" (rule 4) means until the old build
// was drained and stopped. Unversioned workers ignore the behavior.
//
// # What the Web UI shows
//
// A cursor upserts the PlatformState search attribute when its state
// changes (backfilling, caught_up, paused, breaker_open) and keeps its
// current details (workflow.SetCurrentDetails: state, wait, watermark,
// lag, counts, breaker) up to date; children carry a static summary and
// details (kind, window), and a slice its progress and outcome as current
// details (details.go). Current details and user metadata are not
// versioned: the replayer ignores them and no decision depends on them.
//
// Work windows name time zones; the zone database is compiled in
// (tzdata.go) so that every worker opens a window at the same instant.
package workflows
