package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/slicequeue"
)

// Inline live windows (live_windows: inline, versionInlineLive). A
// caught-up cursor's live window is almost always one page, often empty;
// as a child workflow it cost a child start (two Temporal actions), the
// child's own workflow tasks, its marker and its search attribute upsert.
// Fetched here instead, by local activities in the cursor's workflow task,
// it costs one marker batch beside the timer the cursor waits on anyway
// (docs/performance.md, B12). The Web UI shows the fetch as the FetchPage
// local activity in the cursor's history (window, page, counts).
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

// startInline fetches s in a coroutine of the cursor. Its future settles
// as a child's would: with the window's result, or with the result or
// error of the child it was handed to, so onChildDone reads both alike.
func (c *cursor) startInline(ctx workflow.Context, s slicequeue.Slice) {
	f, settle := workflow.NewFuture(ctx)
	c.children[s.ID] = f
	c.startedThisRun++
	workflow.Go(ctx, func(ctx workflow.Context) {
		res, handover, err := c.fetchInline(ctx, s)
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

// fetchInline pages through s with local activities, one attempt per
// page. A handover says where a child Slice workflow goes on; err is only
// the cursor's cancellation.
func (c *cursor) fetchInline(ctx workflow.Context, s slicequeue.Slice) (res api.SliceResult, handover *api.Handover, err error) {
	p := c.platform
	lctx := localPageActivityContext(ctx, p)
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
		if ferr := workflow.ExecuteLocalActivity(lctx, acts.FetchPage, in).Get(ctx, &r); ferr != nil {
			if cerr := ctx.Err(); cerr != nil {
				return res, nil, cerr
			}
			return res, &api.Handover{Page: page, Token: token, Attempt: failedAttemptOf(ferr), Counted: res}, nil
		}
		addPage(&res, r)
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
