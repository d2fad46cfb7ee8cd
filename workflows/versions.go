package workflows

// Every way workflow code tells old runs from new ones is listed in this
// file, with what it guards. doc.go ("Versioning") says which way to use
// when; versions_test.go fails if workflow code asks workflow.GetVersion
// for a change ID that is not declared here.

// Change IDs: workflow.GetVersion markers.
//
// Most are asked lazily, only at the point where the new rule would decide
// differently (a repeated token, a payload the old code accepted, a
// re-sweep to judge): ordinary runs then record no marker at all, and a
// history recorded before the change replays the old decision.
const (
	// versionAdaptiveSpan guards adaptive slice sizing: runs started before
	// it keep one-interval slices, so their histories replay unchanged.
	// Asked at the start of every cursor run (a run sizes its slices or
	// not), so it marks every run from the release that added it.
	versionAdaptiveSpan = "adaptive-backfill-span"

	// resweepFromFetchStart guards how a completed slice's re-sweep is
	// judged (slicequeue's scheduleResweep): the first version compared the
	// due time with when the slice finished, so a fetch that started early
	// but finished late (retried pages) got no re-sweep. Asked when a
	// regular slice completes while re-sweeps are on.
	resweepFromFetchStart = "resweep-from-fetch-start"

	// versionRepeatedToken guards FetchSlice's check for a next-page token
	// it has already followed (a platform paging in a cycle): the slice
	// fails at once instead of paging on until it splits. Asked lazily.
	versionRepeatedToken = "repeated-next-token"

	// versionStrictMessages guards the rejection of signal payloads with
	// unknown fields, and of dead-letter signals that do not belong to the
	// workflow's platform: before it they were applied or silently
	// dropped. Asked lazily, when a payload would be rejected.
	versionStrictMessages = "strict-signal-payloads"

	// versionConfigVerdict guards how a `config` signal is judged: from this
	// version the verdict of the settings check is recorded in history (a
	// side effect), so a check made stricter later cannot change how an
	// accepted signal replays. Runs before it judge with the structural
	// check of their time (config.Platform.ValidateStructure). Asked when a
	// config signal arrives.
	versionConfigVerdict = "config-verdict-recorded"

	// versionSliceGrid guards where a cursor places its slices and how it
	// names them (internal/slicequeue, grid.go): on the platform's grid of
	// whole intervals plus a stable per-platform phase, the start rounded
	// down to it, reprocess requests cut at its points, IDs printed without
	// zero microseconds (api.SliceWorkflowID). Before it, slices followed
	// one another from the unrounded start and were named in the v0.1
	// layout (api.SliceWorkflowIDV01). Asked at the start of every cursor
	// run, like versionAdaptiveSpan: a run that began before the change
	// (no marker) keeps its grid and its IDs until it continues as new;
	// the next run, and every cursor started since, aligns. Nothing about
	// the grid is carried: the phase follows from the platform's name and
	// interval, and Next says where the grid continues; an off-grid Next
	// (the old grid's, or an interval change) is bridged by one shorter
	// slice that ends on the next grid point, so no instant is skipped or
	// fetched twice. A v0.2 worker that continues an aligned run keeps
	// stepping one interval from an aligned Next, so stays on the grid.
	versionSliceGrid = "slice-grid"

	// versionSliceIDLayout guards the ID layout of the halves a dead-letter
	// workflow splits a reprocessed slice into (api.SliceWorkflowID, not
	// SliceWorkflowIDV01). Asked lazily, only when the two layouts would
	// name a half differently.
	versionSliceIDLayout = "slice-id-layout"

	// versionPlatformState guards the cursor's PlatformState search
	// attribute: from this version the cursor upserts its state (paused,
	// breaker_open, backfilling, caught_up) when it changes, an event the
	// histories of before do not hold. Asked when the state differs from
	// the attribute, which for a new run is its first loop turn.
	versionPlatformState = "platform-state-search-attribute"

	// versionCancelWhileIdle guards the cursor's reaction to a cancel
	// request while it waits with no timer and no slice in flight (paused
	// with nothing running): from this version it ends the run cancelled
	// at once; before it, the request went unnoticed until a message or a
	// slice woke the loop. Asked lazily, when the wait is woken by the
	// cancellation itself.
	versionCancelWhileIdle = "cancel-while-idle"

	// versionDensitySpan guards how a backfill learns its span
	// (internal/slicequeue, span.go): from this version a sparse slice
	// widens the span straight to what a quarter of max_pages holds at the
	// density seen, up to backfill_max_span (before: at most 8x a step),
	// and while a run has no span yet its first regular slice runs alone
	// until it reports (before: up to concurrency one-interval slices at
	// once). Asked lazily, only where the new rule decides differently (a
	// step over 8x; a slice held back), so a run recorded before the
	// change replays its old decisions.
	versionDensitySpan = "density-backfill-span"

	// versionBulkBackfill guards FetchSlice's bulk path (slice_bulk.go): a
	// Shopify GraphQL slice at least options.bulk_min_span wide runs as a
	// bulk query before (or, when that cannot deliver, instead of)
	// paging. Asked lazily, only for such a slice, so a history recorded
	// before it replays its pages. Eligibility is read with frozen
	// defaults and no settings check (slice_bulk_settings.go).
	versionBulkBackfill = "shopify-bulk-backfill"

	// versionDeliveryLanes guards max_in_flight above 1 (delivery in
	// lanes, delivery_lanes.go). Before it the only value accepted was 1:
	// a Delivery started with more failed at once, and a config signal
	// asking for more was refused. Asked lazily, only where a value above 1
	// is judged: at the start of a run whose settings ask for it, and when
	// a config signal does. A history without the marker keeps the old
	// verdict; runs with max_in_flight 1 record nothing and take the path
	// they always took.
	versionDeliveryLanes = "delivery-lanes"

	// versionPollHeartbeat guards the heartbeat timeout of the Delivery's
	// long-polling NextBatch activity (feedActivityContext): without it a
	// worker killed mid-poll stalled delivery until the start-to-close
	// timeout (50s). Asked where a NextBatch is scheduled as a regular
	// activity, which every run does first, so it marks every run from the
	// release that added it; a history without the marker keeps polling
	// without a heartbeat timeout.
	versionPollHeartbeat = "delivery-poll-heartbeat"

	// versionPoisonHold guards NextBatchRequest.OldestSetAside: from this
	// version the store's record of a destination's acknowledgement stays
	// below its oldest set-aside change, so compaction keeps that change
	// for a retry and a Delivery started anew delivers it again (before,
	// the record moved past it). Asked lazily, when a listing is made
	// while the poison list is not empty.
	versionPoisonHold = "delivery-poison-hold"

	// versionDeliverHeartbeat guards the heartbeat timeout of the
	// Delivery's DeliverChanges activity (deliverActivityContext): without
	// it a worker killed mid-batch stalled that batch until its
	// start-to-close timeout (the destination's timeout plus 5s). Asked
	// where a DeliverChanges is scheduled as a regular activity, so it
	// marks every run that delivers from the release that added it; a
	// history without the marker keeps delivering without a heartbeat
	// timeout. Lanes run as local activities (a backlog) have none.
	versionDeliverHeartbeat = "delivery-deliver-heartbeat"

	// versionAlertHandover guards continue-as-new with alerts in flight
	// (alerts.go): from this version a cursor, delivery or dead-letter run
	// cancels them and hands them to its next run in the input
	// (api.AlertHandover), which sends them again first; before it the run
	// waited until every alert was delivered, so a dead alert webhook held
	// fetching or delivery at the continue-as-new point. Asked lazily, only
	// when a run would continue as new but for alerts in flight, so a
	// history without the marker waits as it did.
	versionAlertHandover = "alert-handover"

	// versionBoundedText guards the bounds on untrusted text kept in
	// workflow state (messages.go, "Bounded text"): a signal whose payload
	// or kept text field (a pause reason) is over its limit is refused
	// instead of applied; a dead-letter workflow that holds
	// maxDeadLetterEntries merges its two closest entries to keep a new one; a failing slice clips its error before it
	// records it. Asked lazily, only when such a payload or text arrives (a
	// history without the marker applies it, clipped, as before; clipping
	// alone changes no command). Can go after release v0.7, once no run
	// of before it can replay.
	versionBoundedText = "bounded-untrusted-text"

	// versionRateLimitWait guards FetchSlice's answer to a page the
	// platform refused with its rate limit (activities.ErrRateLimited: 429,
	// THROTTLED): from this version the slice sleeps the platform's wait on
	// a durable timer and asks again without counting an attempt, within
	// rate_limit_wait (config.DefaultRateLimitWait when unset; changing
	// that default changes decisions too, so it needs a version of its
	// own); before it, the error failed the page once the activity's
	// retries, which it used up, ran out. Asked lazily, only when such an
	// error reaches the workflow (rateLimitWait), so a history without the
	// marker fails as it did. The activity marks the error
	// non-retryable from the same release, so a workflow worker of the
	// release before would fail such a page at once: worker versioning
	// (docs/production.md, Rolling upgrades) keeps old workflow code off new activity
	// workers. Can go after release v0.7, when no run recorded before it
	// can still be replayed.
	versionRateLimitWait = "rate-limit-wait"

	// versionDeadLetterAutoRetry guards the dead-letter workflow's
	// automatic retry (deadletter_retry.go): from this version an entry
	// whose cause is transient gets a due time
	// (api.DeadLetterEntry.NextRetryAt), one timer wakes the workflow for
	// the earliest, and the slice runs again as on an operator's
	// reprocess; another failure of such an entry raises no second alert;
	// the failure of a slice an operator discarded while it ran is dropped
	// (before, it came back as a new entry with an alert). Asked lazily,
	// the first time a run would schedule an entry, hold back an alert or
	// drop such a failure, so a history from before (no marker) schedules
	// nothing and alerts on every failure, as it did, until it continues
	// as new. The check can go once no dead-letter run begun before
	// release v0.7 is open (every one has continued as new since).
	versionDeadLetterAutoRetry = "dead-letter-auto-retry"

	// versionUndeclaredRetried guards what a slice does with a page whose
	// attempts all ended on workers whose platforms file lacks the platform
	// (activities.ErrNotDeclared; before it such an attempt was a
	// permanent error): the page is run again, after a wait, up to
	// maxUndeclaredRounds times, instead of the slice being dead-lettered.
	// Asked lazily, only when a page failed so. Can go after release v0.7.
	versionUndeclaredRetried = "undeclared-platform-retried"

	// versionSlotWaitAttempts guards how a page counts the attempts that
	// failed before one that found the request slots or points booked out
	// (activities.SlotWaitAnswer): from this version they count toward the
	// page's retries, so a page that fails between slot waits still ends in
	// the dead-letter workflow; before it every slot wait gave the page its
	// whole retry policy again. Asked lazily, only when a slot wait follows
	// failed attempts. Can go after release v0.7.
	versionSlotWaitAttempts = "slot-wait-attempts"

	// versionSliceHistoryBudget guards the end of a page's waiting once the
	// slice's history holds sliceHistoryBudget events: the page fails with
	// its wait's type (dead-lettered, retried automatically) instead of
	// waiting on until Temporal's history limit terminates the slice with
	// no dead letter. Asked lazily, only past the budget. Can go after
	// release v0.7.
	versionSliceHistoryBudget = "slice-history-budget"

	// versionStallAlert guards the cursor's stall alert (checkStall): from
	// this version a run wakes when slices have been in flight for
	// stall_alert without one reporting, and alerts once. Asked at the start
	// of every cursor run, like versionAdaptiveSpan: a run begun before it
	// keeps its timers as they were until it continues as new. Can go once
	// no cursor run begun before release v0.7 is open.
	versionStallAlert = "stall-alert"

	// versionBulkBudget guards the budget of a bulk slice's waits
	// (slice_bulk.go, bulkOverBudget): from this version a slice whose
	// bulk runs, busy waits and looks together pass maxBulkWait or
	// maxBulkHistory history events cancels its query and pages; before
	// it, only maxBulkPolls looks per run bounded them (three runs could
	// pass Temporal's history limit, and a long poll interval meant weeks).
	// Asked lazily, only when a budget is spent, so a slice recorded
	// before it that waited on replays its waits. Can go after release
	// v0.7, once no bulk slice started before it runs.
	versionBulkBudget = "shopify-bulk-budget"

	// versionDestinationByRef guards the verdict on a Delivery's `config`
	// signal since destinations travel by reference (api.DestinationSettings):
	// identity fields in the payload (url, secret, subject, brokers, topic,
	// allow_plaintext, platforms) are ignored, so a payload of tuning only
	// is accepted and one whose identity was invalid is no longer refused
	// for it; before it the payload was a whole config.Destination, checked
	// identity and all (checkDestinationByValue, frozen). Asked lazily,
	// only when the two verdicts differ, so a history recorded before it
	// replays its verdict. Can go after release v0.9, once no Delivery run
	// begun before it is open.
	versionDestinationByRef = "destination-settings-by-reference"

	// versionRefetchAgain guards the Refetch workflow's answer to the
	// api.RefetchSignalAgain signal (a webhook event for an order whose
	// refetch is in flight): from this version a signal received after a
	// fetch started makes the workflow fetch once more when it ends;
	// before it the signal was ignored. Asked lazily, only when a fetch
	// ended with such a signal pending, so the recorded refetch histories
	// (no signal) replay unchanged. Can go after release v0.10, once no
	// Refetch run begun before it is open (a refetch lasts minutes).
	versionRefetchAgain = "refetch-again"

	// versionHybridPacing guards the cursor's hybrid pacing
	// (cursor_pacing.go): a platform with webhook_interval asks the store
	// (local activity WebhookActivity) whether its webhooks are live when
	// its next regular slice's first interval settles, and while they are
	// holds that slice until webhook_interval has settled. Asked lazily,
	// only then, so a platform without webhook_interval records nothing
	// and every history recorded before it replays unchanged. Can go after
	// release v0.11, once no cursor run begun before it is open.
	versionHybridPacing = "hybrid-pacing"

	// versionInlineLive guards inline live windows (cursor_inline.go): a
	// caught-up cursor whose live_windows is inline (the default) fetches
	// a settled live window or re-sweep itself and starts a child Slice
	// workflow only to hand a failed or unfinished window over. Before it
	// every window was a child. Version 1 (inlinePageActivities) fetched
	// by one FetchPage activity per page, version 2 (inlineWindowActivity)
	// by one FetchWindow activity per window. Asked lazily, only when such
	// a window is launched, so a history recorded before it replays its
	// child starts. Can go after release v0.12, once no cursor run begun
	// before it is open.
	versionInlineLive = "inline-live-windows"
)

// Input versions: fields of a workflow's input that tell the workflow which
// rule to follow. They version a decision that belongs to another workflow
// than the one that changed (a child), or one the caller must be able to
// set; they need no marker, and a workflow started before the field existed
// reads its zero value, the old rule.
//
//   - api.SliceInput.LocalFirst: FetchSlice makes each page's first attempt
//     a local activity. Cursors and dead-letter workflows set it; slices
//     started before it page with regular activities only. (A cursor that
//     replays an older history asks for it too; the replayer does not
//     compare inputs, and the slice it started keeps the old rule.)
//   - api.SliceInput.FailedAsError: a dead-lettered slice ends its
//     workflow FAILED with an api.ErrSliceDeadLettered error carrying its
//     result, so the Web UI shows it failed. Cursors and dead-letter
//     workflows that read that error set it; a slice without it completes
//     with Outcome "failed" as before, and both callers read both forms,
//     so a rolling upgrade mixes them safely. (Like LocalFirst, a caller
//     replaying an older history asks for it too.)
//   - api.CursorInput.Alerts, api.DeliveryInput.Alerts and
//     api.DeadLetterInput.Alerts: alerts the previous run handed over
//     (versionAlertHandover), sent again at the start of the run. Runs
//     continued by older code carry none and send none. During a rolling
//     upgrade, a run continued by today's code whose first workflow task
//     a worker of the release before runs ignores the field: the alerts
//     it carries are lost. If a worker of today ran that task (and sent
//     them), an old worker replaying the run fails that task as
//     non-deterministic until a worker of today takes it again, which
//     Temporal retries; worker versioning (docs/production.md, Rolling upgrades) keeps
//     old workers from new runs.
//   - api.CursorInput.MaxSlicesPerRun: the cap on one cursor run travels in
//     the input, so changing the default never changes how a run replays.
//
// Carried state: what a cursor carries across continue-as-new is input to
// its next run, so a change to its form is a version too. Today's code
// reads the previous release's form, and writes it beside its own until no
// worker of the previous release runs.
//
//   - api.CursorState.Slices (v0.2): the slice lifecycle's snapshot. Runs
//     continued by v0.1 carry only api.SlicesV01, read when Slices is
//     absent; v0.2 writes both, so a v0.1 worker that picks up a run during
//     a rolling upgrade finds its slices. The v0.1 form can go in the
//     release after every worker runs v0.2 or later.
//
// Settings by reference (v0.8): the "platform" of cursor, slice,
// dead-letter, page, bulk and record-dead-letter inputs and the payload of
// the `config` signals are api.Settings, the tuning only. Before v0.8 they
// were the whole config.Platform, identity included. No marker is needed:
// no decision read the identity (activities already took it from the
// registry), and the JSON names and forms are those of config.Platform, so
// a recorded input decodes into api.Settings with its endpoint,
// credentials and allow_plaintext ignored. Only Shopify's bulk decision
// read the options; that decision is now the explicit api.Settings.Bulk,
// derived at the edge (config.Platform.Settings).
//
//   - api.Settings.LegacyOptions: the options of settings recorded before
//     v0.8, read by a slice of such a run for its bulk decision exactly as
//     it was (readLegacyBulk, frozen). Cursors and dead-letter workflows
//     turn them into Bulk when their run starts (withoutLegacyOptions), so
//     what they carry on and hand their slices holds no options. New code
//     never sets them. Can go after release v0.8, once no run started
//     before it remains.
//   - A `config` payload that still carries identity (old CLIs, a platform
//     entry sent by hand) is accepted with those fields dropped unread
//     (config.DecodeSettingsJSON); the kind and, when the payload has no
//     bulk, the bulk tuning stay the run's (settingsFromMessage).
//   - Destinations by reference: the "destination" of Delivery inputs and
//     the payload of a Delivery's `config` signal are
//     api.DestinationSettings (name, kind, revision and the tuning the
//     workflow decides by), no longer the whole config.Destination. The
//     JSON names are config.Destination's, so a recorded input decodes
//     with its url, secret, subject, brokers, topic, allow_plaintext and
//     platforms ignored, and the replay tests compare it as
//     api.DestinationSettings reads it. No legacy field is kept: the one
//     decision that read identity was the check of the input and of a
//     `config` payload (config.Destination.Validate). At the start it is
//     now the tuning check (config.ValidateDestinationSettings); the
//     starters check the whole destination before they start it, so no
//     Delivery they started failed there, and a run that did is closed.
//     A `config` signal is judged by today's rule unless the frozen rule
//     of before (checkDestinationByValue, which needs no input field: it
//     reads the payload) decides otherwise on a run recorded before
//     versionDestinationByRef. The activities take the whole destination
//     from the registry by name, as they did (activities.Deliveries).
//   - Rollback and mixed fleets: a worker of v0.7 or before refuses an
//     input without an endpoint (its structural check), so a cursor
//     started or continued by v0.8 fails InvalidInput if such a worker
//     takes its first task. Upgrade every worker before starting or
//     reconfiguring cursors with v0.8 (or use worker versioning, docs/production.md,
//     Rolling upgrades). The replay tests compare inputs as api.Settings
//     reads them (replay_test.go, settingsByReference).
//
// Not versioned: what only the Web UI reads. A child's user metadata
// (ChildWorkflowOptions.StaticSummary and StaticDetails) rides on its
// start command, which the replayer matches by type and the replay tests
// by ID, input, policies and search attributes; and current details
// (workflow.SetCurrentDetails) are answered by a query, never recorded.
// No decision depends on either.
//
// Not versioned either: the fairness key (internal/fairness) on child
// starts and scheduled activities. Priority rides on the command, which
// the SDK's replayer matches by ID and type only (and the replay tests by
// ID, input, queue, policies and search attributes), so a history
// recorded without keys replays unchanged; checked over every recorded
// history by `go test -run 'Replay|Version' ./workflows/`. The key only
// orders the task queue's backlog; no workflow decision reads it.
//
// Recorded verdicts: a check that may grow stricter between releases
// (settings validation) does not run in workflow code as such. Updates
// judge in their validator, which never replays; signals record the
// verdict (versionConfigVerdict, judgeSettings), so the next release's
// stricter check cannot turn an accepted signal into a refused one on
// replay.
