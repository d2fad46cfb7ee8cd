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

// TestOAuthAccessTokenNeverInErrors: the access token an OAuth connector
// obtained at run time is a secret like the configured ones. A platform
// that quotes it in an error body must not put it into the error (which
// ends up in Temporal history).
func TestOAuthAccessTokenNeverInErrors(t *testing.T) {
	const accessToken = "Atza|IwEBI-live-access-token-42"
	for _, tc := range []struct {
		kind, tokenPath, ordersPath string
		endpoint                    func(url string) string
		options                     map[string]any
	}{
		{"amazon", "/auth/o2/token", "/orders/2026-01-01/orders", func(u string) string { return u },
			map[string]any{"marketplace_ids": []any{"A1PA6795UKMFR9"}}},
		{"amazon", "/auth/o2/token", "/orders/v0/orders", func(u string) string { return u },
			map[string]any{"api_version": "v0", "marketplace_ids": []any{"A1PA6795UKMFR9"}}},
		{"ebay", "/identity/v1/oauth2/token", "/sell/fulfillment/v1/order", func(u string) string { return u + "/" }, nil},
	} {
		t.Run(tc.kind+tc.ordersPath, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("POST "+tc.tokenPath, func(w http.ResponseWriter, _ *http.Request) {
				writeBody(w, http.StatusOK, []byte(`{"access_token":"`+accessToken+`","token_type":"bearer","expires_in":3600}`))
			})
			mux.HandleFunc("GET "+tc.ordersPath, func(w http.ResponseWriter, _ *http.Request) {
				writeBody(w, http.StatusBadRequest, []byte(`{"errors":[{"code":"InvalidInput","message":"token `+accessToken+` may not read these orders"}]}`))
			})
			ts := httptest.NewServer(mux)
			defer ts.Close()
			opts := map[string]any{"token_url": ts.URL + tc.tokenPath}
			for k, v := range tc.options {
				opts[k] = v
			}
			c, err := connectors.New(config.Platform{Name: "p", Kind: tc.kind, Endpoint: tc.endpoint(ts.URL), PageSize: 2,
				Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, oauthSecret), Options: opts})
			require.NoError(t, err)
			_, err = c.ListOrders(context.Background(), connectors.PageRequest{
				From: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), Page: 1})
			require.Error(t, err)
			require.NotContains(t, err.Error(), accessToken)
			require.Contains(t, err.Error(), "token "+connectors.Redacted+" may not read these orders")
			require.True(t, connectors.IsPermanent(err), "the error class survives redaction: %v", err)
		})
	}
}
