package connectors_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

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
	f, err := config.Parse([]byte(good))
	require.NoError(t, err)
	p, _ := f.Get("api")
	o, err := config.KindOptions[connectors.HTTPOptions](p)
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
	_, err = config.Parse([]byte(bad))
	require.Error(t, err)
	want := []string{
		`platform "api": field "options.fields.colour": unknown option (known here: created_at, currency, id, line_items, status, time_format, total, updated_at)`,
	}
	require.Equal(t, want, strings.Split(err.Error(), "\n")[0:1], "unknown keys are reported first and alone:\n%s", err)

	bad = strings.Replace(bad, ", colour: red", "", 1)
	_, err = config.Parse([]byte(bad))
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

func TestHTTPKindLinesOption(t *testing.T) {
	const platform = "platforms:\n  api:\n    kind: http\n    endpoint: https://api.example.com/v2\n    credentials: {env: API_TOKEN}\n    options:\n" +
		"      path: /orders\n      window: {from_param: from, to_param: to}\n      pagination: {style: none}\n      records_path: orders\n" +
		"      fields: {id: id, updated_at: updated_at}\n"
	tests := []struct {
		name, lines string
		want        connectors.HTTPLines
		problems    []string
	}{
		{name: "not configured: no lines"},
		{name: "every field", lines: "{path: line_items, id: id, sku: sku, title: name, quantity: quantity, unit_price: price.amount, currency: price.currency}",
			want: connectors.HTTPLines{Path: "line_items", ID: "id", SKU: "sku", Title: "name", Quantity: "quantity", UnitPrice: "price.amount", Currency: "price.currency"}},
		{name: "only path and quantity", lines: "{path: items, quantity: qty}", want: connectors.HTTPLines{Path: "items", Quantity: "qty"}},
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
			f, err := config.Parse([]byte(doc))
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
			o, err := config.KindOptions[connectors.HTTPOptions](p)
			require.NoError(t, err)
			require.Equal(t, tt.want, o.Lines)
		})
	}
}

func TestKindOptionsSurviveJSON(t *testing.T) {
	// Workflows carry a platform as JSON: numbers come back as float64.
	p := config.Platform{Name: "x", Kind: "http", Options: map[string]any{}}
	require.NoError(t, json.Unmarshal([]byte(`{
		"path": "/orders", "window": {"from_param": "from", "to_param": "to"},
		"pagination": {"style": "page", "page_param": "p"},
		"records_path": ".", "fields": {"id": "id", "updated_at": "meta.updated"},
		"errors": {"retryable_status": [500, 503]}, "extra_query": {"status": "any", "n": 5}
	}`), &p.Options))
	o, err := config.KindOptions[connectors.HTTPOptions](p)
	require.NoError(t, err)
	require.Equal(t, []int{500, 503}, o.Errors.RetryableStatus)
	require.Equal(t, []int{429}, o.Errors.RateLimitStatus)
	require.Equal(t, 1, *o.Pagination.StartPage, "pages count from 1 unless start_page says otherwise")
	require.Equal(t, "bearer", o.Auth.Type)
	require.Equal(t, "rfc3339", o.Window.Format)
	require.Equal(t, map[string]string{"status": "any", "n": "5"}, o.ExtraQuery)
}
