package credentials

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPostExchangeClassifies checks how Shopify's answers to the token
// exchange are read: what was refused as asked (nothing exchanged), what
// leaves the exchange unknown (ErrExchangeLost: run again), and that no
// secret reaches an error.
func TestPostExchangeClassifies(t *testing.T) {
	const static, cs = "shpat_SECRET-1", "cs-SECRET-2"
	for _, tc := range []struct {
		name, body string
		status     int
		is         error
		want       string
	}{
		{"ok", `{"access_token":"at","expires_in":3600,"refresh_token":"rt","refresh_token_expires_in":7776000}`, 200, nil, ""},
		{"bad client", `{"error":"invalid_client","error_description":"wrong ` + cs + `"}`, 401, ErrAppRefused, "HTTP 401 invalid_client wrong [redacted]"},
		{"subject refused", `{"error":"invalid_subject_token","error_description":"not ` + static + `"}`, 400, ErrSubjectRefused, "not [redacted]"},
		{"bad request", `{"error":"invalid_request"}`, 400, ErrInvalid, "nothing was exchanged"},
		{"server error", `{"errors":"Service Unavailable"}`, 503, ErrExchangeLost, "HTTP 503"},
		{"rate limited", ``, 429, ErrExchangeLost, "HTTP 429"},
		{"redirect not followed", ``, 302, ErrExchangeLost, "HTTP 302"},
		{"too long", strings.Repeat("x", maxGrantBody+10), 200, ErrExchangeLost, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tokenEndpoint(t, tc.status, tc.body, func(r *http.Request) {
				require.Equal(t, "/admin/oauth/access_token", r.URL.Path)
				for k, v := range map[string]string{"grant_type": shopifyExchangeGrant, "subject_token": static, "client_id": "cid", "client_secret": cs,
					"subject_token_type": shopifyOfflineToken, "requested_token_type": shopifyOfflineToken, "expiring": "1"} {
					require.Equal(t, v, r.PostForm.Get(k), k)
				}
			})
			m := NewManager(nil, nil, nil, Options{})
			target, err := ShopifyTokenURL(srv.URL + "/")
			require.NoError(t, err)
			body, err := m.postExchange(context.Background(), "shop-a", target, Payload{ClientID: "cid", ClientSecret: cs}, static)
			if tc.is == nil {
				require.NoError(t, err)
				require.Equal(t, tc.body, string(body))
				return
			}
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, `"shop-a"`)
			require.NotContains(t, err.Error(), "SECRET")
		})
	}
}

func TestShopifyTokenURL(t *testing.T) {
	u, err := ShopifyTokenURL("https://acme.myshopify.com/")
	require.NoError(t, err)
	require.Equal(t, "https://acme.myshopify.com/admin/oauth/access_token", u)
	u, err = ShopifyTokenURL("http://127.0.0.1:8780/shops/acme")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8780/shops/acme/admin/oauth/access_token", u)
	for _, bad := range []string{"http://acme.example.com", "https://acme.example.com", "https://evil.com/acme.myshopify.com", "https://acme.myshopify.com.evil.com", "https://acme.myshopify.com/?x=1", "https://u:p@acme.myshopify.com", "ftp://x", ""} {
		_, err := ShopifyTokenURL(bad)
		require.ErrorIs(t, err, ErrInvalid, bad)
	}
}
