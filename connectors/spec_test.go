package connectors_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

func TestKindDefaultsApplyOnlyToUnsetFields(t *testing.T) {
	f, err := config.Parse([]byte(`
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
	get := func(name string) config.Platform {
		p, ok := f.Get(name)
		require.True(t, ok)
		return p
	}
	amz := get("amz")
	require.Equal(t, config.RateLimit{RPS: 0.0056, Burst: 3}, amz.RateLimit, "rps from the kind (searchOrders), burst from the default block")
	require.Equal(t, 3*time.Minute, amz.Settle.D())
	require.Equal(t, 100, amz.PageSize)
	require.Equal(t, time.Hour, amz.Interval.D())

	tuned := get("amz-tuned")
	require.Equal(t, 5*time.Minute, tuned.Settle.D(), "the platform entry wins")
	require.Equal(t, 50, tuned.PageSize)
	require.Equal(t, 30*time.Minute, tuned.Interval.D())
	o, err := config.KindOptions[connectors.AmazonOptions](tuned)
	require.NoError(t, err)
	require.Equal(t, []string{"A1PA6795UKMFR9"}, o.MarketplaceIDs, "a single value is a list of one")
	require.Equal(t, connectors.DefaultAmazonTokenURL, o.TokenURL)

	shop := get("shop")
	require.Equal(t, 50, shop.PageSize, "GraphQL, the default API: a page within the single-query cost")
	require.Equal(t, config.RateLimit{RPS: 10, Burst: 3}, shop.RateLimit)
	so, err := config.KindOptions[connectors.ShopifyOptions](shop)
	require.NoError(t, err)
	on := true
	require.Equal(t, connectors.ShopifyOptions{API: connectors.ShopifyGraphQL, APIVersion: connectors.DefaultShopifyAPIVersion, RestoreRate: 100,
		MaxCostAvailable: 2000, LineItemsPageSize: 4, BulkBackfill: &on, BulkMinSpan: connectors.DefaultShopifyBulkMinSpan,
		BulkPollInterval: connectors.DefaultShopifyBulkPollInterval, BulkConcurrency: 5, OrderFields: connectors.ShopifyOrderFieldGroups}, so, "bulk backfill on for GraphQL; 2026-10 runs five at once")
	rest := get("shop-rest")
	require.Equal(t, 250, rest.PageSize, "REST keeps its own defaults")
	require.Equal(t, config.RateLimit{RPS: 2, Burst: 3}, rest.RateLimit)

	require.Equal(t, 100, get("woo").PageSize)
	require.Equal(t, 200, get("bay").PageSize)
	eo, err := config.KindOptions[connectors.EbayOptions](get("bay"))
	require.NoError(t, err)
	require.Equal(t, "https://api.ebay.com/identity/v1/oauth2/token", eo.TokenURL)
	require.Equal(t, config.BuiltinDefaults().PageSize, get("simmy").PageSize, "sim has no kind defaults")
	require.Equal(t, config.BuiltinDefaults().Settle, get("simmy").Settle)
}

func TestKindSpecs(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range config.Kinds() {
		s, ok := config.LookupKind(name)
		require.True(t, ok, "kind %s", name)
		require.NotEmpty(t, s.Name)
		require.False(t, seen[s.Name], "kind %s has two specs", s.Name)
		seen[s.Name] = true
		require.Equal(t, s.APIOption != "", len(s.APIDefaults) > 0, "kind %s: APIOption and APIDefaults go together", s.Name)
		if s.APIOption != "" {
			require.NotNil(t, s.NewOptions, "kind %s", s.Name)
			require.Contains(t, yamlTags(reflect.TypeOf(s.NewOptions()).Elem()), s.APIOption, "kind %s", s.Name)
		}
		infos := map[string]config.KindInfo{"": s.Defaults}
		for api, k := range s.APIDefaults {
			infos[api] = k
		}
		for api, k := range infos {
			if k.MaxPageSize > 0 {
				require.LessOrEqual(t, k.PageSize, k.MaxPageSize, "kind %s api %q", s.Name, api)
			}
			settle := k.Settle
			if settle == 0 {
				settle = config.BuiltinDefaults().Settle
			}
			require.GreaterOrEqual(t, settle, k.MinSettle, "kind %s api %q", s.Name, api)
		}
	}
	// The order problems list the kinds in ("one of sim, shopify, ..."),
	// as before the specs moved here (specs.go).
	require.Equal(t, []string{"sim", "shopify", "amazon", "ebay", "woocommerce", "http"}, config.Kinds())
}

// yamlTags are the option names of an options struct type.
func yamlTags(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		out = append(out, tag)
	}
	return out
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
			_, err := config.Parse([]byte(tt.yaml))
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
	f, err := config.Parse([]byte(`
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
	o, err := config.KindOptions[connectors.WooCommerceOptions](p)
	require.NoError(t, err)
	require.Equal(t, "query", o.Auth)

	// api_version is an option of shopify and amazon alike, so a Shopify
	// version in the default block reaches amazon platforms too: the error
	// says where it belongs.
	_, err = config.Parse([]byte(`
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

func TestAnotherKindsOptionOnAnEntryIsRefused(t *testing.T) {
	_, err := config.Parse([]byte(`
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

	f, err := config.Parse([]byte(`
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
	o, err := config.KindOptions[connectors.AmazonOptions](amz)
	require.NoError(t, err)
	require.Equal(t, "https://auth.example.com/token", o.TokenURL)
}
