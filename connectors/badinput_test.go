package connectors_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/connectors"
)

// The bad-input matrix of docs/reliability.md, at the connector and page
// activity level: each platform misbehaviour either fails with a clear,
// classified error, or is handled and every order the platform showed is
// stored in its newest version.

// TestBadInputOrdersOutsideTheWindow: a platform that ignores the asked
// window. Orders inside it are all stored; those outside are stored too
// (harmless: the newest version wins) and counted, and an old out-of-window
// version never overwrites a newer stored one.
func TestBadInputOrdersOutsideTheWindow(t *testing.T) {
	all := []string{
		orderJSON("in-1", "2026-03-01T10:00:00Z"), orderJSON("early", "2026-03-01T08:00:00Z"),
		orderJSON("in-2", "2026-03-01T10:04:59.999999Z"), orderJSON("late", "2026-03-01T12:00:00Z"),
		orderJSON("in-3", "2026-03-01T10:09:00Z"), orderJSON("renewed", "2026-03-01T07:00:00Z"),
	}
	e := newEvilPlatform(t, func(r evilRequest) (int, string) {
		if r.Token == "" { // ignores the window, pages by three
			return 200, pageJSON("2", all[:3]...)
		}
		return 200, pageJSON("", all[3:]...)
	})
	p := e.platform(t, "evil-window")
	pl := newPipeline(t)
	// The store already holds a newer version of "renewed".
	_, _, err := pl.fetchSlice(newEvilPlatform(t, func(evilRequest) (int, string) {
		return 200, pageJSON("", orderJSON("renewed", "2026-03-01T11:00:00Z"))
	}).platform(t, "evil-window"), evilFrom, evilFrom.Add(2*time.Hour))
	require.NoError(t, err)

	sum, _, err := pl.fetchSlice(p, evilFrom, evilFrom.Add(10*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 6, sum.Fetched)
	require.Equal(t, 3, sum.OutsideRange, "early, late and renewed lie outside [10:00, 10:10)")
	pl.requireHolds(p.Name, map[string]string{
		"in-1": "2026-03-01T10:00:00Z", "in-2": "2026-03-01T10:04:59.999999Z", "in-3": "2026-03-01T10:09:00Z",
		"renewed": "2026-03-01T11:00:00Z", // not regressed to 07:00
	})
}

// TestBadInputDuplicateIDs: the same order twice in one page (identical,
// and in two versions) and again on a later page, older and newer. The
// store ends with each order's newest version and every copy is counted.
func TestBadInputDuplicateIDs(t *testing.T) {
	pages := map[string]string{
		"": pageJSON("p2",
			orderJSON("A", "2026-03-01T10:01:00Z"), orderJSON("B", "2026-03-01T10:02:00Z"),
			orderJSON("A", "2026-03-01T10:03:00Z"), orderJSON("B", "2026-03-01T10:02:00Z")),
		"p2": pageJSON("",
			orderJSON("A", "2026-03-01T10:01:00Z"), orderJSON("C", "2026-03-01T10:04:00Z"),
			orderJSON("B", "2026-03-01T10:05:00Z")),
	}
	e := newEvilPlatform(t, func(r evilRequest) (int, string) { return 200, pages[r.Token] })
	p := e.platform(t, "evil-dups")
	pl := newPipeline(t)
	sum, _, err := pl.fetchSlice(p, evilFrom, evilFrom.Add(10*time.Minute))
	require.NoError(t, err)
	require.Equal(t, activities.FetchPageResult{Fetched: 7, Inserted: 3, Updated: 2, Unchanged: 2}, sum,
		"A and B inserted, A updated within page 1, B duplicate unchanged; page 2: old A unchanged, C inserted, B updated")
	pl.requireHolds(p.Name, map[string]string{"A": "2026-03-01T10:03:00Z", "B": "2026-03-01T10:05:00Z", "C": "2026-03-01T10:04:00Z"})
}

// TestBadInputTimeZones: update times in other zones and at nanosecond
// precision are compared by instant, not by wall clock, and stored in UTC.
// A time without a zone is ambiguous and rejected with the order named.
func TestBadInputTimeZones(t *testing.T) {
	shown := map[string]string{
		"kolkata":  "2026-03-01T15:35:00+05:30",        // 10:05Z: inside [10:00, 10:10)
		"la":       "2026-03-01T02:06:00-08:00",        // 10:06Z
		"nanos":    "2026-03-01T10:07:00.123456789Z",   // stored at µs precision
		"paris":    "2026-03-01T11:08:00+01:00",        // 10:08Z
		"wallfool": "2026-03-01T10:05:00+05:30",        // 04:35Z: outside, although it reads 10:05
		"kiribati": "2026-03-02T00:01:00.000001+14:00", // 10:01:00.000001Z
	}
	var orders []string
	for id, ts := range shown {
		orders = append(orders, orderJSON(id, ts))
	}
	e := newEvilPlatform(t, func(evilRequest) (int, string) { return 200, pageJSON("", orders...) })
	p := e.platform(t, "evil-zones")
	pl := newPipeline(t)
	sum, _, err := pl.fetchSlice(p, evilFrom, evilFrom.Add(10*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, sum.OutsideRange, "only wallfool lies outside the window")
	pl.requireHolds(p.Name, shown)
	for id := range shown {
		o, ok, err := pl.store.GetOrder(context.Background(), p.Name, id)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, time.UTC, o.UpdatedAt.Location(), "stored in UTC")
	}

	bad := newEvilPlatform(t, func(evilRequest) (int, string) {
		return 200, pageJSON("", orderJSON("ok", "2026-03-01T10:01:00Z"), orderJSON("nozone", "2026-03-01T10:02:00"))
	})
	_, _, err = newPipeline(t).fetchSlice(bad.platform(t, "evil-nozone"), evilFrom, evilFrom.Add(10*time.Minute))
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, activities.ErrMalformed, app.Type(), "retried like any malformed page")
	require.Contains(t, app.Error(), `order 1: id nozone: updated_at "2026-03-01T10:02:00" is not an RFC3339 time`)
}

// TestBadInputPageLargerThanAsked: asked for 10 orders, the platform sends
// 250 on one page. All are stored; none is dropped for being over the limit.
func TestBadInputPageLargerThanAsked(t *testing.T) {
	var orders []string
	want := map[string]string{}
	for i := range 250 {
		id, ts := fmt.Sprintf("big-%03d", i), evilFrom.Add(time.Duration(i)*time.Second).Format(time.RFC3339)
		orders = append(orders, orderJSON(id, ts))
		want[id] = ts
	}
	e := newEvilPlatform(t, func(evilRequest) (int, string) { return 200, pageJSON("", orders...) })
	p := e.platform(t, "evil-big")
	pl := newPipeline(t)
	sum, pages, err := pl.fetchSlice(p, evilFrom, evilFrom.Add(10*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 1, pages)
	require.Equal(t, "10", e.requests[0].Limit, "the connector asked for page_size")
	require.Equal(t, 250, sum.Inserted)
	pl.requireHolds(p.Name, want)
}

// TestBadInputBodyOverTheLimit: a page body larger than MaxResponseBody is
// a permanent error that says what to do, not an out-of-memory worker.
func TestBadInputBodyOverTheLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"orders":[`))
		one := []byte(orderJSON("x", "2026-03-01T10:00:00Z") + ",")
		chunk := []byte(strings.Repeat(string(one), 1+(1<<20)/len(one)))
		for written := 0; written <= connectors.MaxResponseBody; written += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return // the client stopped reading at the limit
			}
		}
	}))
	t.Cleanup(srv.Close)
	c := newSimConn(t, srv.URL+"/shops/evil", "t", 10, 30*time.Second)
	_, err := c.ListOrders(context.Background(), connectors.PageRequest{From: evilFrom, To: evilFrom.Add(time.Minute), Page: 1})
	var perm *connectors.PermanentError
	require.ErrorAs(t, err, &perm)
	require.Contains(t, perm.Error(), "lower page_size")
}

// TestBadInputMalformedPageIsRetriedThenStored: a malformed page stores
// nothing (no half page) and fails retryably; when the platform answers
// properly on the retry, every order is stored.
func TestBadInputMalformedPageIsRetriedThenStored(t *testing.T) {
	good := pageJSON("", orderJSON("m-1", "2026-03-01T10:01:00Z"), orderJSON("m-2", "2026-03-01T10:02:00Z"))
	bodies := []string{
		good[:len(good)/2],                          // cut off mid-order
		"<html><body>502 Bad Gateway</body></html>", // a proxy's page with status 200
		`{"orders":[` + orderJSON("m-1", "2026-03-01T10:01:00Z") + `,{"id":"m-2","updated_at":"2026-03-01T10:02:00Z","total":12.5}]}`, // total as a float
		`{"data":[]}`, // another API's shape
		good,
	}
	calls := 0
	e := newEvilPlatform(t, func(evilRequest) (int, string) {
		calls++
		return 200, bodies[min(calls, len(bodies))-1]
	})
	p := e.platform(t, "evil-malformed")
	pl := newPipeline(t)
	for i := range len(bodies) - 1 {
		_, _, err := pl.fetchSlice(p, evilFrom, evilFrom.Add(10*time.Minute))
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, "body %d", i)
		require.Equal(t, activities.ErrMalformed, app.Type(), "body %d: %v", i, err)
		require.False(t, app.NonRetryable())
		require.Contains(t, app.Error(), "evil-malformed: malformed response on page 1")
		n, err := pl.store.CountOrders(context.Background(), p.Name)
		require.NoError(t, err)
		require.Zero(t, n, "nothing of a malformed page is stored")
	}
	_, _, err := pl.fetchSlice(p, evilFrom, evilFrom.Add(10*time.Minute))
	require.NoError(t, err)
	pl.requireHolds(p.Name, map[string]string{"m-1": "2026-03-01T10:01:00Z", "m-2": "2026-03-01T10:02:00Z"})
}

// TestBadInputPlatformQuotesTheSecret: platforms quote a rejected key in
// their error messages, and a failed request's error repeats its URL with
// query-string credentials. Connector errors reach Temporal history, so the
// secret is redacted from them in every form it was sent in.
func TestBadInputPlatformQuotesTheSecret(t *testing.T) {
	for _, status := range []int{401, 503, 400} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			e := newEvilPlatform(t, func(evilRequest) (int, string) {
				return status, `{"error":"key ` + evilToken + ` rejected"}`
			})
			c, err := connectors.New(e.platform(t, "evil-echo"))
			require.NoError(t, err)
			_, err = c.ListOrders(context.Background(), connectors.PageRequest{From: evilFrom, To: evilFrom.Add(time.Minute), Page: 1})
			require.Error(t, err)
			require.NotContains(t, err.Error(), evilToken)
			require.Contains(t, err.Error(), "key "+connectors.Redacted+" rejected", "the rest of the message stays")
			require.Equal(t, status != 503, connectors.IsPermanent(err), "the error class survives redaction")
		})
	}

	t.Run("woocommerce query auth timeout", func(t *testing.T) {
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
		t.Cleanup(hang.Close)
		c := newWooConn(t, hang.URL, "query")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := c.ListOrders(ctx, connectors.PageRequest{From: wooFrom, To: wooTo, Page: 1})
		var te *connectors.TransientError
		require.ErrorAs(t, err, &te)
		require.Contains(t, te.Err.Error(), "consumer_secret=cs_", "the transport error quotes the URL with the secret")
		require.NotContains(t, err.Error(), "cs_")
		require.NotContains(t, err.Error(), "ck_")
		require.True(t, errors.Is(err, context.DeadlineExceeded))
	})
}
