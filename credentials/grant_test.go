package credentials

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestPostRefreshClassifies checks how a token endpoint's answers are
// read: which refusals are permanent, which leave the refresh token to be
// spent again, and that no secret reaches an error.
func TestPostRefreshClassifies(t *testing.T) {
	const rt, cs = "rt-SECRET-1", "cs-SECRET-2"
	long := strings.Repeat("x", maxGrantBody+10)
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		permanent bool
		is        error
		want      string
	}{
		{"ok", 200, `{"access_token":"at-new","expires_in":3600,"refresh_token":"rt-2","refresh_token_expires_in":"7776000","scope":"read_orders"}`, false, nil, ""},
		{"revoked", 400, `{"error":"invalid_grant","error_description":"refresh token ` + rt + ` revoked"}`, true, ErrReauthorize, "invalid_grant"},
		{"bad client", 401, `{"error":"invalid_client"}`, true, ErrAppRefused, "HTTP 401"},
		{"invalid_client as 400", 400, `{"error":"invalid_client"}`, true, ErrAppRefused, "invalid_client"},
		{"server error", 503, `{"error":"temporarily_unavailable"}`, false, nil, "spent again"},
		{"rate limited", 429, ``, false, nil, "HTTP 429"},
		{"200 without token", 200, `{"token":"x"}`, false, nil, "without an access token"},
		{"200 not JSON", 200, `<html>`, false, nil, "without an access token"},
		{"too long", 200, long, false, nil, "longer than"},
		{"redirect not followed", 302, ``, false, nil, "HTTP 302"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got http.Header
			srv := tokenEndpoint(t, tc.status, tc.body, func(r *http.Request) {
				require.Equal(t, "refresh_token", r.PostForm.Get("grant_type"))
				require.Equal(t, rt, r.PostForm.Get("refresh_token"))
				require.Equal(t, "cid", r.PostForm.Get("client_id"))
				require.Equal(t, cs, r.PostForm.Get("client_secret"))
				got = r.Header
			})
			m := NewManager(nil, nil, nil, Options{})
			a, err := m.postRefresh(context.Background(), "shop-a", Payload{RefreshToken: rt, TokenURL: srv.URL}, Payload{ClientID: "cid", ClientSecret: cs})
			require.Equal(t, "application/x-www-form-urlencoded", got.Get("Content-Type"))
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, "at-new", a.AccessToken)
				require.Equal(t, "rt-2", a.RefreshToken)
				require.EqualValues(t, 3600, seconds(a.ExpiresIn).Seconds())
				require.EqualValues(t, 7776000, seconds(a.RefreshTokenExpiresIn).Seconds())
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, `"shop-a"`)
			var ge *grantError
			require.True(t, errors.As(err, &ge))
			require.Equal(t, tc.permanent, ge.permanent)
			require.Equal(t, tc.permanent, IsPermanent(err))
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
			require.NotContains(t, err.Error(), "SECRET")
			require.Less(t, len(err.Error()), 1200, "platform text is clipped")
		})
	}
}

func TestCheckTokenURL(t *testing.T) {
	for _, ok := range []string{"https://acme.myshopify.com/admin/oauth/access_token", "https://api.amazon.com/auth/o2/token", "http://127.0.0.1:8080/t", "http://localhost/t", "http://[::1]:9/t"} {
		require.NoError(t, CheckTokenURL(ok), ok)
	}
	for _, bad := range []string{"", "ftp://x/y", "http://example.com/t", "https://user:pw@x/t", "/relative"} {
		require.ErrorIs(t, CheckTokenURL(bad), ErrInvalid, bad)
	}
	require.Equal(t, "https://acme.myshopify.com/admin/oauth/access_token", tokenURL(Payload{Shop: "acme"}))
	require.Equal(t, "https://acme.myshopify.com/admin/oauth/access_token", tokenURL(Payload{Shop: "acme.myshopify.com"}))
}

func TestTokenFromAnswer(t *testing.T) {
	at := time.Date(2026, 11, 26, 4, 0, 0, 0, time.UTC)
	tok, err := TokenFromAnswer(KindShopify, "app", "https://acme.myshopify.com/admin/oauth/access_token",
		[]byte(`{"access_token":"at","expires_in":3600,"refresh_token":"rt","refresh_token_expires_in":7776000,"scope":"read_orders"}`), at)
	require.NoError(t, err)
	require.Equal(t, "at", tok.AccessToken)
	require.Equal(t, "rt", tok.RefreshToken)
	require.Equal(t, at.Add(time.Hour), tok.AccessExpiresAt)
	require.Equal(t, at.Add(90*24*time.Hour), tok.RefreshExpiresAt)
	require.Equal(t, "read_orders", tok.Scope)
	_, err = TokenFromAnswer(KindShopify, "app", "", []byte(`{"error":"invalid_grant","access":"SECRET"}`), at)
	require.ErrorIs(t, err, ErrInvalid)
	require.NotContains(t, err.Error(), "SECRET")
}

// tokenEndpoint is a token endpoint that lets check look at each request
// (its form parsed) and answers status and body; a 302 points elsewhere,
// which a grant must not follow.
func tokenEndpoint(t *testing.T, status int, body string, check func(r *http.Request)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		check(r)
		if status == http.StatusFound {
			w.Header().Set("Location", "http://127.0.0.1:1/steal")
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}
