package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

// Inline live windows (live_windows: inline, versionInlineLive). A
// caught-up cursor's live window is almost always one page, often empty;
// as a child workflow it cost a child start (two Temporal actions), the
// child's own workflow tasks, its marker batch and its search attribute
// upsert. Fetched here instead, by one FetchWindow activity that pages
// through the window with one attempt per page, it costs one activity
// beside the timer the cursor waits on anyway, however many pages
// (docs/performance.md, B12). The Web UI shows it as the FetchWindow
// activity in the cursor's history (window, counts).
//
// A regular activity, not a local one: a local activity would hold the
// cursor's workflow task open while the platform answers, so status
// queries, signals and updates would wait on a slow platform or a busy
// store (a status query timed out so in an e2e test); and a regular one
// goes through the task queue, where the worker's activities_per_second
// and the fairness keys apply, and may wait for the platform's request
// slots within its attempt. One activity per page (the first version)
// cost an action per page: 1.87x fewer than a child for a busy window,
// against 2.5x for an empty one.
//
// Nothing about failures changes: the first failed attempt hands the
// window to a child Slice workflow, which goes on from that page and
// attempt (api.SliceInput.Handover) with the platform's retries and
// waits, and dead-letters it as before, visible as a failed workflow. A
// window whose pages repeat a token, or that needs more than max_pages and
// cannot split, is handed over too: the slice workflow judges those.

// inlineEligible says whether s is a caught-up cursor's live window or
// re-sweep, fetched inline when the platform's live_windows allow it. A
// backlog of windows after an outage, a reprocess, a forced slice and a
// bulk-sized window stay child workflows, each visible on its own.
func (c *cursor) inlineEligible(s slicequeue.Slice) bool {
	if !c.platform.InlineLiveWindows() || !c.q.CaughtUp() || s.Force {
		return false
	}
	switch {
	case s.Kind == slicequeue.Resweep:
	case s.Kind == slicequeue.Regular:
		live := c.platform.Settle.D() + 2*time.Duration(max(c.batch, 1))*c.platform.Interval.D()
		if c.now.Sub(s.End) > live {
			return false
		}
	default:
		return false
	}
	probe := sliceRun{in: api.SliceInput{Platform: c.platform, Start: s.Start, End: s.End}}
	return !probe.bulkEligible()
}

// handoverWhy says, in a handed-over slice's details, why the cursor did
// not finish the window itself.
func handoverWhy(h *api.Handover) string {
	if h == nil {
		return ""
	}
	why := fmt.Sprintf("\n\nThe cursor fetched this live window itself (live_windows: inline) and handed it over at page %d", h.Page)
	if h.Attempt != nil {
		return why + ", whose first attempt failed: " + h.Attempt.Message
	}
	return why + "."
}

// startInline fetches s in a coroutine of the cursor. Its future settles
// as a child's would: with the window's result, or with the result or
// error of the child it was handed to, so onChildDone reads both alike.
func (c *cursor) startInline(ctx workflow.Context, s slicequeue.Slice, version workflow.Version) {
	f, settle := workflow.NewFuture(ctx)
	c.children[s.ID] = f
	c.startedThisRun++
	workflow.Go(ctx, func(ctx workflow.Context) {
		fetch := c.fetchWindow
		if version == inlinePageActivities {
			fetch = c.fetchInline
		}
		res, handover, err := fetch(ctx, s)
		if err != nil || handover == nil {
			settle.Set(res, err)
			return
		}
		in := c.sliceInput(s)
		in.Handover = handover
		var out api.SliceResult
		err = c.executeSlice(ctx, s, in).Get(ctx, &out)
		settle.Set(out, err)
	})
}

// Versions of versionInlineLive: how an inline window is fetched.
const (
	// inlinePageActivities: one FetchPage activity per page (v0.11's
	// first recording); a busy window cost an action per page.
	inlinePageActivities workflow.Version = 1
	// inlineWindowActivity: one FetchWindow activity per window, however
	// many pages (fetchWindow).
	inlineWindowActivity workflow.Version = 2
)

// inlineWindowPages caps the pages one FetchWindow activity fetches: its
// start-to-close timeout is that many page timeouts, which is how long a
// worker that died mid-window holds the window before the handover.
const inlineWindowPages = 10

// fetchWindow fetches s with one FetchWindow activity, which pages
// through it with one attempt per page. A handover says where a child
// Slice workflow goes on; err is only the cursor's cancellation.
func (c *cursor) fetchWindow(ctx workflow.Context, s slicequeue.Slice) (api.SliceResult, *api.Handover, error) {
	p := c.platform
	pages := min(p.MaxPages, inlineWindowPages)
	in := activities.FetchWindowInput{Platform: p, SliceID: s.ID, From: s.Start.Add(-p.Overlap.D()), To: s.End, MaxPages: pages}
	var r activities.FetchWindowResult
	if err := workflow.ExecuteActivity(windowActivityContext(ctx, p, pages), acts.FetchWindow, in).Get(ctx, &r); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return api.SliceResult{}, nil, cerr
		}
		// The activity timed out (a worker died) or could not run: which
		// pages it stored is unknown, so the slice starts afresh.
		return api.SliceResult{}, &api.Handover{Page: 1, Attempt: activities.AttemptOf(err)}, nil
	}
	res, h := r.Counted, r.Stopped
	switch {
	case h == nil:
		res.Outcome = api.SliceCompleted
		return res, nil, nil
	case h.Attempt == nil && h.Page > p.MaxPages && s.End.Sub(s.Start) >= 2*MinSliceSpan:
		res.Outcome = api.SliceSplit // as a slice that reached max_pages
		return res, nil, nil
	}
	h.Counted = res
	return res, h, nil
}

// fetchInline pages through s with FetchPage activities, one attempt per
// page: runs recorded with inlinePageActivities replay it. A handover says where a child Slice workflow goes on; err is only
// the cursor's cancellation.
func (c *cursor) fetchInline(ctx workflow.Context, s slicequeue.Slice) (res api.SliceResult, handover *api.Handover, err error) {
	p := c.platform
	actx := inlinePageActivityContext(ctx, p)
	canSplit := s.End.Sub(s.Start) >= 2*MinSliceSpan
	followed := tokenLog{}
	token := ""
	for page := 1; ; page++ {
		if page > p.MaxPages {
			if !canSplit {
				return res, &api.Handover{Page: page, Token: token, Counted: res}, nil
			}
			res.Outcome = api.SliceSplit
			return res, nil, nil
		}
		in := activities.FetchPageInput{Platform: p, SliceID: s.ID, From: s.Start.Add(-p.Overlap.D()), To: s.End, Token: token, Page: page}
		var r activities.FetchPageResult
		if ferr := workflow.ExecuteActivity(actx, acts.FetchPage, in).Get(ctx, &r); ferr != nil {
			if cerr := ctx.Err(); cerr != nil {
				return res, nil, cerr
			}
			return res, &api.Handover{Page: page, Token: token, Attempt: activities.AttemptOf(ferr), Counted: res}, nil
		}
		activities.AddPage(&res, r)
		if r.NextToken == "" {
			res.Outcome = api.SliceCompleted
			return res, nil, nil
		}
		if _, seen := followed.add(r.NextToken, page); seen {
			// A stall or a cycle: the slice workflow judges which.
			return res, &api.Handover{Page: page + 1, Token: r.NextToken, Counted: res}, nil
		}
		token = r.NextToken
	}
}
