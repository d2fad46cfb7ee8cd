package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// amazonAccess gets an access token of shop from its Login with Amazon.
func amazonAccess(t *testing.T, base, shop, refresh string) string {
	t.Helper()
	code, body := lwa(t, base, shop, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh},
		"client_id": {"amzn1.application-oa2-client.sim"}, "client_secret": {"sim-secret"}})
	require.Equal(t, http.StatusOK, code, string(body))
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	require.NoError(t, json.Unmarshal(body, &tok))
	require.Equal(t, 3600, tok.ExpiresIn)
	return tok.AccessToken
}

func lwa(t *testing.T, base, shop string, form url.Values) (int, []byte) {
	t.Helper()
	resp, err := http.PostForm(base+"/shops/"+shop+"/amazon/auth/o2/token", form)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// searchOrders sends one searchOrders request.
func searchOrders(t *testing.T, base, shop, access string, q url.Values) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/shops/"+shop+"/amazon/orders/2026-01-01/orders?"+q.Encode(), nil)
	require.NoError(t, err)
	if access != "" {
		req.Header.Set("x-amz-access-token", access)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func amazonWindow(from, before time.Time, extra ...string) url.Values {
	q := url.Values{"lastUpdatedAfter": {from.Format(time.RFC3339Nano)}, "lastUpdatedBefore": {before.Format(time.RFC3339Nano)}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return q
}

// searchAll pages through a search and returns every order.
func searchAll(t *testing.T, base, shop, access string, q url.Values) []amazonOrder {
	t.Helper()
	var all []amazonOrder
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10000, "paging does not end")
		code, _, body := searchOrders(t, base, shop, access, q)
		require.Equal(t, http.StatusOK, code, string(body))
		var sb amazonSearchBody
		require.NoError(t, json.Unmarshal(body, &sb))
		all = append(all, sb.Orders...)
		if sb.Pagination == nil {
			return all
		}
		q.Set("paginationToken", sb.Pagination.NextToken)
	}
}

func TestAmazonLoginWithAmazon(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(1, clk))
	ok := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"acme-token"}, "client_id": {"c"}, "client_secret": {"s"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for key, vs := range ok {
			f[key] = vs
		}
		f.Set(k, v)
		return f
	}
	tests := []struct {
		name, shop string
		form       url.Values
		status     int
		errorCode  string
	}{
		{"the shop token is the refresh token", "acme", ok, 200, ""},
		{"another shop's token", "globex", ok, 400, "invalid_grant"},
		{"no client", "acme", with("client_secret", ""), 401, "invalid_client"},
		{"another grant", "acme", with("grant_type", "client_credentials"), 400, "unsupported_grant_type"},
		{"unknown shop", "nope", ok, 404, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := lwa(t, ts.URL, tt.shop, tt.form)
			require.Equal(t, tt.status, code, string(body))
			if tt.errorCode != "" {
				var e lwaError
				require.NoError(t, json.Unmarshal(body, &e))
				require.Equal(t, tt.errorCode, e.Error)
			}
		})
	}

	access := amazonAccess(t, ts.URL, "acme", "acme-token")
	require.True(t, strings.HasPrefix(access, "Atza|"))
	now := clk.Now()
	q := amazonWindow(now.Add(-time.Hour), now.Add(-3*time.Minute))
	code, _, _ := searchOrders(t, ts.URL, "acme", access, q)
	require.Equal(t, http.StatusOK, code)
	code, _, body := searchOrders(t, ts.URL, "globex", access, q)
	require.Equal(t, http.StatusForbidden, code, "one seller's token does not open another's orders")
	require.Contains(t, string(body), `"code":"Unauthorized"`)
	clk.Add(time.Hour)
	code, _, _ = searchOrders(t, ts.URL, "acme", access, amazonWindow(now, now.Add(time.Minute)))
	require.Equal(t, http.StatusForbidden, code, "access tokens live an hour")
}

// TestAmazonListsTheSimsOrders: the Amazon surface shows the shop's own
// orders, with the same ids, update times, totals and items, over
// inclusive bounds.
func TestAmazonListsTheSimsOrders(t *testing.T) {
	clk := newFakeClock()
	s, ts := startTest(t, testConfig(3, clk))
	market, err := s.AmazonMarketplace("acme")
	require.NoError(t, err)
	access := amazonAccess(t, ts.URL, "acme", "acme-token")
	now := clk.Now()
	from, before := now.Add(-30*time.Hour), now.Add(-3*time.Minute)
	got := searchAll(t, ts.URL, "acme", access, amazonWindow(from, before,
		"maxResultsPerPage", "7", "includedData", "FULFILLMENT,PROCEEDS", "marketplaceIds", "ATVPDKIKX0DER,"+market))
	own := listAll(t, ts.URL, "acme", "acme-token", from, before.Add(time.Microsecond), 50) // [from, before] in µs
	require.NotEmpty(t, own)
	require.Len(t, got, len(own))
	statuses := map[string]string{"pending": "PENDING", "paid": "UNSHIPPED", "shipped": "SHIPPED", "delivered": "SHIPPED", "cancelled": "CANCELLED", "refunded": "SHIPPED"}
	for i, o := range own {
		a := got[i]
		require.Equal(t, o.ID, a.OrderID)
		require.Equal(t, o.UpdatedAt, a.LastUpdatedTime)
		require.Equal(t, o.CreatedAt, a.CreatedTime)
		require.Equal(t, statuses[o.Status], a.Fulfillment.FulfillmentStatus)
		require.Equal(t, amazonMoney{o.Total, o.Currency}, a.Proceeds.GrandTotal)
		require.Equal(t, market, a.SalesChannel.MarketplaceID)
		require.Nil(t, a.Buyer, "personal data only when asked")
		require.Nil(t, a.Recipient)
		lines, err := s.OrderLines("acme", o.ID)
		require.NoError(t, err)
		require.Len(t, a.OrderItems, len(o.LineItems))
		for j, li := range o.LineItems {
			it := a.OrderItems[j]
			require.Equal(t, AmazonItemID(o.ID, j), it.OrderItemID)
			require.Equal(t, amazonProduct{ASIN: it.Product.ASIN, Title: li.Title, SellerSKU: li.SKU,
				Price: amazonPrice{UnitPrice: amazonMoney{li.Price, o.Currency}}}, it.Product)
			require.Len(t, it.Product.ASIN, 10)
			require.Equal(t, li.Qty, it.QuantityOrdered)
			require.Equal(t, TruthLine{SKU: li.SKU, Title: li.Title, Quantity: li.Qty, UnitPrice: li.Price, Currency: o.Currency}, lines[j])
		}
	}

	t.Run("both bounds are inclusive", func(t *testing.T) {
		o := own[len(own)/2]
		at, err := time.Parse(time.RFC3339Nano, o.UpdatedAt)
		require.NoError(t, err)
		one := searchAll(t, ts.URL, "acme", access, amazonWindow(at, at))
		require.Contains(t, amazonIDs(one), o.ID)
	})
	t.Run("another marketplace lists nothing", func(t *testing.T) {
		other := "ATVPDKIKX0DER"
		if market == other {
			other = "A1F83G8C2ARO7P"
		}
		require.Empty(t, searchAll(t, ts.URL, "acme", access, amazonWindow(from, before, "marketplaceIds", other)))
	})
	t.Run("buyer and recipient only when asked", func(t *testing.T) {
		_, _, body := searchOrders(t, ts.URL, "acme", access, amazonWindow(from, before, "maxResultsPerPage", "3"))
		require.NotContains(t, string(body), "@example.com")
		require.NotContains(t, string(body), `"fulfillment"`)
		_, _, body = searchOrders(t, ts.URL, "acme", access, amazonWindow(from, before, "maxResultsPerPage", "3", "includedData", "BUYER,RECIPIENT,PACKAGES"))
		var sb amazonSearchBody
		require.NoError(t, json.Unmarshal(body, &sb))
		require.Equal(t, own[0].Customer.Email, sb.Orders[0].Buyer.BuyerEmail)
		require.Equal(t, own[0].Customer.Address.Street, sb.Orders[0].Recipient.DeliveryAddress.AddressLine1)
	})
	t.Run("lastUpdatedBefore defaults to two minutes before now", func(t *testing.T) {
		code, _, body := searchOrders(t, ts.URL, "acme", access, url.Values{"lastUpdatedAfter": {before.Format(time.RFC3339)}})
		require.Equal(t, http.StatusOK, code, string(body))
		var sb amazonSearchBody
		require.NoError(t, json.Unmarshal(body, &sb))
		require.Equal(t, now.Add(-2*time.Minute).Format(time.RFC3339Nano), sb.LastUpdatedBefore)
	})
}

func amazonIDs(orders []amazonOrder) []string {
	out := make([]string, len(orders))
	for i, o := range orders {
		out[i] = o.OrderID
	}
	return out
}

func TestAmazonBadRequests(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(1, clk))
	access := amazonAccess(t, ts.URL, "acme", "acme-token")
	now := clk.Now()
	from, before := now.Add(-30*time.Hour), now.Add(-3*time.Minute)
	_, _, body := searchOrders(t, ts.URL, "acme", access, amazonWindow(from, before, "maxResultsPerPage", "1"))
	var sb amazonSearchBody
	require.NoError(t, json.Unmarshal(body, &sb))
	require.NotNil(t, sb.Pagination)
	token := sb.Pagination.NextToken
	f, b := from.Format(time.RFC3339), before.Format(time.RFC3339)
	tests := []struct {
		name   string
		q      url.Values
		status int
		msg    string
	}{
		{"ok", amazonWindow(from, before), 200, ""},
		{"the next page repeats the search", url.Values{"lastUpdatedAfter": {f}, "lastUpdatedBefore": {b}, "paginationToken": {token}}, 200, ""},
		{"the next page may leave lastUpdatedBefore out", url.Values{"lastUpdatedAfter": {f}, "paginationToken": {token}}, 200, ""},
		{"no lastUpdatedAfter", url.Values{"lastUpdatedBefore": {b}}, 400, "Exactly one of createdAfter and lastUpdatedAfter is required."},
		{"createdAfter is not simulated", url.Values{"createdAfter": {f}}, 400, "createdAfter and createdBefore are not simulated"},
		{"not UTC", url.Values{"lastUpdatedAfter": {"2026-03-01T10:00:00+01:00"}}, 400, "Invalid date/time field [lastUpdatedAfter]: \"2026-03-01T10:00:00+01:00\" must be in UTC."},
		{"not a time", url.Values{"lastUpdatedAfter": {"yesterday"}}, 400, "Invalid date/time field [lastUpdatedAfter]"},
		{"the 2-minute rule", amazonWindow(from, now.Add(-119*time.Second)), 400, "lastUpdatedBefore must be at least 2 minutes before the time of the request"},
		{"exactly 2 minutes is fine", amazonWindow(from, now.Add(-2*time.Minute)), 200, ""},
		{"reversed window", amazonWindow(before, from), 400, "lastUpdatedBefore must be equal to or after lastUpdatedAfter."},
		{"page size 0", amazonWindow(from, before, "maxResultsPerPage", "0"), 400, "maxResultsPerPage must be between 1 and 100"},
		{"page size 101", amazonWindow(from, before, "maxResultsPerPage", "101"), 400, "maxResultsPerPage must be between 1 and 100"},
		{"unknown dataset", amazonWindow(from, before, "includedData", "BUYER,ITEMS"), 400, `Invalid includedData value "ITEMS".`},
		{"garbled token", amazonWindow(from, before, "paginationToken", "2YgYW55IGNhcm5hbCBwbGVhc3VyZS4="), 400, "Invalid paginationToken."},
		{"token of another search", amazonWindow(from.Add(time.Second), before, "paginationToken", token), 400, "The paginationToken belongs to another search"},
		{"token with another end", amazonWindow(from, before.Add(-time.Second), "paginationToken", token), 400, "The paginationToken belongs to another search"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := searchOrders(t, ts.URL, "acme", access, tc.q)
			require.Equal(t, tc.status, code, string(body))
			require.NotEmpty(t, hdr.Get("x-amzn-RequestId"))
			if tc.status == 200 {
				return
			}
			var e amazonError
			require.NoError(t, json.Unmarshal(body, &e), "errors are SP-API's ErrorList")
			require.Len(t, e.Errors, 1)
			require.Equal(t, "InvalidInput", e.Errors[0].Code)
			require.Contains(t, e.Errors[0].Message, tc.msg)
		})
	}
	code, _, body := searchOrders(t, ts.URL, "acme", "", amazonWindow(from, before))
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, string(body), "Access to requested resource is denied.")
}

func TestAmazonPaginationTokensExpire(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(1, clk)
	cfg.AmazonTokenTTL = time.Minute
	_, ts := startTest(t, cfg)
	access := amazonAccess(t, ts.URL, "acme", "acme-token")
	now := clk.Now()
	q := amazonWindow(now.Add(-30*time.Hour), now.Add(-3*time.Minute), "maxResultsPerPage", "2")
	_, _, body := searchOrders(t, ts.URL, "acme", access, q)
	var sb amazonSearchBody
	require.NoError(t, json.Unmarshal(body, &sb))
	q.Set("paginationToken", sb.Pagination.NextToken)

	clk.Add(59 * time.Second)
	code, _, body := searchOrders(t, ts.URL, "acme", access, q)
	require.Equal(t, http.StatusOK, code, "still valid: %s", body)
	clk.Add(time.Second)
	code, _, body = searchOrders(t, ts.URL, "acme", access, q)
	require.Equal(t, http.StatusBadRequest, code)
	var e amazonError
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, amazonErrorEntry{Code: "InvalidInput", Message: "The paginationToken has expired.",
		Details: "Repeat the search without paginationToken."}, e.Errors[0])
}

// TestAmazonTokenErrorTexts: the surface answers an expired token with the
// text Config.AmazonTokenError selects, each a 400 InvalidInput.
func TestAmazonTokenErrorTexts(t *testing.T) {
	for _, name := range AmazonTokenErrors {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock()
			cfg := testConfig(1, clk)
			cfg.AmazonTokenTTL, cfg.AmazonTokenError = time.Minute, name
			cfg.RateLimit = RateLimit{RPS: 10, Burst: 10}
			_, ts := startTest(t, cfg)
			access := amazonAccess(t, ts.URL, "acme", "acme-token")
			now := clk.Now()
			q := amazonWindow(now.Add(-30*time.Hour), now.Add(-3*time.Minute), "maxResultsPerPage", "2")
			_, _, body := searchOrders(t, ts.URL, "acme", access, q)
			var sb amazonSearchBody
			require.NoError(t, json.Unmarshal(body, &sb))
			q.Set("paginationToken", sb.Pagination.NextToken)
			clk.Add(time.Minute)
			access = amazonAccess(t, ts.URL, "acme", "acme-token")
			code, hdr, body := searchOrders(t, ts.URL, "acme", access, q)
			require.Equal(t, http.StatusBadRequest, code)
			require.JSONEq(t, amazonTokenErrorBodies[name], string(body))
			require.NotEmpty(t, hdr.Get("x-amzn-RateLimit-Limit"), "the usage plan on every answer")
		})
	}
	_, err := New(Config{Shops: []ShopConfig{{Name: "a", Token: "t"}}, AmazonTokenError: "teapot"})
	require.ErrorContains(t, err, `AmazonTokenError "teapot" is not one of`)
}

// TestAmazonAccessTokensLapseEarly: with Config.AmazonAccessTTL below the
// stated hour, a token is refused (403) once it lapses, while the token
// response still says expires_in 3600; a fresh token is accepted.
func TestAmazonAccessTokensLapseEarly(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(1, clk)
	cfg.AmazonAccessTTL = 5 * time.Minute
	s, ts := startTest(t, cfg)
	access := amazonAccess(t, ts.URL, "acme", "acme-token") // checks expires_in 3600
	now := clk.Now()
	q := amazonWindow(now.Add(-time.Hour), now.Add(-3*time.Minute))
	code, _, _ := searchOrders(t, ts.URL, "acme", access, q)
	require.Equal(t, http.StatusOK, code)
	clk.Add(5 * time.Minute)
	code, _, body := searchOrders(t, ts.URL, "acme", access, q)
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, string(body), "The access token you provided has expired.")
	code, _, _ = searchOrders(t, ts.URL, "acme", amazonAccess(t, ts.URL, "acme", "acme-token"), q)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 1, s.Stats().Shops["acme"].Unauthorized)
}

func TestAmazonRateLimit(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(1, clk)
	cfg.RateLimit = RateLimit{RPS: 0.5, Burst: 2}
	s, ts := startTest(t, cfg)
	access := amazonAccess(t, ts.URL, "acme", "acme-token")
	now := clk.Now()
	q := amazonWindow(now.Add(-time.Hour), now.Add(-3*time.Minute))
	for i := range 2 {
		code, hdr, _ := searchOrders(t, ts.URL, "acme", access, q)
		require.Equal(t, http.StatusOK, code, "request %d is within the burst", i)
		require.Equal(t, "0.5", hdr.Get("x-amzn-RateLimit-Limit"))
	}
	code, hdr, body := searchOrders(t, ts.URL, "acme", access, q)
	require.Equal(t, http.StatusTooManyRequests, code)
	require.Equal(t, "0.5", hdr.Get("x-amzn-RateLimit-Limit"))
	require.Empty(t, hdr.Get("Retry-After"), "SP-API sends its rate, not a wait")
	require.JSONEq(t, `{"errors":[{"code":"QuotaExceeded","message":"You exceeded your quota for the requested resource.","details":""}]}`, string(body))
	clk.Add(2 * time.Second)
	code, _, _ = searchOrders(t, ts.URL, "acme", access, q)
	require.Equal(t, http.StatusOK, code, "one request's worth later")
	st := s.Stats().Shops["acme"]
	require.EqualValues(t, 1, st.RateLimited)
	require.EqualValues(t, 4, st.Requests, "the Amazon surface shares the shop's counters and bucket")
	require.EqualValues(t, 3, st.Pages)
}
