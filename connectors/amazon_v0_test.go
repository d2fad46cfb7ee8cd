package connectors_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

const amazonNextToken = "2YgYW55IGNhcm5hbCBwbGVhc3VyZS4+/a=" // needs URL encoding

// The legacy Orders v0 (api_version: v0). amazonFake plays LWA and SP-API
// getOrders as documented in ordersV0.json.
type amazonFake struct {
	t      *testing.T
	tokens *tokenServer
	mu     sync.Mutex
	mode   string          // "" pages; "429"; "malformed"
	refuse map[string]bool // access tokens answered 403
	pages  int
}

func newAmazonFake(t *testing.T) (*amazonFake, *httptest.Server) {
	f := &amazonFake{t: t, refuse: map[string]bool{}, tokens: &tokenServer{t: t, expiresIn: 3600, check: func(t *testing.T, r *http.Request) {
		assert.Equal(t, "refresh_token", r.PostForm.Get("grant_type"))
		assert.Equal(t, "Atzr|refresh-me", r.PostForm.Get("refresh_token"))
		assert.Equal(t, "amzn1.application-oa2-client.abc", r.PostForm.Get("client_id"))
		assert.Equal(t, "s3cr3t-client", r.PostForm.Get("client_secret"))
	}}}
	mux := http.NewServeMux()
	mux.Handle("POST /auth/o2/token", f.tokens)
	mux.HandleFunc("GET /orders/v0/orders", f.orders)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return f, ts
}

func (f *amazonFake) set(mode string) { f.mu.Lock(); f.mode = mode; f.mu.Unlock() }

func (f *amazonFake) orders(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	mode, refused := f.mode, f.refuse[r.Header.Get("x-amz-access-token")]
	f.pages++
	f.mu.Unlock()
	rate := []string{"x-amzn-RateLimit-Limit", "0.0167"}
	switch {
	case refused || r.Header.Get("x-amz-access-token") == "":
		writeBody(w, http.StatusForbidden, fixture(f.t, "amazon/error_unauthorized.json"))
		return
	case mode == "429":
		writeBody(w, http.StatusTooManyRequests, fixture(f.t, "amazon/error_quota.json"), rate...)
		return
	case mode == "malformed":
		writeBody(w, http.StatusOK, fixture(f.t, "amazon/getorders_page1.json")[:300], rate...)
		return
	}
	q := r.URL.Query()
	assert.Equal(f.t, "A1PA6795UKMFR9,A1F83G8C2ARO7P", q.Get("MarketplaceIds"))
	switch q.Get("NextToken") {
	case "":
		assert.Equal(f.t, "2026-03-01T10:00:00Z", q.Get("LastUpdatedAfter"))
		assert.Equal(f.t, "2026-03-01T11:59:59Z", q.Get("LastUpdatedBefore"), "inclusive: the last second before To")
		assert.Equal(f.t, "2", q.Get("MaxResultsPerPage"))
		writeBody(w, http.StatusOK, fixture(f.t, "amazon/getorders_page1.json"), rate...)
	case amazonNextToken:
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range q {
				if !yield(k) {
					return
				}
			}
		})
		assert.Equal(f.t, []string{"MarketplaceIds", "NextToken"}, keys, "NextToken replaces the other criteria")
		writeBody(w, http.StatusOK, fixture(f.t, "amazon/getorders_page2.json"), rate...)
	default:
		writeBody(w, http.StatusBadRequest, []byte(`{"errors":[{"code":"InvalidInput","message":"We could not decode your NextToken."}]}`))
	}
}

func newAmazonConn(t *testing.T, ts *httptest.Server) connectors.Connector {
	t.Helper()
	c, err := connectors.New(config.Platform{Name: "amazon-eu", Kind: "amazon", Endpoint: ts.URL, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, oauthSecret),
		Options: map[string]any{"api_version": "v0", "marketplace_ids": []any{"A1PA6795UKMFR9", "A1F83G8C2ARO7P"}, "token_url": ts.URL + "/auth/o2/token"}})
	require.NoError(t, err)
	return c
}

var amazonWindow = connectors.PageRequest{From: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Page: 1}

func TestAmazonPagesThroughAWindow(t *testing.T) {
	f, ts := newAmazonFake(t)
	c := newAmazonConn(t, ts)
	orders := fetchWindow(t, c, amazonWindow.From, amazonWindow.To)
	require.Len(t, orders, 3)
	require.Equal(t, int32(1), f.tokens.calls.Load(), "one token for both pages")
	first := orders[0]
	require.Equal(t, "902-3159896-1390916", first.ID)
	require.Equal(t, "Unshipped", first.Status)
	require.Equal(t, time.Date(2026, 3, 1, 10, 5, 12, 0, time.UTC), first.UpdatedAt)
	require.Equal(t, time.Date(2026, 3, 1, 9, 49, 35, 0, time.UTC), first.CreatedAt)
	require.Equal(t, "59.90", first.Total)
	require.Equal(t, "EUR", first.Currency)
	require.Equal(t, 2, first.LineCount)
	require.Contains(t, string(first.Raw), `"SalesChannel": "Amazon.de"`)
	require.Equal(t, "", orders[1].Total, "a pending order has no OrderTotal")
	require.Equal(t, "1234.50", orders[2].Total)

	p, err := c.ListOrders(context.Background(), amazonWindow)
	require.NoError(t, err)
	require.Equal(t, 0.0167, p.RateLimit, "x-amzn-RateLimit-Limit")
}

func TestAmazonErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("429 reports the usage plan and waits a request's worth", func(t *testing.T) {
		f, ts := newAmazonFake(t)
		f.set("429")
		_, err := newAmazonConn(t, ts).ListOrders(ctx, amazonWindow)
		var rl *connectors.RateLimitError
		require.ErrorAs(t, err, &rl)
		require.Equal(t, 0.0167, rl.Limit)
		require.InDelta(t, 59.9, rl.RetryAfter.Seconds(), 0.1)
	})
	t.Run("malformed page", func(t *testing.T) {
		f, ts := newAmazonFake(t)
		f.set("malformed")
		_, err := newAmazonConn(t, ts).ListOrders(ctx, amazonWindow)
		var me *connectors.MalformedError
		require.ErrorAs(t, err, &me)
		require.Equal(t, int64(300), me.Offset)
	})
	t.Run("a window ending within 2 minutes of now is refused, not clamped", func(t *testing.T) {
		_, ts := newAmazonFake(t)
		req := connectors.PageRequest{From: time.Now().Add(-time.Hour), To: time.Now().Add(-time.Minute), Page: 1}
		_, err := newAmazonConn(t, ts).ListOrders(ctx, req)
		var te *connectors.TransientError
		require.ErrorAs(t, err, &te)
		require.Contains(t, te.Msg, "less than 2m0s before now, which getOrders rejects; retry in")
	})
	t.Run("a refused refresh token is permanent and names the reference only", func(t *testing.T) {
		f, ts := newAmazonFake(t)
		f.tokens.setReject(fixture(t, "amazon/lwa_invalid_grant.json"))
		_, err := newAmazonConn(t, ts).ListOrders(ctx, amazonWindow)
		var pe *connectors.PermanentError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, http.StatusBadRequest, pe.Status)
		require.Contains(t, pe.Msg, "authentication failed: token refresh rejected: The request has an invalid grant parameter : refresh_token (check the credentials in file:")
		require.NotContains(t, err.Error(), "Atzr|refresh-me")
		require.NotContains(t, err.Error(), "s3cr3t")
		require.Equal(t, 0, f.pages, "no API call without a token")
	})
	t.Run("missing marketplaces fail at construction", func(t *testing.T) {
		_, err := connectors.New(config.Platform{Name: "amz", Kind: "amazon", Endpoint: "https://sellingpartnerapi-na.amazon.com", Credentials: secretFile(t, oauthSecret)})
		require.True(t, connectors.IsPermanent(err))
		require.ErrorContains(t, err, `field "options.marketplace_ids": is required`)
	})
}

func TestAmazonTokenRefresh(t *testing.T) {
	ctx := context.Background()
	t.Run("an expired token is refreshed", func(t *testing.T) {
		f, ts := newAmazonFake(t)
		f.tokens.expiresIn = 1 // cached for 0.9 s
		c := newAmazonConn(t, ts)
		_, err := c.ListOrders(ctx, amazonWindow)
		require.NoError(t, err)
		_, err = c.ListOrders(ctx, amazonWindow)
		require.NoError(t, err)
		require.Equal(t, int32(1), f.tokens.calls.Load())
		time.Sleep(time.Second)
		_, err = c.ListOrders(ctx, amazonWindow)
		require.NoError(t, err)
		require.Equal(t, int32(2), f.tokens.calls.Load())
	})
	t.Run("concurrent callers share one refresh", func(t *testing.T) {
		f, ts := newAmazonFake(t)
		f.tokens.delay = 100 * time.Millisecond
		c := newAmazonConn(t, ts)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := c.ListOrders(ctx, amazonWindow)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), f.tokens.calls.Load())
	})
	t.Run("a revoked cached token is replaced once", func(t *testing.T) {
		f, ts := newAmazonFake(t)
		c := newAmazonConn(t, ts)
		_, err := c.ListOrders(ctx, amazonWindow)
		require.NoError(t, err)
		f.mu.Lock()
		f.refuse["tok-1"] = true
		f.mu.Unlock()
		_, err = c.ListOrders(ctx, amazonWindow)
		require.NoError(t, err)
		require.Equal(t, int32(2), f.tokens.calls.Load())

		f.mu.Lock()
		f.refuse["tok-2"], f.refuse["tok-3"] = true, true
		f.mu.Unlock()
		_, err = c.ListOrders(ctx, amazonWindow)
		var pe *connectors.PermanentError
		require.ErrorAs(t, err, &pe, "a fresh token that is refused is final")
		require.Equal(t, http.StatusForbidden, pe.Status)
		require.Equal(t, "amazon-eu", pe.Platform)
		require.Contains(t, pe.Msg, "authentication failed: Unauthorized: Access to requested resource is denied. (check the credentials in file:")
		require.Equal(t, int32(3), f.tokens.calls.Load())
	})
}

func TestAmazonV0StartsOverOnATokenOf2026(t *testing.T) {
	// A platform moved back from 2026-01-01 to v0 while a slice was in
	// flight: the searchOrders token means nothing to getOrders, so the
	// window starts over rather than failing on a token Amazon cannot decode.
	f, ts := newAmazonFake(t)
	req := amazonWindow
	req.Token, req.Page = "o26.1772452800."+amazonNextToken, 2
	p, err := newAmazonConn(t, ts).ListOrders(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, p.Orders, 2, "the first page")
	require.Equal(t, amazonNextToken, p.NextToken)
	require.Equal(t, 1, f.pages)
}

// TestAmazonV0RefusedNextTokenRestartsTheWindow: getOrders refusing a
// NextToken ("We could not decode your NextToken.") restarts the window
// after a request slot of its own, as on 2026-01-01, instead of failing
// the slice (amazonUnusableToken is shared: TestAmazon2026Unusable... has
// every text and the 400s that stay permanent).
func TestAmazonV0RefusedNextTokenRestartsTheWindow(t *testing.T) {
	ctx := context.Background()
	f, ts := newAmazonFake(t)
	c := newAmazonConn(t, ts)
	req := amazonWindow
	req.Token, req.Page = "a token Amazon no longer knows", 2
	p, err := c.ListOrders(ctx, req)
	require.NoError(t, err)
	require.Empty(t, p.Orders)
	require.NotEmpty(t, p.NextToken)
	require.Equal(t, 1, f.pages, "no second request in the same call")
	req.Token = p.NextToken
	p, err = c.ListOrders(ctx, req)
	require.NoError(t, err)
	require.Len(t, p.Orders, 2, "the window's first page")
	require.NotEqual(t, amazonNextToken, p.NextToken, "a token after a restart carries its generation")
	require.Contains(t, p.NextToken, amazonNextToken)
	require.Equal(t, 2, f.pages)
	req.Token, req.Page = p.NextToken, 3
	p, err = c.ListOrders(ctx, req)
	require.NoError(t, err, "Amazon's own token is sent, without the generation")
	require.NotEmpty(t, p.Orders)
	require.Equal(t, 3, f.pages)
}

// TestAmazonRestartNeverRepeatsAToken: Amazon may hand out the same token
// for the same first page again after a restart; the slice follows every
// token once (a repeat is a paging cycle to it), so the tokens a window
// hands out after each restart must differ from those before it.
func TestAmazonRestartNeverRepeatsAToken(t *testing.T) {
	ctx := context.Background()
	_, ts := newAmazonFake(t)
	c := newAmazonConn(t, ts)
	seen := map[string]bool{}
	req := amazonWindow
	for restart := range 3 {
		req.Token, req.Page = "", 1
		if restart > 0 {
			req.Token = "refused-" + strconv.Itoa(restart)
		}
		p, err := c.ListOrders(ctx, req)
		require.NoError(t, err)
		if restart > 0 {
			require.Empty(t, p.Orders, "the refusal ends the call")
			require.False(t, seen[p.NextToken], "restart token %q repeated", p.NextToken)
			seen[p.NextToken] = true
			req.Token = p.NextToken
			p, err = c.ListOrders(ctx, req)
			require.NoError(t, err)
		}
		require.Len(t, p.Orders, 2, "the window's first page")
		require.False(t, seen[p.NextToken], "token %q handed out twice (restart %d)", p.NextToken, restart)
		seen[p.NextToken] = true
		time.Sleep(time.Millisecond) // restarts are told apart by their time
	}
}
