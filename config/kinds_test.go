package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKindDefaultsApplyOnlyToUnsetFields(t *testing.T) {
	f, err := Parse([]byte(`
default:
  rate_limit: {burst: 3}
platforms:
  amz:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {env: AMZ}
    options: {marketplace_ids: [A1PA6795UKMFR9]}
  amz-tuned:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {env: AMZ}
    settle: 5m
    page_size: 50
    interval: 30m
    options: {marketplace_ids: A1PA6795UKMFR9}
  shop:
    kind: shopify
    endpoint: https://acme.myshopify.com
    credentials: {env: SHOP}
  shop-rest:
    kind: shopify
    endpoint: https://acme.myshopify.com
    credentials: {env: SHOP}
    options: {api: rest}
  woo:
    kind: woocommerce
    endpoint: https://shop.example.com
    credentials: {env: WOO}
  bay:
    kind: ebay
    endpoint: https://api.ebay.com
    credentials: {env: BAY}
  simmy:
    kind: sim
    endpoint: http://127.0.0.1:8780/shops/acme
    credentials: {env: SIM}
`))
	require.NoError(t, err)
	get := func(name string) Platform {
		p, ok := f.Get(name)
		require.True(t, ok)
		return p
	}
	amz := get("amz")
	require.Equal(t, RateLimit{RPS: 0.0056, Burst: 3}, amz.RateLimit, "rps from the kind (searchOrders), burst from the default block")
	require.Equal(t, 3*time.Minute, amz.Settle.D())
	require.Equal(t, 100, amz.PageSize)
	require.Equal(t, time.Hour, amz.Interval.D())

	tuned := get("amz-tuned")
	require.Equal(t, 5*time.Minute, tuned.Settle.D(), "the platform entry wins")
	require.Equal(t, 50, tuned.PageSize)
	require.Equal(t, 30*time.Minute, tuned.Interval.D())
	o, err := KindOptions[AmazonOptions](tuned)
	require.NoError(t, err)
	require.Equal(t, []string{"A1PA6795UKMFR9"}, o.MarketplaceIDs, "a single value is a list of one")
	require.Equal(t, DefaultAmazonTokenURL, o.TokenURL)

	shop := get("shop")
	require.Equal(t, 50, shop.PageSize, "GraphQL, the default API: a page within the single-query cost")
	require.Equal(t, RateLimit{RPS: 10, Burst: 3}, shop.RateLimit)
	so, err := KindOptions[ShopifyOptions](shop)
	require.NoError(t, err)
	on := true
	require.Equal(t, ShopifyOptions{API: ShopifyGraphQL, APIVersion: DefaultShopifyAPIVersion, RestoreRate: 100,
		MaxCostAvailable: 2000, LineItemsPageSize: 4, BulkBackfill: &on, BulkMinSpan: DefaultShopifyBulkMinSpan,
		BulkPollInterval: DefaultShopifyBulkPollInterval, BulkConcurrency: 5, OrderFields: ShopifyOrderFieldGroups}, so, "bulk backfill on for GraphQL; 2026-10 runs five at once")
	rest := get("shop-rest")
	require.Equal(t, 250, rest.PageSize, "REST keeps its own defaults")
	require.Equal(t, RateLimit{RPS: 2, Burst: 3}, rest.RateLimit)

	require.Equal(t, 100, get("woo").PageSize)
	require.Equal(t, 200, get("bay").PageSize)
	eo, err := KindOptions[EbayOptions](get("bay"))
	require.NoError(t, err)
	require.Equal(t, "https://api.ebay.com/identity/v1/oauth2/token", eo.TokenURL)
	require.Equal(t, BuiltinDefaults().PageSize, get("simmy").PageSize, "sim has no kind defaults")
	require.Equal(t, BuiltinDefaults().Settle, get("simmy").Settle)
}

// TestKindSpecs: every kind's defaults keep its own limits at each API it
// speaks, and a kind that picks defaults by an option has that option.
func TestKindSpecs(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range kindSpecs {
		require.NotEmpty(t, s.name)
		require.False(t, seen[s.name], "kind %s has two specs", s.name)
		seen[s.name] = true
		require.Equal(t, s.apiOption != "", len(s.apiDefaults) > 0, "kind %s: apiOption and apiDefaults go together", s.name)
		if s.apiOption != "" {
			require.NotNil(t, s.options, "kind %s", s.name)
			require.Contains(t, yamlFields(reflect.TypeOf(s.options()).Elem()), s.apiOption, "kind %s", s.name)
		}
		infos := map[string]KindInfo{"": s.defaults}
		for api, k := range s.apiDefaults {
			infos[api] = k
		}
		for api, k := range infos {
			if k.MaxPageSize > 0 {
				require.LessOrEqual(t, k.PageSize, k.MaxPageSize, "kind %s api %q", s.name, api)
			}
			settle := k.Settle
			if settle == 0 {
				settle = BuiltinDefaults().Settle
			}
			require.GreaterOrEqual(t, settle, k.MinSettle, "kind %s api %q", s.name, api)
		}
	}
	require.Len(t, Kinds, len(kindSpecs))
}

func TestKindValidation(t *testing.T) {
	const head = "platforms:\n  x:\n    credentials: {env: X}\n"
	tests := []struct {
		name string
		yaml string
		want []string // one per problem
	}{
		{"amazon settle and page size", head + "    kind: amazon\n    endpoint: https://sellingpartnerapi-na.amazon.com\n    settle: 90s\n    page_size: 101\n    options: {marketplace_ids: [ATVPDKIKX0DER]}\n",
			[]string{`platform "x": field "page_size": amazon accepts at most 100 orders per page, got 101`,
				`platform "x": field "settle": amazon rejects windows ending less than 2m0s before now; must be at least 2m0s, got 1m30s`}},
		{"amazon settle from the default block is checked too", "default:\n  settle: 1m\n" + head + "    kind: amazon\n    endpoint: https://sellingpartnerapi-na.amazon.com\n    options: {marketplace_ids: [ATVPDKIKX0DER]}\n",
			[]string{`field "settle": amazon rejects windows ending less than 2m0s`}},
		{"amazon needs marketplaces", head + "    kind: amazon\n    endpoint: https://sellingpartnerapi-na.amazon.com\n    options: {marketplace_ids: [], token_url: 'ftp://x'}\n",
			[]string{`platform "x": field "options.marketplace_ids": is required`, `field "options.token_url": "ftp://x" is not an http(s) URL`}},
		{"typo in an option", head + "    kind: amazon\n    endpoint: https://sellingpartnerapi-na.amazon.com\n    options: {marketplace_id: [ATVPDKIKX0DER]}\n",
			[]string{`field "options.marketplace_id": unknown option (known here: api_version, include_buyer, include_recipient, included_data, marketplace_ids, token_url)`}},
		{"wrong option type", head + "    kind: amazon\n    endpoint: https://sellingpartnerapi-na.amazon.com\n    options: {marketplace_ids: {a: b}}\n",
			[]string{`field "options.marketplace_ids": must be a list of strings, got {"a":"b"}`}},
		{"shopify version", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    page_size: 251\n    options: {api_version: '2026-02'}\n",
			[]string{`field "page_size": shopify accepts at most 250`, `field "options.api_version": "2026-02" is not a Shopify API version`}},
		{"shopify graphql order over the single-query cost", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    page_size: 250\n    options: {line_items_page_size: 100}\n",
			[]string{`platform "x": field "options.line_items_page_size": one order listing 100 lines with its field groups costs 1099 points, over Shopify's single-query maximum of 1000: lower line_items_page_size, order_fields or order_fragment`}},
		{"shopify order fields and fragment", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    options: {order_fields: [customer, buyer, customer], order_fragment: 'poNumber(first: 1)'}\n",
			[]string{`field "options.order_fields": "buyer" is not a field group (one of customer, addresses, shipping_lines, tax_lines, discounts, notes, payment, refunds, fulfillments)`,
				`field "options.order_fields": "customer" is listed twice`,
				`field "options.order_fragment": byte 8: arguments are not allowed ("(")`}},
		{"amazon buyer and recipient need 2026-01-01", head + "    kind: amazon\n    endpoint: https://sellingpartnerapi-na.amazon.com\n    options: {api_version: v0, marketplace_ids: [ATVPDKIKX0DER], include_buyer: true, include_recipient: true}\n",
			[]string{`field "options.include_buyer": needs api_version 2026-01-01`, `field "options.include_recipient": needs api_version 2026-01-01`}},
		{"shopify graphql slices past the pagination limit", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    page_size: 20\n    max_pages: 2000\n    options: {line_items_page_size: 10}\n",
			[]string{`platform "x": field "max_pages": 2000 pages of 20 orders page through 40000 orders in one query, past Shopify's limit of 25000: use at most 1250`}},
		{"shopify options", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    options: {api: soap, restore_rate: -1, max_cost_available: 500, line_items_page_size: 251}\n",
			[]string{`field "options.api": must be graphql or rest, got "soap"`, `field "options.restore_rate": must be positive`,
				`field "options.max_cost_available": must hold Shopify's single-query maximum of 1000 points, got 500`,
				`field "options.line_items_page_size": must be between 1 and 250, got 251`}},
		{"shopify bulk options", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    options: {bulk_min_span: 10ms, bulk_poll_interval: 1h, bulk_concurrency: -1}\n",
			[]string{`field "options.bulk_min_span": must be at least 1s`, `field "options.bulk_poll_interval": must be between 100ms and 10m, got 1h0m0s`,
				`field "options.bulk_concurrency": must be at least 1, got -1`}},
		{"shopify bulk needs graphql", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    page_size: 250\n    options: {api: rest, bulk_backfill: true}\n",
			[]string{`field "options.bulk_backfill": bulk queries need api: graphql, got api "rest"`}},
		{"shopify option of the wrong type", head + "    kind: shopify\n    endpoint: https://a.myshopify.com\n    options: {restore_rate: fast}\n",
			[]string{`field "options.restore_rate": must be a number, got "fast"`}},
		{"woocommerce over plain http", head + "    kind: woocommerce\n    endpoint: http://shop.example.com\n    options: {auth: oauth1}\n",
			[]string{`field "endpoint": WooCommerce accepts a consumer key and secret only over HTTPS`, `field "options.auth": must be basic or query, got "oauth1"`}},
		{"kind checks wait for the generic ones", head + "    kind: amazon\n    endpoint: https://sellingpartnerapi-na.amazon.com\n    retries: -1\n",
			[]string{`field "retries": must not be negative`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want), "one line per problem:\n%s", err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestOptionsSharedByKindsInTheDefaultBlock(t *testing.T) {
	f, err := Parse([]byte(`
default:
  options: {auth: query, marketplace_ids: [ATVPDKIKX0DER]}
platforms:
  woo:
    kind: woocommerce
    endpoint: https://shop.example.com
    credentials: {env: WOO}
  amz:
    kind: amazon
    endpoint: https://sellingpartnerapi-na.amazon.com
    credentials: {env: AMZ}
`))
	require.NoError(t, err, "an option of another kind is not a typo")
	p, _ := f.Get("woo")
	o, err := KindOptions[WooCommerceOptions](p)
	require.NoError(t, err)
	require.Equal(t, "query", o.Auth)

	// api_version is an option of shopify and amazon alike, so a Shopify
	// version in the default block reaches amazon platforms too: the error
	// says where it belongs.
	_, err = Parse([]byte(`
default:
  options: {api_version: "2026-07", marketplace_ids: [ATVPDKIKX0DER]}
platforms:
  shop:
    kind: shopify
    endpoint: https://acme.myshopify.com
    credentials: {env: SHOP}
  amz:
    kind: amazon
    endpoint: https://sellingpartnerapi-na.amazon.com
    credentials: {env: AMZ}
`))
	require.EqualError(t, err, `platform "amz": field "options.api_version": "2026-07" is not an Amazon Orders API version (2026-01-01, or v0 until 2027-03-27); a Shopify api_version belongs on the shopify platforms, not in the default block`)
}

func TestAmazonAPIVersions(t *testing.T) {
	const amz = "platforms:\n  amz:\n    kind: amazon\n    endpoint: https://sellingpartnerapi-eu.amazon.com\n    credentials: {env: AMZ}\n"
	tests := []struct {
		name     string
		yaml     string
		version  string
		rate     RateLimit
		included []string
		warning  string // "" for none
	}{
		{"no api_version is 2026-01-01 (existing files move to searchOrders)", amz + "    options: {marketplace_ids: [A1PA6795UKMFR9]}\n",
			AmazonAPI20260101, RateLimit{RPS: 0.0056, Burst: 20}, nil, ""},
		{"explicit 2026-01-01 with buyer and recipient", amz + "    options: {api_version: 2026-01-01, marketplace_ids: [A1PA6795UKMFR9], included_data: [BUYER, RECIPIENT]}\n",
			AmazonAPI20260101, RateLimit{RPS: 0.0056, Burst: 20}, []string{"BUYER", "RECIPIENT"}, ""},
		{"legacy v0 keeps getOrders' rate and warns", amz + "    options: {api_version: v0, marketplace_ids: [A1PA6795UKMFR9]}\n",
			AmazonAPIV0, RateLimit{RPS: 0.0167, Burst: 20}, nil,
			`platform "amz": field "options.api_version": Amazon removes Orders API v0 (getOrders) on 2027-03-27; set api_version 2026-01-01`},
		{"v0 from the default block", "default:\n  options: {api_version: v0}\n" + amz + "    options: {marketplace_ids: [A1PA6795UKMFR9]}\n",
			AmazonAPIV0, RateLimit{RPS: 0.0167, Burst: 20}, nil, `Amazon removes Orders API v0`},
		{"a rate written in the file wins over either version's", amz + "    rate_limit: {rps: 0.5}\n    options: {api_version: v0, marketplace_ids: [A1PA6795UKMFR9]}\n",
			AmazonAPIV0, RateLimit{RPS: 0.5, Burst: 20}, nil, `Amazon removes Orders API v0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.yaml))
			require.NoError(t, err)
			p, _ := f.Get("amz")
			o, err := KindOptions[AmazonOptions](p)
			require.NoError(t, err)
			require.Equal(t, tt.version, o.APIVersion)
			require.Equal(t, tt.included, o.IncludedData)
			require.Equal(t, tt.rate, p.RateLimit)
			if v, ok := p.Options["api_version"]; ok {
				require.Equal(t, tt.version, v, "an unquoted 2026-01-01 is the version as written, not a YAML timestamp")
			}
			ws := f.Warnings()
			if tt.warning == "" {
				require.Empty(t, ws)
				return
			}
			require.Len(t, ws, 1)
			require.Contains(t, ws[0].String(), tt.warning)
		})
	}

	bad := []struct{ name, options, want string }{
		{"unknown version", "{api_version: v1, marketplace_ids: [A1PA6795UKMFR9]}", `field "options.api_version": "v1" is not an Amazon Orders API version`},
		{"included data with v0", "{api_version: v0, marketplace_ids: [A1PA6795UKMFR9], included_data: [BUYER]}", `field "options.included_data": needs api_version 2026-01-01`},
		{"unknown dataset", "{marketplace_ids: [A1PA6795UKMFR9], included_data: [buyer]}", `field "options.included_data": "buyer" is not a searchOrders dataset (one of BUYER, RECIPIENT,`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(amz + "    options: " + tt.options + "\n"))
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestKindOptionsSurviveJSON(t *testing.T) {
	// Workflows carry a platform as JSON: numbers come back as float64.
	p := Platform{Name: "x", Kind: "http", Options: map[string]any{}}
	require.NoError(t, json.Unmarshal([]byte(`{
		"path": "/orders", "window": {"from_param": "from", "to_param": "to"},
		"pagination": {"style": "page", "page_param": "p"},
		"records_path": ".", "fields": {"id": "id", "updated_at": "meta.updated"},
		"errors": {"retryable_status": [500, 503]}, "extra_query": {"status": "any", "n": 5}
	}`), &p.Options))
	o, err := KindOptions[HTTPOptions](p)
	require.NoError(t, err)
	require.Equal(t, []int{500, 503}, o.Errors.RetryableStatus)
	require.Equal(t, []int{429}, o.Errors.RateLimitStatus)
	require.Equal(t, 1, *o.Pagination.StartPage, "pages count from 1 unless start_page says otherwise")
	require.Equal(t, "bearer", o.Auth.Type)
	require.Equal(t, "rfc3339", o.Window.Format)
	require.Equal(t, map[string]string{"status": "any", "n": "5"}, o.ExtraQuery)
}

func TestHTTPKindOptionsAreValidatedAtLoad(t *testing.T) {
	const platform = "platforms:\n  api:\n    kind: http\n    endpoint: https://api.example.com/v2\n    credentials: {env: API_TOKEN}\n    options:\n"
	good := platform + `      path: /orders
      auth: {type: header, name: X-Api-Key}
      window: {from_param: updated_from, to_param: updated_to, format: unix_ms, to_inclusive: true}
      page_size_param: limit
      pagination: {style: cursor, token_param: page_token, token_path: meta.next, token_only: true}
      records_path: data.orders
      fields: {id: id, updated_at: updated_at, total: amounts.total, time_format: "2006-01-02 15:04:05"}
      errors: {retryable_status: [500, 503], message_path: error.detail}
      extra_query: {status: any}
      headers: {Accept-Language: en}
`
	f, err := Parse([]byte(good))
	require.NoError(t, err)
	p, _ := f.Get("api")
	o, err := KindOptions[HTTPOptions](p)
	require.NoError(t, err)
	require.Equal(t, "X-Api-Key", o.Auth.Name)
	require.Equal(t, "meta.next", o.Pagination.TokenPath)
	require.Equal(t, "Retry-After", o.Errors.RetryAfterHeader)

	bad := platform + `      path: orders?x=1
      auth: {type: header}
      window: {from_param: from, to_param: from, format: yesterday}
      page_size_param: limit
      pagination: {style: page, token_path: next}
      records_path: "data..orders"
      fields: {updated_at: updated_at, colour: red}
      errors: {retryable_status: [200, 429]}
      extra_query: {limit: "10"}
      headers: {authorization: secret, X-Api-Key: literal-key}
`
	_, err = Parse([]byte(bad))
	require.Error(t, err)
	want := []string{
		`platform "api": field "options.fields.colour": unknown option (known here: created_at, currency, id, line_items, status, time_format, total, updated_at)`,
	}
	require.Equal(t, want, strings.Split(err.Error(), "\n")[0:1], "unknown keys are reported first and alone:\n%s", err)

	bad = strings.Replace(bad, ", colour: red", "", 1)
	_, err = Parse([]byte(bad))
	require.Error(t, err)
	want = []string{
		`platform "api": field "options.path": must start with / and hold no query (use extra_query), got "orders?x=1"`,
		`field "options.auth.name": is required with type header`,
		`field "options.window.to_param": "from" is already used by window.from_param`,
		`field "options.window.format": "yesterday" is not one of rfc3339, rfc3339nano, unix, unix_ms`,
		`field "options.pagination.token_path": is not used with style page`,
		`field "options.pagination.page_param": is required with style page`,
		`field "options.records_path": must be a dot-separated path like data.orders, got "data..orders"`,
		`field "options.fields.id": must be a dot-separated path like data.orders, got ""`,
		`field "options.errors.retryable_status": 200 must be a 4xx or 5xx status not in rate_limit_status`,
		`field "options.errors.retryable_status": 429 must be a 4xx or 5xx status not in rate_limit_status`,
		`field "options.extra_query.limit": "limit" is already used by page_size_param`,
		`field "options.headers.X-Api-Key": looks like a credential; put the secret in credentials and send it with auth.type header and auth.name X-Api-Key`,
		`field "options.headers.authorization": carries the secret`,
	}
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, len(want), "one line per problem:\n%s", err)
	for i, w := range want {
		require.Contains(t, lines[i], w)
	}
}

func TestShopifyRESTKeepsItsLimits(t *testing.T) {
	const yaml = "platforms:\n  x:\n    credentials: {env: X}\n    kind: shopify\n    endpoint: https://a.myshopify.com\n    max_pages: 200\n    options: {api: rest}\n"
	f, err := Parse([]byte(yaml))
	require.NoError(t, err, "the GraphQL cost and pagination limits are not REST's")
	p, _ := f.Get("x")
	require.Equal(t, 250, p.PageSize)
}

func TestWarnings(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	f, err := Parse([]byte(`
platforms:
  legacy:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: A}
    start: "-720h"
    options: {api: rest}
  deep:
    kind: shopify
    endpoint: https://b.myshopify.com
    credentials: {env: B}
    start: "2026-01-01T00:00:00Z"
  recent:
    kind: shopify
    endpoint: https://c.myshopify.com
    credentials: {env: C}
    start: "-1000h"
  other:
    kind: sim
    endpoint: http://127.0.0.1:8780/shops/acme
    credentials: {env: D}
`))
	require.NoError(t, err, "warnings never fail a load")
	get := func(name string) Platform { p, _ := f.Get(name); return p }
	lines := func(ps []Problem) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	require.Equal(t, []string{`platform "legacy": field "options.api": the REST Admin API is legacy (Shopify, October 2024); api: graphql reads the same orders with the same ids, so the platform can move without refetching (docs/connectors.md)`},
		lines(get("legacy").warnings(now)))
	require.Equal(t, []string{`platform "deep": field "start": reaches back 323 days: Shopify lists orders older than 60 days only to apps with the read_all_orders scope, and leaves them out without an error otherwise`},
		lines(get("deep").warnings(now)))
	require.Empty(t, get("recent").warnings(now), "41 days need no read_all_orders")
	require.Empty(t, get("other").warnings(now))
	require.Contains(t, f.Warnings(), get("legacy").warnings(now)[0], "the file's warnings are its platforms'")

	december := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, []string{`platform "recent": field "credentials": env:C holds a static token: from 2027-01-01 Shopify rejects non-expiring offline tokens of public apps (custom apps are exempt); ` +
		`for a public app move the shop to a stored expiring token (ordersync credentials migrate-shopify, or re-install through ordersync serve; docs/credentials.md)`},
		lines(get("recent").warnings(december)), "a month before Shopify's cut-off a static token is named")
	stored := get("recent")
	stored.Credentials = CredentialRef{Stored: "c"}
	require.Empty(t, stored.warnings(december), "a stored (expiring) token needs no warning")
	require.Empty(t, get("other").warnings(december), "only Shopify has the cut-off")
}

func TestHTTPKindLinesOption(t *testing.T) {
	const platform = "platforms:\n  api:\n    kind: http\n    endpoint: https://api.example.com/v2\n    credentials: {env: API_TOKEN}\n    options:\n" +
		"      path: /orders\n      window: {from_param: from, to_param: to}\n      pagination: {style: none}\n      records_path: orders\n" +
		"      fields: {id: id, updated_at: updated_at}\n"
	tests := []struct {
		name, lines string
		want        HTTPLines
		problems    []string
	}{
		{name: "not configured: no lines"},
		{name: "every field", lines: "{path: line_items, id: id, sku: sku, title: name, quantity: quantity, unit_price: price.amount, currency: price.currency}",
			want: HTTPLines{Path: "line_items", ID: "id", SKU: "sku", Title: "name", Quantity: "quantity", UnitPrice: "price.amount", Currency: "price.currency"}},
		{name: "only path and quantity", lines: "{path: items, quantity: qty}", want: HTTPLines{Path: "items", Quantity: "qty"}},
		{name: "fields without path", lines: "{sku: sku, quantity: qty}",
			problems: []string{`field "options.lines.path": is required when lines are configured`}},
		{name: "path without quantity", lines: "{path: items, sku: sku}",
			problems: []string{`field "options.lines.quantity": is required with lines.path`}},
		{name: "bad paths", lines: "{path: items., quantity: qty, title: 'a b'}",
			problems: []string{`field "options.lines.path": must be a dot-separated path`, `field "options.lines.title": must be a dot-separated path`}},
		{name: "unknown key", lines: "{path: items, quantity: qty, colour: red}",
			problems: []string{`field "options.lines.colour": unknown option (known here: currency, id, path, quantity, sku, title, unit_price)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := platform
			if tt.lines != "" {
				doc += "      lines: " + tt.lines + "\n"
			}
			f, err := Parse([]byte(doc))
			if len(tt.problems) > 0 {
				require.Error(t, err)
				lines := strings.Split(err.Error(), "\n")
				require.Len(t, lines, len(tt.problems), "one line per problem:\n%s", err)
				for i, w := range tt.problems {
					require.Contains(t, lines[i], w)
				}
				return
			}
			require.NoError(t, err)
			p, _ := f.Get("api")
			o, err := KindOptions[HTTPOptions](p)
			require.NoError(t, err)
			require.Equal(t, tt.want, o.Lines)
		})
	}
}

// TestShopifyBulkDefaults: bulk backfill is on for GraphQL and off for
// REST; the concurrency follows the API version (one before 2026-01, five
// from it); UseBulk picks slices at least bulk_min_span wide.
func TestShopifyBulkDefaults(t *testing.T) {
	f, err := Parse([]byte(`
platforms:
  old:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: X}
    options: {api_version: "2025-10"}
  rest:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: X}
    options: {api: rest}
  off:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: X}
    options: {bulk_backfill: false, bulk_min_span: 2h}
`))
	require.NoError(t, err)
	get := func(name string) ShopifyOptions {
		p, ok := f.Get(name)
		require.True(t, ok)
		o, err := KindOptions[ShopifyOptions](p)
		require.NoError(t, err)
		return o
	}
	old := get("old")
	require.Equal(t, 1, old.BulkConcurrency, "one bulk query at a time before 2026-01")
	require.True(t, old.UseBulk(24*time.Hour))
	require.False(t, old.UseBulk(23*time.Hour), "narrower than bulk_min_span")
	require.False(t, get("rest").UseBulk(30*24*time.Hour), "REST has no bulk queries")
	off := get("off")
	require.Equal(t, Duration(2*time.Hour), off.BulkMinSpan)
	require.False(t, off.UseBulk(30*24*time.Hour))
}

// An entry's own option that belongs to another kind is refused, naming
// the field (issue 26: options.token_url on a shopify platform validated
// and was ignored); the default block may still carry it for the kinds
// that have it, and amazon and ebay keep token_url.
func TestAnotherKindsOptionOnAnEntryIsRefused(t *testing.T) {
	_, err := Parse([]byte(`
platforms:
  shop:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: T}
    options: {token_url: "https://a.myshopify.com/admin/oauth/access_token", api: rest}
`))
	require.Error(t, err)
	require.Contains(t, err.Error(), `platform "shop": field "options.token_url": is an option of kind amazon and ebay, not of kind shopify, which would ignore it (line 7; known here: api, api_version,`)
	require.Len(t, strings.Split(err.Error(), "\n"), 1)

	f, err := Parse([]byte(`
default:
  options: {token_url: "https://auth.example.com/token"}
platforms:
  shop:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: T}
  amz:
    kind: amazon
    endpoint: https://sellingpartnerapi-na.amazon.com
    credentials: {env: A}
    options: {marketplace_ids: [ATVPDKIKX0DER]}
  bay:
    kind: ebay
    endpoint: https://api.ebay.com
    credentials: {env: E}
    options: {token_url: "https://api.ebay.com/identity/v1/oauth2/token"}
`))
	require.NoError(t, err, "from the default block, and on the kinds that have it")
	amz, _ := f.Get("amz")
	o, err := KindOptions[AmazonOptions](amz)
	require.NoError(t, err)
	require.Equal(t, "https://auth.example.com/token", o.TokenURL)
}
