package connectors_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// One small platform of every kind, for tests that must hold for all of
// them (origin checks, order decoding).

// kindFixture is a minimal platform of one kind: where it lists orders, a
// one-order page, and its settings. OAuth kinds get their token from /token
// (on a server of its own where a test says so).
type kindFixture struct {
	name, kind, secret string
	ordersPath         string
	page, wantID       string
	idField            string // the page's id member
	badID              string // the order error for an id of the wrong kind, with %s for the kind
	oauth              bool
	options            func(tokenURL string) map[string]any
	method             string // of the order listing; "" is GET
	idRaw              string // the id's JSON in page, when not wantID itself
}

// listMethod is the HTTP method f lists orders with.
func (f kindFixture) listMethod() string {
	if f.method != "" {
		return f.method
	}
	return http.MethodGet
}

var kindFixtures = []kindFixture{
	{name: "sim", kind: "sim", secret: "sim-bearer-secret", ordersPath: "/orders",
		page: pageJSON("", orderJSON("S-1", "2026-03-01T10:30:00Z")), wantID: "S-1",
		idField: "id", badID: "id is %s, want a string"},
	{name: "shopify", kind: "shopify", secret: "shpat_origin_secret", ordersPath: "/admin/api/" + connectors.DefaultShopifyAPIVersion + "/orders.json",
		options: func(string) map[string]any { return map[string]any{"api": "rest"} },
		page:    `{"orders":[{"id":1001,"updated_at":"2026-03-01T10:30:00Z","total_price":"1.00"}]}`, wantID: "1001",
		idField: "id", badID: "id is %s, want a number"},
	{name: "amazon", kind: "amazon", secret: oauthSecret, oauth: true, ordersPath: "/orders/2026-01-01/orders",
		options: func(tokenURL string) map[string]any {
			return map[string]any{"marketplace_ids": []any{"A1PA6795UKMFR9"}, "token_url": tokenURL}
		},
		page: `{"orders":[{"orderId":"A-1","lastUpdatedTime":"2026-03-01T10:30:00Z","orderItems":[]}]}`, wantID: "A-1",
		idField: "orderId", badID: "orderId is %s, want a string"},
	{name: "ebay", kind: "ebay", secret: oauthSecret, oauth: true, ordersPath: "/sell/fulfillment/v1/order",
		options: func(tokenURL string) map[string]any { return map[string]any{"token_url": tokenURL} },
		page:    `{"orders":[{"orderId":"E-1","lastModifiedDate":"2026-03-01T10:30:00.000Z","pricingSummary":{"total":{"value":"1.00","currency":"USD"}}}]}`, wantID: "E-1",
		idField: "orderId", badID: "orderId is %s, want a string"},
	{name: "woocommerce basic auth", kind: "woocommerce", secret: `{"consumer_key":"ck_origin_key","consumer_secret":"cs_origin_secret"}`, ordersPath: "/wp-json/wc/v3/orders",
		page: `[{"id":5,"date_modified_gmt":"2026-03-01T10:30:00","total":"1.00"}]`, wantID: "5",
		idField: "id", badID: "id is %s, want a number"},
	{name: "woocommerce query auth", kind: "woocommerce", secret: `{"consumer_key":"ck_origin_key","consumer_secret":"cs_origin_secret"}`, ordersPath: "/wp-json/wc/v3/orders",
		options: func(string) map[string]any { return map[string]any{"auth": "query"} },
		page:    `[{"id":5,"date_modified_gmt":"2026-03-01T10:30:00","total":"1.00"}]`, wantID: "5",
		idField: "id", badID: "id is %s, want a number"},
	{name: "http header auth", kind: "http", secret: "http-api-key-secret", ordersPath: "/orders",
		options: func(string) map[string]any { return httpKindOptions("link") }, page: `{"orders":[{"id":"H-1","updated_at":"2026-03-01T10:30:00Z"}]}`, wantID: "H-1",
		idField: "id", badID: `id at "id" is %s, want a string or number`},
	{name: "shopify graphql", kind: "shopify", secret: "shpat_origin_secret", method: http.MethodPost,
		ordersPath: "/admin/api/" + connectors.DefaultShopifyAPIVersion + "/graphql.json",
		page: `{"data":{"orders":{"nodes":[{"id":"gid://shopify/Order/1001","updatedAt":"2026-03-01T10:30:00Z",` +
			`"totalPriceSet":{"shopMoney":{"amount":"1.00","currencyCode":"USD"}},"lineItems":{"nodes":[],"pageInfo":{"hasNextPage":false}}}],` +
			`"pageInfo":{"hasNextPage":false,"endCursor":null}}}}`,
		wantID: "1001", idField: "id", idRaw: `"gid://shopify/Order/1001"`, badID: "id is %s, want a string"},
}

// httpKindOptions is an http platform with header auth and the given pagination style.
func httpKindOptions(style string) map[string]any {
	return map[string]any{"path": "/orders", "auth": map[string]any{"type": "header", "name": "X-Api-Key"},
		"window": map[string]any{"from_param": "from", "to_param": "to"}, "records_path": "orders",
		"fields": map[string]any{"id": "id", "updated_at": "updated_at"}, "pagination": map[string]any{"style": style}}
}

var kindWindow = connectors.PageRequest{From: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), Page: 1}

// hasCredential says whether a request carries any credential of the kinds above.
func hasCredential(r *http.Request) bool {
	for _, h := range []string{"Authorization", "X-Shopify-Access-Token", "X-Amz-Access-Token", "X-Api-Key"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return r.URL.Query().Get("consumer_secret") != ""
}

// serveKind answers f's order listing with its page (401 without a
// credential) and token requests with an access token.
func serveKind(f kindFixture) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/token":
			writeBody(w, http.StatusOK, []byte(`{"access_token":"access-token-1","expires_in":3600}`))
		case r.URL.Path != f.ordersPath:
			http.NotFound(w, r)
		case !hasCredential(r):
			writeBody(w, http.StatusUnauthorized, []byte(`{"message":"no credential"}`))
		default:
			writeBody(w, http.StatusOK, []byte(f.page))
		}
	}
}

// kindPlatform builds f's connector against the API at api and the token endpoint at auth.
func kindPlatform(t *testing.T, f kindFixture, api, auth string) connectors.Connector {
	t.Helper()
	var options map[string]any
	if f.options != nil {
		options = f.options(auth + "/token")
	}
	c, err := connectors.New(config.Platform{Name: "hostile-" + f.kind, Kind: f.kind, Endpoint: api, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, f.secret), Options: options})
	require.NoError(t, err)
	return c
}

// withID is f's page with the order's id replaced by raw JSON.
func (f kindFixture) withID(raw string) string {
	lits := []string{strconv.Quote(f.wantID), f.wantID}
	if f.idRaw != "" {
		lits = []string{f.idRaw}
	}
	for _, lit := range lits {
		if old := `"` + f.idField + `":` + lit; strings.Contains(f.page, old) {
			return strings.Replace(f.page, old, `"`+f.idField+`":`+raw, 1)
		}
	}
	panic("no id in the page of " + f.name)
}
