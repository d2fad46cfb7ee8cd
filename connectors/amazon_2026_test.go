package connectors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// Orders API v2026-01-01 searchOrders, the default api_version. The fake
// follows orders_2026-01-01.json (amzn/selling-partner-api-models): inclusive
// lastUpdatedAfter/lastUpdatedBefore, comma-separated arrays, orders with
// orderItems, datasets only when includedData names them, pagination.nextToken
// absent on the last page, later pages repeating every parameter.

const amazon2026NextToken = "2YgYW55IGNhcm5hbCBwbGVhc3VyZS4+/a=" // needs URL encoding

type amazon2026Fake struct {
	t      *testing.T
	tokens *tokenServer
	mu     sync.Mutex
	asked  []url.Values
	// respond, when set, answers a request instead of the two pages;
	// ok false falls through to them.
	respond func(q url.Values) (status int, body []byte, ok bool)
}

func newAmazon2026Fake(t *testing.T) (*amazon2026Fake, *httptest.Server) {
	f := &amazon2026Fake{t: t, tokens: &tokenServer{t: t, expiresIn: 3600}}
	mux := http.NewServeMux()
	mux.Handle("POST /auth/o2/token", f.tokens)
	mux.HandleFunc("GET /orders/2026-01-01/orders", f.orders)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return f, ts
}

func (f *amazon2026Fake) requests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

func (f *amazon2026Fake) orders(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	f.asked = append(f.asked, q)
	respond := f.respond
	f.mu.Unlock()
	rate := []string{"x-amzn-RateLimit-Limit", "0.0056"}
	if r.Header.Get("x-amz-access-token") == "" {
		writeBody(w, http.StatusForbidden, fixture(f.t, "amazon/error_unauthorized.json"))
		return
	}
	if respond != nil {
		if status, body, ok := respond(q); ok {
			writeBody(w, status, body, rate...)
			return
		}
	}
	switch q.Get("paginationToken") {
	case "":
		writeBody(w, http.StatusOK, f.included(q, fixture(f.t, "amazon/searchorders_page1.json")), rate...)
	case amazon2026NextToken:
		writeBody(w, http.StatusOK, f.included(q, fixture(f.t, "amazon/searchorders_page2.json")), rate...)
	default:
		writeBody(w, http.StatusBadRequest, fixture(f.t, "amazon/error_bad_token.json"), rate...)
	}
}

// included drops the datasets includedData does not name, as searchOrders
// leaves them out, and echoes the request's lastUpdatedBefore.
func (f *amazon2026Fake) included(q url.Values, page []byte) []byte {
	var body map[string]any
	require.NoError(f.t, json.Unmarshal(page, &body))
	body["lastUpdatedBefore"] = q.Get("lastUpdatedBefore")
	asked := strings.Split(q.Get("includedData"), ",")
	for _, o := range body["orders"].([]any) {
		for key, set := range map[string]string{"buyer": "BUYER", "recipient": "RECIPIENT", "proceeds": "PROCEEDS", "fulfillment": "FULFILLMENT"} {
			if !slices.Contains(asked, set) {
				delete(o.(map[string]any), key)
			}
		}
	}
	b, err := json.Marshal(body)
	require.NoError(f.t, err)
	return b
}

func newAmazon2026Conn(t *testing.T, ts *httptest.Server, options map[string]any) connectors.Connector {
	t.Helper()
	opts := map[string]any{"marketplace_ids": []any{"A1PA6795UKMFR9", "A1F83G8C2ARO7P"}, "token_url": ts.URL + "/auth/o2/token"}
	for k, v := range options {
		opts[k] = v
	}
	c, err := connectors.New(config.Platform{Name: "amazon-eu", Kind: "amazon", Endpoint: ts.URL, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, oauthSecret), Options: opts})
	require.NoError(t, err)
	return c
}

func TestAmazon2026ListsOrdersWithTheirLines(t *testing.T) {
	f, ts := newAmazon2026Fake(t)
	c := newAmazon2026Conn(t, ts, nil)
	orders := fetchWindow(t, c, amazonWindow.From, amazonWindow.To)
	require.Len(t, orders, 3)
	require.Equal(t, int32(1), f.tokens.calls.Load(), "one access token for both pages")

	first := orders[0]
	require.Equal(t, "902-3159896-1390916", first.ID)
	require.Equal(t, "UNSHIPPED", first.Status, "fulfillment.fulfillmentStatus")
	require.Equal(t, time.Date(2026, 3, 1, 10, 5, 12, 250e6, time.UTC), first.UpdatedAt)
	require.Equal(t, time.Date(2026, 3, 1, 9, 49, 35, 0, time.UTC), first.CreatedAt)
	require.Equal(t, "59.90", first.Total, "proceeds.grandTotal")
	require.Equal(t, "EUR", first.Currency)
	require.True(t, first.HasLines)
	require.Equal(t, 2, first.LineCount, "lines, not units")
	require.Equal(t, []connectors.OrderLine{
		{ID: "12345678901234", SKU: "CUP-2", Title: "Espresso Cup, set of 2", Quantity: 2, UnitPrice: "19.95", Currency: "EUR"},
		{ID: "12345678901235", SKU: "SHIRT-L", Title: "Linen Shirt", Quantity: 1, UnitPrice: "15.00", Currency: "EUR"},
	}, first.Lines)
	require.Contains(t, string(first.Raw), `"orderAliases"`, "the raw order is Amazon's JSON")

	require.Equal(t, "PENDING", orders[1].Status)
	require.Equal(t, "", orders[1].Total, "no grandTotal yet")
	require.Equal(t, []connectors.OrderLine{{ID: "55500011122233", SKU: "TRAIL-42", Title: "Trail Shoes", Quantity: 1}}, orders[1].Lines, "an item without a price")
	require.Equal(t, "1234.50", orders[2].Total)
	require.Equal(t, []connectors.OrderLine{{ID: "20212345678901", SKU: "LAMP-3", Title: "Desk Lamp", Quantity: 3, UnitPrice: "411.50", Currency: "GBP"}}, orders[2].Lines)

	asked := f.requests()
	require.Len(t, asked, 2)
	first1, second := asked[0], asked[1]
	require.Equal(t, url.Values{
		"lastUpdatedAfter":  {"2026-03-01T10:00:00.000Z"},
		"lastUpdatedBefore": {"2026-03-01T12:00:00.000Z"},
		"marketplaceIds":    {"A1PA6795UKMFR9,A1F83G8C2ARO7P"},
		"maxResultsPerPage": {"2"},
		"includedData":      {"FULFILLMENT,PROCEEDS,PACKAGES,PROMOTION,CANCELLATION,TAX"},
	}, first1)
	require.Equal(t, amazon2026NextToken, second.Get("paginationToken"), "the token, URL-encoded and decoded intact")
	second.Del("paginationToken")
	require.Equal(t, first1, second, "a later page repeats every parameter of the first")

	p, err := c.ListOrders(context.Background(), amazonWindow)
	require.NoError(t, err)
	require.Equal(t, 0.0056, p.RateLimit, "x-amzn-RateLimit-Limit")
}

func TestAmazon2026WindowBounds(t *testing.T) {
	// Both bounds are inclusive, in milliseconds: the request never covers
	// less than [From, To), whatever precision Amazon keeps.
	at := func(s string) time.Time {
		tt, err := time.Parse(time.RFC3339Nano, s)
		require.NoError(t, err)
		return tt
	}
	tests := []struct {
		name, from, to, after, before string
	}{
		{"whole seconds", "2026-03-01T10:00:00Z", "2026-03-01T12:00:00Z", "2026-03-01T10:00:00.000Z", "2026-03-01T12:00:00.000Z"},
		{"sub-millisecond bounds widen outwards", "2026-03-01T10:00:00.0004999Z", "2026-03-01T11:59:59.9990001Z", "2026-03-01T10:00:00.000Z", "2026-03-01T12:00:00.000Z"},
		{"milliseconds kept", "2026-03-01T10:00:00.123Z", "2026-03-01T11:00:00.456Z", "2026-03-01T10:00:00.123Z", "2026-03-01T11:00:00.456Z"},
		{"another zone becomes UTC", "2026-03-01T11:00:00+01:00", "2026-03-01T13:00:00+01:00", "2026-03-01T10:00:00.000Z", "2026-03-01T12:00:00.000Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ts := newAmazon2026Fake(t)
			_, err := newAmazon2026Conn(t, ts, nil).ListOrders(context.Background(), connectors.PageRequest{From: at(tt.from), To: at(tt.to), Page: 1})
			require.NoError(t, err)
			q := f.requests()[0]
			require.Equal(t, tt.after, q.Get("lastUpdatedAfter"))
			require.Equal(t, tt.before, q.Get("lastUpdatedBefore"))
		})
	}
}

func TestAmazon2026PersonalDataOnlyWhenAsked(t *testing.T) {
	tests := []struct {
		name     string
		included []any
		optIn    map[string]any // options instead of included_data
		query    string
		has, not []string // in the first order's raw JSON
	}{
		{name: "include_buyer and include_recipient opt in", optIn: map[string]any{"include_buyer": true, "include_recipient": true},
			query: "FULFILLMENT,PROCEEDS,PACKAGES,PROMOTION,CANCELLATION,TAX,BUYER,RECIPIENT",
			has:   []string{`"buyerName":"Anna Schmidt"`, `"addressLine1":"Lindenallee 12"`}},
		{name: "include_buyer alone", optIn: map[string]any{"include_buyer": true},
			query: "FULFILLMENT,PROCEEDS,PACKAGES,PROMOTION,CANCELLATION,TAX,BUYER",
			has:   []string{`"buyerEmail":"abc123@marketplace.amazon.de"`}, not: []string{`"recipient"`, "Lindenallee"}},
		{"by default neither buyer nor recipient", nil, nil, "FULFILLMENT,PROCEEDS,PACKAGES,PROMOTION,CANCELLATION,TAX",
			nil, []string{`"buyer"`, `"recipient"`, "abc123@marketplace.amazon.de", "Lindenallee"}},
		{"buyer only", []any{"BUYER"}, nil, "FULFILLMENT,PROCEEDS,PACKAGES,PROMOTION,CANCELLATION,TAX,BUYER",
			[]string{`"buyerEmail":"abc123@marketplace.amazon.de"`}, []string{`"recipient"`, "Lindenallee"}},
		{"buyer and recipient", []any{"BUYER", "RECIPIENT"}, nil, "FULFILLMENT,PROCEEDS,PACKAGES,PROMOTION,CANCELLATION,TAX,BUYER,RECIPIENT",
			[]string{`"buyerName":"Anna Schmidt"`, `"addressLine1":"Lindenallee 12"`}, nil},
		{"datasets always asked are not repeated", []any{"PROCEEDS", "PACKAGES", "PAYMENT"}, nil, "FULFILLMENT,PROCEEDS,PACKAGES,PROMOTION,CANCELLATION,TAX,PAYMENT",
			nil, []string{`"buyer"`, `"recipient"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ts := newAmazon2026Fake(t)
			var opts map[string]any
			if tt.included != nil {
				opts = map[string]any{"included_data": tt.included}
			}
			if tt.optIn != nil {
				opts = tt.optIn
			}
			p, err := newAmazon2026Conn(t, ts, opts).ListOrders(context.Background(), amazonWindow)
			require.NoError(t, err)
			require.Equal(t, tt.query, f.requests()[0].Get("includedData"))
			raw := string(p.Orders[0].Raw)
			for _, s := range tt.has {
				require.Contains(t, raw, s)
			}
			for _, s := range tt.not {
				require.NotContains(t, raw, s)
			}
		})
	}
}

// amazonTokenRefusals are the 400s sellers and Amazon's models report for a
// pagination token that cannot be used: each restarts the window.
var amazonTokenRefusals = map[string]string{
	"expired":             `{"errors":[{"code":"InvalidInput","message":"The paginationToken has expired.","details":"Repeat the search without a paginationToken."}]}`,
	"token not valid":     `{"errors":[{"code":"InvalidInput","message":"The paginationToken you have submitted is not valid. Please submit a valid paginationToken.","details":""}]}`,
	"input not valid":     `{"errors":[{"code":"InvalidInput","message":"The input you have submitted is not valid. Please verify the input and try again.","details":""}]}`,
	"models' Invalid":     `{"errors":[{"code":"InvalidInput","message":"Invalid Input","details":"Invalid Input"}]}`,
	"no message":          `{"errors":[{"code":"InvalidInput","message":null}]}`,
	"NextToken undecoded": `{"errors":[{"code":"InvalidInput","message":"We could not decode your NextToken. Possible reasons include: a transmission error, improper quoting or a truncation problem.","details":""}]}`,
	"token in details":    `{"errors":[{"code":"InvalidInput","message":"Request is invalid.","details":"paginationToken is not valid for this search."}]}`,
}

// TestAmazon2026UnusableTokenRestartsTheWindow: a 400 about the pagination
// token, whatever its text, ends the page with a restart token and no
// second request (issue 23, items 4 and 5); following that token reads the
// window from its start, and every order of the window comes back. Before,
// only a text with "expired" restarted, and it sent the restart at once,
// without a slot of its own; the other texts dead-lettered the slice.
func TestAmazon2026UnusableTokenRestartsTheWindow(t *testing.T) {
	ctx := context.Background()
	for name, body := range amazonTokenRefusals {
		t.Run(name, func(t *testing.T) {
			f, ts := newAmazon2026Fake(t)
			refused := true // Amazon refuses the token once (it lapsed between page 1 and page 2)
			f.respond = func(q url.Values) (int, []byte, bool) {
				if q.Get("paginationToken") != "" && refused {
					refused = false
					return http.StatusBadRequest, []byte(body), true
				}
				return 0, nil, false
			}
			c := newAmazon2026Conn(t, ts, nil)
			p1, err := c.ListOrders(ctx, amazonWindow)
			require.NoError(t, err)
			req := amazonWindow
			req.Token, req.Page = p1.NextToken, 2
			p2, err := c.ListOrders(ctx, req)
			require.NoError(t, err, "a refused token is no failure")
			require.Empty(t, p2.Orders)
			require.NotEmpty(t, p2.NextToken, "the window goes on, from its start")
			require.NotEqual(t, req.Token, p2.NextToken)
			require.Equal(t, 0.0056, p2.RateLimit, "the refusal's usage plan is learned too")
			require.Len(t, f.requests(), 2, "one request per call: the restart waits for a slot of its own")

			var seen []string
			for req.Token, req.Page = p2.NextToken, 3; req.Token != ""; req.Page++ {
				require.Less(t, req.Page, 10)
				p, err := c.ListOrders(ctx, req)
				require.NoError(t, err)
				seen = append(seen, orderIDs(p.Orders)...)
				req.Token = p.NextToken
			}
			require.Equal(t, []string{"902-3159896-1390916", "028-1520435-1234567", "171-7038155-6977115"}, seen, "the whole window, nothing skipped")

			asked := f.requests()
			require.Len(t, asked, 4)
			tokens := make([]string, len(asked))
			for i, q := range asked {
				tokens[i] = q.Get("paginationToken")
				require.Equal(t, "2026-03-01T10:00:00.000Z", q.Get("lastUpdatedAfter"), "request %d covers the whole window", i)
			}
			require.Equal(t, []string{"", amazon2026NextToken, "", amazon2026NextToken}, tokens, "the dead token is never sent again")
		})
	}
	t.Run("two restarts of one window hand out different tokens", func(t *testing.T) {
		f, ts := newAmazon2026Fake(t)
		f.respond = func(q url.Values) (int, []byte, bool) {
			if q.Get("paginationToken") != "" {
				return http.StatusBadRequest, []byte(amazonTokenRefusals["expired"]), true
			}
			return 0, nil, false
		}
		c := newAmazon2026Conn(t, ts, nil)
		p1, err := c.ListOrders(ctx, amazonWindow)
		require.NoError(t, err)
		req := amazonWindow
		req.Token = p1.NextToken
		a, err := c.ListOrders(ctx, req)
		require.NoError(t, err)
		b, err := c.ListOrders(ctx, req)
		require.NoError(t, err)
		require.NotEqual(t, a.NextToken, b.NextToken, "a repeated token would read as a paging cycle")
	})
	t.Run("a v0 NextToken (api_version changed mid-slice) starts the window over", func(t *testing.T) {
		f, ts := newAmazon2026Fake(t)
		req := amazonWindow
		req.Token, req.Page = amazonNextToken, 2
		p, err := newAmazon2026Conn(t, ts, nil).ListOrders(ctx, req)
		require.NoError(t, err)
		require.Len(t, p.Orders, 2)
		require.Empty(t, f.requests()[0].Get("paginationToken"))
	})
	t.Run("a 400 about something else stays permanent", func(t *testing.T) {
		for _, body := range []string{
			`{"errors":[{"code":"InvalidInput","message":"lastUpdatedBefore must be at least 2 minutes before the time of the request.","details":""}]}`,
			`{"errors":[{"code":"InvalidInput","message":"Invalid includedData value \"BUYERS\".","details":""}]}`,
			`{"errors":[{"code":"InvalidInput","message":"marketplaceIds accepts at most 50 marketplaces.","details":""}]}`,
			`not json at all`,
		} {
			f, ts := newAmazon2026Fake(t)
			f.respond = func(q url.Values) (int, []byte, bool) {
				if q.Get("paginationToken") != "" {
					return http.StatusBadRequest, []byte(body), true
				}
				return 0, nil, false
			}
			c := newAmazon2026Conn(t, ts, nil)
			p1, err := c.ListOrders(ctx, amazonWindow)
			require.NoError(t, err)
			req := amazonWindow
			req.Token, req.Page = p1.NextToken, 2
			_, err = c.ListOrders(ctx, req)
			var pe *connectors.PermanentError
			require.ErrorAs(t, err, &pe, body)
			require.Equal(t, http.StatusBadRequest, pe.Status)
			require.Len(t, f.requests(), 2, "no restart")
		}
	})
	t.Run("a token-like 400 on a first page (no token sent) stays permanent", func(t *testing.T) {
		f, ts := newAmazon2026Fake(t)
		f.respond = func(url.Values) (int, []byte, bool) {
			return http.StatusBadRequest, []byte(amazonTokenRefusals["input not valid"]), true
		}
		_, err := newAmazon2026Conn(t, ts, nil).ListOrders(ctx, amazonWindow)
		var pe *connectors.PermanentError
		require.ErrorAs(t, err, &pe)
		require.Len(t, f.requests(), 1)
	})
}

func TestAmazon2026Errors(t *testing.T) {
	ctx := context.Background()
	t.Run("429 reports the usage plan and waits a request's worth", func(t *testing.T) {
		f, ts := newAmazon2026Fake(t)
		f.respond = func(url.Values) (int, []byte, bool) {
			return http.StatusTooManyRequests, fixture(t, "amazon/error_quota.json"), true
		}
		_, err := newAmazon2026Conn(t, ts, nil).ListOrders(ctx, amazonWindow)
		var rl *connectors.RateLimitError
		require.ErrorAs(t, err, &rl)
		require.Equal(t, 0.0056, rl.Limit)
		require.InDelta(t, 178.6, rl.RetryAfter.Seconds(), 0.1, "1/0.0056 s: SP-API sends no Retry-After")
	})
	t.Run("the two-minute rule", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			end     time.Duration // before now
			refused bool
		}{
			{"a window ending a minute ago is refused, not clamped", time.Minute, true},
			{"one ending three minutes ago is fetched", 3 * time.Minute, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f, ts := newAmazon2026Fake(t)
				now := time.Now()
				_, err := newAmazon2026Conn(t, ts, nil).ListOrders(ctx, connectors.PageRequest{From: now.Add(-time.Hour), To: now.Add(-tc.end), Page: 1})
				if !tc.refused {
					require.NoError(t, err)
					return
				}
				var te *connectors.TransientError
				require.ErrorAs(t, err, &te)
				require.Contains(t, te.Msg, "less than 2m0s before now, which searchOrders rejects; retry in")
				require.Empty(t, f.requests(), "nothing asked")
			})
		}
	})
	t.Run("an answer for a narrower window is retried, not taken", func(t *testing.T) {
		for _, tc := range []struct {
			echoed  string
			refused bool
		}{
			{"2026-03-01T11:59:00Z", true},
			{"2026-03-01T12:00:00Z", false},     // the bound without milliseconds
			{"2026-03-01T12:00:00.000Z", false}, // as asked
			{"", false},                         // not said
		} {
			t.Run(tc.echoed, func(t *testing.T) {
				f, ts := newAmazon2026Fake(t)
				f.respond = func(url.Values) (int, []byte, bool) {
					return http.StatusOK, []byte(`{"orders":[],"lastUpdatedBefore":"` + tc.echoed + `"}`), true
				}
				_, err := newAmazon2026Conn(t, ts, nil).ListOrders(ctx, amazonWindow)
				if !tc.refused {
					require.NoError(t, err)
					return
				}
				var te *connectors.TransientError
				require.ErrorAs(t, err, &te)
				require.Contains(t, te.Msg, "searchOrders listed orders updated until 2026-03-01T11:59:00Z, not until 2026-03-01T12:00:00.000Z as asked")
			})
		}
	})
	t.Run("a 403 names the credential reference", func(t *testing.T) {
		f, ts := newAmazon2026Fake(t)
		f.respond = func(url.Values) (int, []byte, bool) {
			return http.StatusForbidden, fixture(t, "amazon/error_unauthorized.json"), true
		}
		_, err := newAmazon2026Conn(t, ts, nil).ListOrders(ctx, amazonWindow)
		var pe *connectors.PermanentError
		require.ErrorAs(t, err, &pe)
		require.Contains(t, pe.Msg, "authentication failed: Unauthorized: Access to requested resource is denied. (check the credentials in file:")
	})
}

func TestAmazon2026MalformedOrders(t *testing.T) {
	const head = `{"orders":[{"orderId":"A-1","lastUpdatedTime":"2026-03-01T10:30:00Z","orderItems":[]},` +
		`{"orderId":"A-2","lastUpdatedTime":"2026-03-01T10:31:00Z","orderItems":[{"orderItemId":"L-1","quantityOrdered":1},`
	tests := []struct {
		name   string
		body   string
		want   string
		offset func(body string) int // where the MalformedError points
	}{
		{"an item's quantity of the wrong kind", head + `{"orderItemId":"L-2","quantityOrdered":"two"}]}]}`,
			`order 1: id A-2: orderItems[1]: quantityOrdered is a string, want an integer`,
			func(b string) int { return strings.Index(b, `"two"`) + len(`"two"`) }},
		{"an item's unit price that is not a decimal", head + `{"orderItemId":"L-2","quantityOrdered":1,"product":{"price":{"unitPrice":{"amount":"1,50","currencyCode":"EUR"}}}}]}]}`,
			`order 1: id A-2: orderItems[1]: orderItemId L-2: product.price.unitPrice.amount "1,50" is not a decimal number`,
			func(b string) int { return strings.Index(b, `{"orderId":"A-2"`) }},
		{"an item without an id", head + `{"quantityOrdered":1}]}]}`,
			`order 1: id A-2: orderItems[1]: missing orderItemId`, func(b string) int { return strings.Index(b, `{"orderId":"A-2"`) }},
		{"an item id twice", head + `{"orderItemId":"L-1","quantityOrdered":2}]}]}`,
			`order 1: id A-2: orderItems[1]: orderItemId L-1 appears twice`, func(b string) int { return strings.Index(b, `{"orderId":"A-2"`) }},
		{"a negative quantity", head + `{"orderItemId":"L-2","quantityOrdered":-1}]}]}`,
			`order 1: id A-2: orderItems[1]: orderItemId L-2: quantityOrdered -1 is negative`, func(b string) int { return strings.Index(b, `{"orderId":"A-2"`) }},
		{"orderItems not an array", `{"orders":[{"orderId":"A-1","lastUpdatedTime":"2026-03-01T10:30:00Z","orderItems":{"orderItemId":"L-1"}}]}`,
			`order 0: id A-1: field "orderItems" is not an array`, func(b string) int { return strings.Index(b, `{"orderId"`) }},
		{"a total that is not a decimal", `{"orders":[{"orderId":"A-1","lastUpdatedTime":"2026-03-01T10:30:00Z","proceeds":{"grandTotal":{"amount":"1e3","currencyCode":"EUR"}},"orderItems":[]}]}`,
			`order 0: id A-1: proceeds.grandTotal.amount "1e3" is not a decimal number`, func(b string) int { return strings.Index(b, `{"orderId"`) }},
		{"no orders array", `{"pagination":{"nextToken":"x"}}`, `field "orders" is missing`, func(string) int { return -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ts := newAmazon2026Fake(t)
			f.respond = func(url.Values) (int, []byte, bool) { return http.StatusOK, []byte(tt.body), true }
			req := amazonWindow
			req.Page = 4
			_, err := newAmazon2026Conn(t, ts, nil).ListOrders(context.Background(), req)
			var me *connectors.MalformedError
			require.ErrorAs(t, err, &me)
			require.Equal(t, 4, me.Page)
			require.Equal(t, "amazon-eu", me.Platform)
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, int64(tt.offset(tt.body)), me.Offset)
		})
	}
}

func TestAmazon2026OrderWithoutItemsKeepsTheStoredLines(t *testing.T) {
	f, ts := newAmazon2026Fake(t)
	f.respond = func(url.Values) (int, []byte, bool) {
		return http.StatusOK, []byte(`{"orders":[{"orderId":"A-1","lastUpdatedTime":"2026-03-01T10:30:00Z"},` +
			`{"orderId":"A-2","lastUpdatedTime":"2026-03-01T10:31:00Z","orderItems":[]}]}`), true
	}
	p, err := newAmazon2026Conn(t, ts, nil).ListOrders(context.Background(), amazonWindow)
	require.NoError(t, err)
	require.False(t, p.Orders[0].HasLines, "orderItems absent: the lines are unknown, not none")
	require.True(t, p.Orders[1].HasLines, "orderItems empty: an order with no lines")
	require.Empty(t, p.Orders[1].Lines)
	require.Empty(t, p.NextToken)
}

func TestAmazon2026TokenRefresh(t *testing.T) {
	f, ts := newAmazon2026Fake(t)
	f.tokens.check = func(t *testing.T, r *http.Request) {
		assert.Equal(t, "refresh_token", r.PostForm.Get("grant_type"))
		assert.Equal(t, "Atzr|refresh-me", r.PostForm.Get("refresh_token"))
	}
	f.tokens.expiresIn = 1
	c := newAmazon2026Conn(t, ts, nil)
	_, err := c.ListOrders(context.Background(), amazonWindow)
	require.NoError(t, err)
	time.Sleep(time.Second)
	_, err = c.ListOrders(context.Background(), amazonWindow)
	require.NoError(t, err)
	require.Equal(t, int32(2), f.tokens.calls.Load(), "an expired access token is refreshed")
}

func orderIDs(orders []connectors.Order) []string {
	out := make([]string, len(orders))
	for i, o := range orders {
		out[i] = o.ID
	}
	return out
}
