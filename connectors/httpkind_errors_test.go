package connectors_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

func TestHTTPKindErrorMapping(t *testing.T) {
	errorsOpt := map[string]any{"retryable_status": []any{500, 409}, "rate_limit_status": []any{429, 420},
		"message_path": "error.detail", "retry_after_header": "X-Retry-In", "rate_limit_header": "X-Rate"}
	tests := []struct {
		name   string
		status int
		body   string
		header []string
		opts   map[string]any // errors options; nil: defaults
		check  func(t *testing.T, err error)
	}{
		{"custom rate-limit status and headers", 420, `{"error":{"detail":"calm down"}}`, []string{"X-Retry-In", "9", "X-Rate", "3"}, errorsOpt, func(t *testing.T, err error) {
			var rl *connectors.RateLimitError
			require.ErrorAs(t, err, &rl)
			require.Equal(t, 9*time.Second, rl.RetryAfter)
			require.Equal(t, 3.0, rl.Limit)
		}},
		{"listed 4xx is retryable", 409, `{"error":{"detail":"snapshot in progress"}}`, nil, errorsOpt, func(t *testing.T, err error) {
			var te *connectors.TransientError
			require.ErrorAs(t, err, &te)
			require.Equal(t, "HTTP 409: snapshot in progress", te.Msg)
		}},
		{"unlisted 5xx is permanent when the list is given", 502, `{"error":{"detail":"no upstream"}}`, nil, errorsOpt, func(t *testing.T, err error) {
			var pe *connectors.PermanentError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "no upstream", pe.Msg)
		}},
		{"every 5xx is retryable by default", 502, `oops`, nil, nil, func(t *testing.T, err error) {
			var te *connectors.TransientError
			require.ErrorAs(t, err, &te)
		}},
		{"429 by default", 429, `{}`, []string{"Retry-After", "4"}, nil, func(t *testing.T, err error) {
			var rl *connectors.RateLimitError
			require.ErrorAs(t, err, &rl)
			require.Equal(t, 4*time.Second, rl.RetryAfter)
		}},
		{"403 is an auth failure", 403, `{"message":"key revoked"}`, nil, nil, func(t *testing.T, err error) {
			var pe *connectors.PermanentError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, http.StatusForbidden, pe.Status)
			require.Contains(t, pe.Msg, "authentication failed: key revoked (check the credentials in file:")
			require.NotContains(t, err.Error(), "k-123")
		}},
		{"other 4xx is permanent with the platform's message", 400, `{"error":{"detail":"from is after to"}}`, nil, errorsOpt, func(t *testing.T, err error) {
			var pe *connectors.PermanentError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "from is after to", pe.Msg)
		}},
		{"missing id", 200, `{"orders":[{"meta":{"modified":1772359200000}}]}`, nil, nil, func(t *testing.T, err error) {
			require.ErrorContains(t, err, `order 0: missing id at "order_no"`)
		}},
		{"bad time", 200, `{"orders":[{"order_no":7,"meta":{"modified":"yesterday"}}]}`, nil, nil, func(t *testing.T, err error) {
			require.ErrorContains(t, err, `id 7: updated_at: "yesterday" is not a time in format unix_ms`)
		}},
		{"float total", 200, `{"orders":[{"order_no":7,"meta":{"modified":1},"money":{"amount":1e3}}]}`, nil, nil, func(t *testing.T, err error) {
			require.ErrorContains(t, err, `id 7: total "1e3" is not a decimal number`)
		}},
		{"line items not a list", 200, `{"orders":[{"order_no":7,"meta":{"modified":1},"lines":"three"}]}`, nil, nil, func(t *testing.T, err error) {
			require.ErrorContains(t, err, `id 7: line_items is "three", not an array or a count`)
		}},
		{"records missing", 200, `{"data":[]}`, nil, nil, func(t *testing.T, err error) {
			require.ErrorContains(t, err, `field "orders" is missing`)
		}},
		{"cursor not a string", 200, `{"orders":[],"next":{"a":1}}`, nil, nil, func(t *testing.T, err error) {
			require.ErrorContains(t, err, `next token at "next" is {"a":1}, not a string`)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeBody(w, tc.status, []byte(tc.body), tc.header...)
			}))
			defer ts.Close()
			opts := map[string]any{"path": "/orders", "window": map[string]any{"from_param": "from", "to_param": "to"},
				"records_path": "orders", "pagination": map[string]any{"style": "cursor", "token_param": "c", "token_path": "next"}}
			if tc.opts != nil {
				opts["errors"] = tc.opts
			}
			_, err := genericConn(t, ts.URL, "k-123", opts).ListOrders(context.Background(), connectors.PageRequest{From: genFrom, To: genTo, Page: 1})
			require.Error(t, err)
			if tc.status == 200 {
				var me *connectors.MalformedError
				require.ErrorAs(t, err, &me)
			}
			tc.check(t, err)
		})
	}
}

func TestHTTPKindConstruction(t *testing.T) {
	base := func(opts map[string]any, secret string) config.Platform {
		return config.Platform{Name: "api", Kind: "http", Endpoint: "https://api.example.com", Credentials: secretFile(t, secret), Options: opts}
	}
	good := map[string]any{"window": map[string]any{"from_param": "a", "to_param": "b"}, "records_path": "r",
		"fields": map[string]any{"id": "id", "updated_at": "u"}, "pagination": map[string]any{"style": "none"}}
	_, err := connectors.New(base(good, "tok"))
	require.NoError(t, err)

	good["auth"] = map[string]any{"type": "basic"}
	_, err = connectors.New(base(good, "no-colon-secret"))
	require.ErrorContains(t, err, "auth type basic needs the secret as user:password")
	require.NotContains(t, err.Error(), "no-colon-secret")

	delete(good, "pagination")
	_, err = connectors.New(base(good, "u:p"))
	require.True(t, connectors.IsPermanent(err))
	require.ErrorContains(t, err, `platform "api": field "options.pagination.style": must be cursor, link, offset, page or none, got ""`)
}
