package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/store"
)

func windowInput(maxPages int) FetchWindowInput {
	return FetchWindowInput{Platform: testPlatform().Settings(), SliceID: "slice/shop/a-b", From: t0, To: t0.Add(time.Hour), MaxPages: maxPages}
}

func runWindow(t *testing.T, f *fixture, in FetchWindowInput) FetchWindowResult {
	t.Helper()
	val, err := f.env.ExecuteActivity(f.acts.FetchWindow, in)
	require.NoError(t, err)
	var res FetchWindowResult
	require.NoError(t, val.Get(&res))
	return res
}

// pages answers ListOrders with one order per page and a next token until
// the last page; fail, when set, answers that page with an error instead.
func pages(t *testing.T, f *fixture, last int, fail map[int]error) *[]connectors.PageRequest {
	var asked []connectors.PageRequest
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, req connectors.PageRequest) (connectors.Page, error) {
		req.Meter, req.Progress = nil, nil
		asked = append(asked, req)
		if err := fail[req.Page]; err != nil {
			return connectors.Page{}, err
		}
		p := connectors.Page{Orders: []connectors.Order{{ID: string(rune('a' + req.Page)), UpdatedAt: t0.Add(time.Minute)}}}
		if req.Page < last {
			p.NextToken = "after-" + string(rune('0'+req.Page))
		}
		return p, nil
	}).AnyTimes()
	f.store.EXPECT().UpsertOrders(gomock.Any(), gomock.Any()).Return(store.UpsertResult{Inserted: 1}, nil).AnyTimes()
	return &asked
}

// TestFetchWindowPagesThroughTheWindow: every page in turn, each with the
// token the page before returned, counts summed, done.
func TestFetchWindowPagesThroughTheWindow(t *testing.T) {
	f := newFixture(t)
	asked := pages(t, f, 3, nil)
	res := runWindow(t, f, windowInput(10))
	require.Nil(t, res.Stopped)
	require.Equal(t, api.SliceResult{Outcome: api.SliceCompleted, Pages: 3, OrdersFetched: 3, OrdersInserted: 3}, res.Counted)
	require.Len(t, *asked, 3)
	require.Equal(t, "", (*asked)[0].Token)
	require.Equal(t, "after-1", (*asked)[1].Token)
	require.Equal(t, "after-2", (*asked)[2].Token)
}

// TestFetchWindowStopsAtAFailedPage: a failed page is not retried here;
// the result says which page, its token, the attempt's error (type,
// message, retryability, the platform's wait) and what came before.
func TestFetchWindowStopsAtAFailedPage(t *testing.T) {
	f := newFixture(t)
	asked := pages(t, f, 5, map[int]error{2: &connectors.RateLimitError{Platform: "shop", RetryAfter: 7 * time.Second}})
	res := runWindow(t, f, windowInput(10))
	require.Len(t, *asked, 2, "the failed page is tried once")
	require.NotNil(t, res.Stopped)
	require.Equal(t, 2, res.Stopped.Page)
	require.Equal(t, "after-1", res.Stopped.Token)
	require.Equal(t, 1, res.Stopped.Counted.Pages)
	a := res.Stopped.Attempt
	require.NotNil(t, a)
	require.Equal(t, ErrRateLimited, a.Type)
	require.Equal(t, 7*time.Second, a.RetryAfter)
	require.Contains(t, a.Message, "page 2 of slice/shop/a-b")
}

// TestFetchWindowStopsAtItsPageCap: a window with more pages than the
// activity may fetch stops at the next page, untried, with its token.
func TestFetchWindowStopsAtItsPageCap(t *testing.T) {
	f := newFixture(t)
	asked := pages(t, f, 50, nil)
	res := runWindow(t, f, windowInput(4))
	require.Len(t, *asked, 4)
	require.Equal(t, &api.Handover{Page: 5, Token: "after-4", Counted: res.Counted}, res.Stopped)
	require.Equal(t, 4, res.Counted.Pages)
}

// TestFetchWindowStopsWhenATokenComesBack: a token handed out again is a
// stall or a cycle; the slice workflow judges which, so the window stops.
func TestFetchWindowStopsWhenATokenComesBack(t *testing.T) {
	f := newFixture(t)
	f.conn.EXPECT().ListOrders(gomock.Any(), gomock.Any()).Return(connectors.Page{NextToken: "same"}, nil).Times(2)
	res := runWindow(t, f, windowInput(10))
	require.NotNil(t, res.Stopped)
	require.Equal(t, 3, res.Stopped.Page)
	require.Equal(t, "same", res.Stopped.Token)
	require.Nil(t, res.Stopped.Attempt)
}
