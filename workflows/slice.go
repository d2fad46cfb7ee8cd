package workflows

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/textclip"
)

// MinSliceSpan is the smallest window a slice splits into; below it the
// slice pages on without a page limit rather than split forever.
const MinSliceSpan = time.Second

// runawayPageFactor bounds paging of an unsplittable slice at this many
// times max_pages, so a platform that hands out next tokens forever ends in
// the dead-letter workflow instead of looping.
const runawayPageFactor = 20

// FetchSlice fetches every page of one slice and stores the orders.
func FetchSlice(ctx workflow.Context, in api.SliceInput) (api.SliceResult, error) {
	if !in.Start.Before(in.End) {
		return api.SliceResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("slice start %s is not before end %s", in.Start, in.End), "InvalidInput", nil)
	}
	s := &sliceRun{in: in, id: workflow.GetInfo(ctx).WorkflowExecution.ID}
	return s.run(ctx)
}

type sliceRun struct {
	in  api.SliceInput
	id  string
	res api.SliceResult
}

func (s *sliceRun) run(ctx workflow.Context) (api.SliceResult, error) {
	p := s.in.Platform
	pageCtx := pageActivityContext(ctx, p)
	if s.bulkEligible() && workflow.GetVersion(ctx, versionBulkBackfill, workflow.DefaultVersion, 1) >= 1 {
		done, err := s.runBulk(ctx)
		if err != nil {
			return s.res, err // cancelled
		}
		if done {
			s.res.Outcome = api.SliceCompleted
			return s.finish(ctx, searchattr.StateCompleted)
		}
	}
	canSplit := s.in.End.Sub(s.in.Start) >= 2*MinSliceSpan
	first, token, handover := 1, "", s.in.Handover
	if handover != nil && handover.Page > 1 {
		first, token, s.res = handover.Page, handover.Token, handover.Counted
	}
	followed := tokenLog{}
	stalls := 0
	for page := first; ; page++ {
		if page > p.MaxPages && canSplit {
			s.res.Outcome = api.SliceSplit
			return s.finish(ctx, "split")
		}
		if page > p.MaxPages*runawayPageFactor {
			return s.fail(ctx, fmt.Errorf("page %d: the platform keeps returning next-page tokens for a %s window", page, s.in.End.Sub(s.in.Start)), 1)
		}
		in := activities.FetchPageInput{
			Platform: p,
			SliceID:  s.id,
			From:     s.in.Start.Add(-p.Overlap.D()),
			To:       s.in.End,
			Token:    token,
			Page:     page,
		}
		var r activities.FetchPageResult
		var err error
		attempts := 0
		switch {
		case page == first && handover != nil && handover.Attempt != nil:
			r, attempts, err = s.afterLocalFailure(ctx, p, in, inlineAttemptError(*handover.Attempt))
		case s.in.LocalFirst:
			r, attempts, err = s.fetchPageLocalFirst(ctx, p, in)
		default:
			r, attempts, err = s.fetchPageRegular(ctx, pageCtx, in, p.Retries+1, &pageWaits{})
		}
		if undeclared(err) {
			r, attempts, err = s.fetchUndeclaredAgain(ctx, pageCtx, p, in, attempts, err)
		}
		if err != nil {
			return s.fail(ctx, err, attempts)
		}
		s.countPage(r)
		workflow.SetCurrentDetails(ctx, sliceDetails(searchattr.StateRunning, s.res))
		if r.NextToken == "" {
			break
		}
		// An empty page that hands back the token it was asked with says
		// "nothing here yet, ask again" (the simulator does, and real
		// platforms do on a slow index): followed a few times in a row. Any
		// other repeat, or too many stalls, is a cycle.
		stall := r.Fetched == 0 && r.NextToken == token
		if stall {
			stalls++
		} else {
			stalls = 0
		}
		if first, seen := followed.add(r.NextToken, page); seen && (!stall || stalls > maxStalls) &&
			workflow.GetVersion(ctx, versionRepeatedToken, workflow.DefaultVersion, 1) >= 1 {
			return s.fail(ctx, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
				"page %d returned the next-page token that page %d returned before (%s): the platform pages in a cycle",
				page, first, tokenDigest(r.NextToken)), activities.ErrPermanent, nil), 1)
		}
		token = r.NextToken
	}
	s.res.Outcome = api.SliceCompleted
	return s.finish(ctx, searchattr.StateCompleted)
}

// maxStalls is how many empty pages in a row may hand back the token they
// were asked with before the slice counts it as a cycle.
const maxStalls = 5

// tokenLog remembers every next-page token a slice followed (by digest, as
// tokens can be long URLs) and the page that returned it, so a platform that
// hands out a token again is caught on the spot instead of after
// max_pages x runawayPageFactor requests.
type tokenLog map[[sha256.Size]byte]int

// add records that page returned token; if some earlier page returned the
// same token, it reports that page and true.
func (l tokenLog) add(token string, page int) (int, bool) {
	k := sha256.Sum256([]byte(token))
	if first, ok := l[k]; ok {
		return first, true
	}
	l[k] = page
	return 0, false
}

// tokenDigest names a token in an error without repeating it: a token may
// embed a signed URL.
func tokenDigest(token string) string {
	k := sha256.Sum256([]byte(token))
	return fmt.Sprintf("token sha256:%x, %d bytes", k[:6], len(token))
}

// fetchPageLocalFirst makes a page's first attempt a local activity and hands
// any retries to a regular activity. A local activity runs inside the slice's
// workflow task, with no activity task through the server: the happy path
// costs one marker in history instead of three events and two round trips,
// which is most of ordersync's overhead per page (docs/performance.md).
// Retries stay regular activities, so back-offs are server timers, each
// attempt is visible in the Web UI, and a long outage holds no workflow task
// open. The waits mirror the platform's retry settings exactly as one
// activity would: retry_interval, then growing by retry_backoff.
// Re-running a local attempt after a worker crash re-fetches and re-upserts
// the page, which the store makes harmless. The int is the attempts made,
// for the dead-letter entry of a page that failed.
func (s *sliceRun) fetchPageLocalFirst(ctx workflow.Context, p api.Settings, in activities.FetchPageInput) (activities.FetchPageResult, int, error) {
	var r activities.FetchPageResult
	err := workflow.ExecuteLocalActivity(localPageActivityContext(ctx, p), acts.FetchPage, in).Get(ctx, &r)
	if err == nil {
		return r, 1, nil
	}
	return s.afterLocalFailure(ctx, p, in, err)
}

// afterLocalFailure goes on from a page's failed local first attempt
// (err): made by this slice, or by its cursor inline
// (api.SliceInput.Handover).
func (s *sliceRun) afterLocalFailure(ctx workflow.Context, p api.Settings, in activities.FetchPageInput, err error) (activities.FetchPageResult, int, error) {
	var r activities.FetchPageResult
	waits := &pageWaits{}
	if d, ok := slotWait(err); ok {
		// The request slots are booked out: the attempt did not run. Wait
		// on a durable timer, not in the workflow task, then run the page
		// as a regular activity with the whole retry policy.
		if err := workflow.Sleep(ctx, d); err != nil {
			return r, 0, err
		}
		return s.fetchPageRegular(ctx, pageActivityContext(ctx, p), in, p.Retries+1, waits)
	}
	if d, _, ok := rateLimitWait(ctx, err); ok {
		// The platform answered with its rate limit: no attempt used, the
		// page runs as a regular activity with its whole retry policy once
		// the platform's wait is over.
		if err := waits.wait(ctx, s, in.Page, d, err); err != nil {
			return r, 1, err
		}
		return s.fetchPageRegular(ctx, pageActivityContext(ctx, p), in, p.Retries+1, waits)
	}
	if p.Retries == 0 || !retryable(err) {
		return r, 1, err
	}
	wait := p.RetryInterval.D()
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NextRetryDelay() > 0 {
		wait = app.NextRetryDelay() // the platform's Retry-After
	}
	if err := workflow.Sleep(ctx, wait); err != nil {
		return r, 1, err
	}
	r, attempts, err := s.fetchPageRegular(ctx, pageRetryActivityContext(ctx, p), in, p.Retries, waits)
	return r, 1 + attempts, err
}

// maxSlotWaits bounds how often one page waits for a request slot, so a
// platform whose rate is set to almost nothing ends in the dead-letter
// workflow, visible, rather than waiting forever.
const maxSlotWaits = 10000

// fetchPageRegular runs a page as regular activities with the retry policy
// of actx, maxAttempts attempts in all. Waiting is not failing: a slot wait
// (ErrSlotWait: the platform's rate is booked out for longer than an
// attempt may wait) and a rate-limit answer (ErrRateLimited: the platform
// said 429 or THROTTLED) make the workflow sleep on a durable timer and ask
// again, and neither counts as an attempt. Attempts that failed for other
// reasons before a rate-limit answer count: the page asks again with the
// attempts left. The int is the attempts made, for the dead-letter entry of
// a failed page.
func (s *sliceRun) fetchPageRegular(ctx workflow.Context, actx workflow.Context, in activities.FetchPageInput, maxAttempts int, waits *pageWaits) (activities.FetchPageResult, int, error) {
	var r activities.FetchPageResult
	used := 0 // attempts that failed and count
	for slotWaits := 0; ; {
		err := workflow.ExecuteActivity(withAttempts(actx, maxAttempts, used), acts.FetchPage, in).Get(ctx, &r)
		if err == nil {
			return r, 0, nil
		}
		if d, ok := slotWait(err); ok {
			if slotWaits >= maxSlotWaits {
				return r, used + 1, err
			}
			if over, ferr := overHistoryBudget(ctx, in.Page, err); over {
				return r, used + 1, ferr
			}
			slotWaits++
			used = min(used+slotWaitCounted(ctx, err), maxAttempts-1)
			if err := workflow.Sleep(ctx, d); err != nil {
				return r, 0, err
			}
			continue
		}
		if d, counted, ok := rateLimitWait(ctx, err); ok {
			if over, ferr := overHistoryBudget(ctx, in.Page, err); over {
				return r, used + 1, ferr
			}
			used = min(used+counted, maxAttempts-1)
			if err := waits.wait(ctx, s, in.Page, d, err); err != nil {
				return r, used + 1, err
			}
			continue
		}
		return r, used + attemptsOf(err, maxAttempts-used), err
	}
}

// withAttempts is actx allowing the attempts of maxAttempts that used has
// not spent; actx itself while none are spent, so a page that never met a
// rate limit schedules exactly what it always did.
func withAttempts(actx workflow.Context, maxAttempts, used int) workflow.Context {
	if used == 0 {
		return actx
	}
	opts := workflow.GetActivityOptions(actx)
	if opts.RetryPolicy == nil {
		return actx
	}
	rp := *opts.RetryPolicy
	rp.MaximumAttempts = int32(max(1, maxAttempts-used))
	opts.RetryPolicy = &rp
	return workflow.WithActivityOptions(actx, opts)
}

// maxUndeclaredRounds bounds how often a page whose attempts all landed
// on workers that do not declare its platform is run again: a platform no
// worker declares ends in the dead-letter workflow, visible, after about
// that many rounds of the platform's retries.
const maxUndeclaredRounds = 10

// undeclared says whether a page attempt ran on a worker whose platforms
// file lacks the platform (workers sharing a task queue may read different
// files): no request was sent, and another worker may take the next one.
func undeclared(err error) bool {
	var app *temporal.ApplicationError
	return errors.As(err, &app) && app.Type() == activities.ErrNotDeclared
}

// fetchUndeclaredAgain runs a page whose last attempt found no declaration
// again, with the platform's whole retry policy, after waiting the
// longest retry interval, until a worker that declares the platform takes
// it or maxUndeclaredRounds rounds have failed so. With retries 0 the one
// attempt on the wrong worker would otherwise have dead-lettered the slice.
func (s *sliceRun) fetchUndeclaredAgain(ctx, pageCtx workflow.Context, p api.Settings, in activities.FetchPageInput, attempts int, err error) (activities.FetchPageResult, int, error) {
	var r activities.FetchPageResult
	if workflow.GetVersion(ctx, versionUndeclaredRetried, workflow.DefaultVersion, 1) < 1 {
		return r, attempts, err
	}
	wait := max(p.MaxRetryInterval.D(), p.RetryInterval.D(), time.Second)
	for round := 0; round < maxUndeclaredRounds && undeclared(err); round++ {
		workflow.GetLogger(ctx).Warn("page ran only on workers that do not declare the platform; running it again",
			"platform", p.Name, "page", in.Page, "wait", wait)
		if serr := workflow.Sleep(ctx, wait); serr != nil {
			return r, attempts, serr
		}
		var more int
		r, more, err = s.fetchPageRegular(ctx, pageCtx, in, p.Retries+1, &pageWaits{})
		attempts += more
	}
	return r, attempts, err
}

// sliceHistoryBudget is the history length past which a page stops
// waiting (for request slots, points or the platform's rate-limit answers)
// and fails, so the slice ends in the dead-letter workflow, visible and
// retried on its own, before Temporal's 51,200-event limit terminates it
// with no entry and no alert. Each wait costs about ten events.
const sliceHistoryBudget = 40000

// overHistoryBudget says whether the slice's history has outgrown
// sliceHistoryBudget while a page waits, and the error to fail the page
// with: the wait's own type, so the dead letter retries automatically.
// Asked lazily (versionSliceHistoryBudget), only once the budget is spent.
func overHistoryBudget(ctx workflow.Context, page int, err error) (bool, error) {
	n := workflow.GetInfo(ctx).GetCurrentHistoryLength()
	if n <= sliceHistoryBudget || workflow.GetVersion(ctx, versionSliceHistoryBudget, workflow.DefaultVersion, 1) < 1 {
		return false, err
	}
	return true, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
		"page %d stopped waiting: the slice's history holds %d events, past its budget of %d; the last wait: %s",
		page, n, sliceHistoryBudget, rootMessage(err)), errorType(err), nil)
}

// slotWaitCounted is how many attempts of the activity failed for other
// reasons before the one that found the slots booked out (they count; the
// wait does not): 0 for a first attempt, and for answers of activities
// from before activities.SlotWaitAnswer. Asked lazily
// (versionSlotWaitAttempts), only when earlier attempts failed.
func slotWaitCounted(ctx workflow.Context, err error) int {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || !app.HasDetails() {
		return 0
	}
	var answer activities.SlotWaitAnswer
	if app.Details(&answer) != nil || answer.Attempt <= 1 {
		return 0
	}
	if workflow.GetVersion(ctx, versionSlotWaitAttempts, workflow.DefaultVersion, 1) < 1 {
		return 0
	}
	return answer.Attempt - 1
}

// slotWait says whether a page attempt only found the platform's request
// slots booked out, and how long to wait before asking again.
func slotWait(err error) (time.Duration, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrSlotWait {
		return 0, false
	}
	if d := app.NextRetryDelay(); d > 0 {
		return d, true
	}
	return time.Second, true
}

// rateLimitWait says whether a page attempt was the platform's rate-limit
// answer (activities.ErrRateLimited) and the page waits it out: how long
// (the platform's wait), and how many attempts of the activity failed for
// other reasons before the refused one (they count). Runs recorded before
// versionRateLimitWait, asked here and only here, failed the page instead.
func rateLimitWait(ctx workflow.Context, err error) (time.Duration, int, bool) {
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrRateLimited {
		return 0, 0, false
	}
	if workflow.GetVersion(ctx, versionRateLimitWait, workflow.DefaultVersion, 1) < 1 {
		return 0, 0, false
	}
	answer := activities.RateLimitAnswer{Attempt: 1}
	if app.HasDetails() {
		_ = app.Details(&answer) // an answer without details counted no attempt before it
	}
	d := app.NextRetryDelay()
	if d <= 0 {
		d = time.Second
	}
	return d, max(answer.Attempt-1, 0), true
}

// rateLimitPatience is how many rate-limit answers in a row a page waits
// exactly as the platform says; after them it waits at least
// rate_limit_wait / maxRateLimitAnswers, so a platform that asks for a
// second at a time cannot fill the slice's history with thousands of
// timers and attempts (each is about five events) before the budget ends.
const (
	rateLimitPatience   = 50
	maxRateLimitAnswers = 500
)

// pageWaits is one page's rate-limit answers: when the first came and how
// many, against the platform's rate_limit_wait.
type pageWaits struct {
	since   time.Time
	answers int
}

// wait sleeps d, the platform's wait after a rate-limit answer (cause),
// showing it in the slice's current details, or fails the page as
// rate-limited when the wait would end past rate_limit_wait after the
// page's first such answer.
func (w *pageWaits) wait(ctx workflow.Context, s *sliceRun, page int, d time.Duration, cause error) error {
	now := workflow.Now(ctx)
	if w.answers == 0 {
		w.since = now
	}
	w.answers++
	budget := s.in.Platform.RateLimitWaitOrDefault()
	if w.answers > rateLimitPatience {
		d = max(d, budget/maxRateLimitAnswers)
	}
	waited := now.Sub(w.since)
	if waited+d > budget {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"page %d: rate limited %d time(s) over %s; waiting %s more would pass rate_limit_wait %s; last answer: %s",
			page, w.answers, waited.Round(time.Second), d.Round(time.Second), budget, rootMessage(cause)), activities.ErrRateLimited, nil)
	}
	workflow.SetCurrentDetails(ctx, sliceDetails(searchattr.StateRunning, s.res)+fmt.Sprintf(
		"\n\n**waiting** for the platform's rate limit on page %d: answer %d, asking again in %s (waited %s of rate_limit_wait %s)",
		page, w.answers, d.Round(time.Second), waited.Round(time.Second), budget))
	return workflow.Sleep(ctx, d)
}

// retryable says whether a failed attempt may be tried again: not when the
// activity said so (a permanent error) nor when the workflow is cancelled.
func retryable(err error) bool {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && (app.NonRetryable() || app.Type() == activities.ErrPermanent) {
		return false
	}
	var canceled *temporal.CanceledError
	return !errors.As(err, &canceled)
}

// countPage adds a stored page's counts to the slice's result (paged and
// bulk slices alike).
func (s *sliceRun) countPage(r activities.FetchPageResult) {
	activities.AddPage(&s.res, r)
}

// fail records the slice in the dead-letter workflow before reporting it, so
// the cursor may move its watermark past the slice only once the failure is
// visible and reprocessable there.
func (s *sliceRun) fail(ctx workflow.Context, cause error, attempts int) (api.SliceResult, error) {
	now := workflow.Now(ctx)
	s.res.Outcome = api.SliceFailed
	s.res.Error = rootMessage(cause)
	s.res.ErrorType = errorType(cause)
	// The error may quote platform text (a 400 KB id of U+0001 is 2.4 MB
	// JSON-encoded): scheduling RecordDeadLetter with it failed this task,
	// for good. A history of before the clip recorded what it had.
	if textclip.Over(s.res.Error, textclip.MessageMax) && workflow.GetVersion(ctx, versionBoundedText, workflow.DefaultVersion, 1) >= 1 {
		s.res.Error = textclip.Message(s.res.Error)
	}
	entry := api.DeadLetterEntry{
		SliceID:       s.id,
		Platform:      s.in.Platform.Name,
		Start:         s.in.Start,
		End:           s.in.End,
		Error:         s.res.Error,
		ErrorType:     s.res.ErrorType,
		Attempts:      attempts,
		FirstFailedAt: now,
		LastFailedAt:  now,
	}
	err := workflow.ExecuteActivity(bookkeepingActivityContext(ctx, s.in.Platform), acts.RecordDeadLetter,
		activities.RecordDeadLetterInput{Platform: s.in.Platform, Entry: entry}).Get(ctx, nil)
	if err != nil {
		return s.res, fmt.Errorf("record %s in the dead-letter workflow: %w", s.id, err)
	}
	workflow.GetLogger(ctx).Warn("slice dead-lettered", "slice", s.id, "error", s.res.Error)
	res, _ := s.finish(ctx, searchattr.StateFailed)
	if !s.in.FailedAsError {
		return res, nil // a caller of before api.SliceInput.FailedAsError reads the outcome
	}
	// Ending FAILED is what the Web UI shows as failed (status, Failures);
	// the details carry the result, so the caller learns the outcome as
	// from a completed slice.
	return res, temporal.NewNonRetryableApplicationError(deadLetteredMessage(s.res, attempts),
		api.ErrSliceDeadLettered, nil, s.res)
}

func (s *sliceRun) finish(ctx workflow.Context, state string) (api.SliceResult, error) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, searchattr.SliceState.ValueSet(state)); err != nil {
		workflow.GetLogger(ctx).Warn("could not set SliceState", "error", err)
	}
	workflow.SetCurrentDetails(ctx, sliceDetails(state, s.res))
	return s.res, nil
}

// deadLettered reads the result of a slice that ended FAILED with
// ErrSliceDeadLettered (api.SliceInput.FailedAsError): a slice whose
// failure is recorded in the dead-letter workflow. Any other error is a
// slice that did not report.
func deadLettered(err error) (api.SliceResult, bool) {
	var app *temporal.ApplicationError
	if err == nil || !errors.As(err, &app) || app.Type() != api.ErrSliceDeadLettered || !app.HasDetails() {
		return api.SliceResult{}, false
	}
	var res api.SliceResult
	if app.Details(&res) != nil || res.Outcome != api.SliceFailed {
		return api.SliceResult{}, false
	}
	return res, true
}

// sliceOutcome reads a finished slice child: its result, from a completed
// run or from one that failed dead-lettered; err is set when it did not
// report.
func sliceOutcome(ctx workflow.Context, f workflow.Future) (api.SliceResult, error) {
	var res api.SliceResult
	err := f.Get(ctx, &res)
	if r, ok := deadLettered(err); ok {
		return r, nil
	}
	return res, err
}

// rootMessage is the innermost failure message, without Temporal's wrapping.
func rootMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message() // Error() appends "(type: ..., retryable: ...)"
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "activity timed out: " + timeout.Error()
	}
	return err.Error()
}

func errorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "Timeout"
	}
	return ""
}

// attemptsOf says how many attempts a failed activity made: all of them when
// the retry policy ran out, else unknown and reported as 1 or more.
func attemptsOf(err error, maxAttempts int) int {
	var act *temporal.ActivityError
	if errors.As(err, &act) && act.RetryState() == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED {
		return maxAttempts
	}
	return 1
}

// inlineAttemptError is the failed attempt a cursor made inline, as the
// error afterLocalFailure judges: the same type, message, retryability
// and wait as the local activity's error carried.
func inlineAttemptError(a api.FailedAttempt) error {
	return temporal.NewApplicationErrorWithOptions(a.Message, a.Type,
		temporal.ApplicationErrorOptions{NonRetryable: a.NonRetryable, NextRetryDelay: a.RetryAfter})
}
