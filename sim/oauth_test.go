package sim

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	testClientID = "shopify-client"
	testSecret   = "shopify-secret"
	testRedirect = "https://app.example/auth/callback"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// verifyShopifyHMAC checks a query's hmac as an app does, written out
// from Shopify's description rather than with the simulator's function.
func verifyShopifyHMAC(t *testing.T, q url.Values, secret string) {
	t.Helper()
	var parts []string
	for k, v := range q {
		if k != "hmac" {
			parts = append(parts, k+"="+v[0])
		}
	}
	sort.Strings(parts)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strings.Join(parts, "&")))
	require.Equal(t, hex.EncodeToString(m.Sum(nil)), q.Get("hmac"), "hmac of %v", q)
}

func shopifyOAuthSim(t *testing.T, clk *fakeClock, mod func(*Config)) (*Simulator, string) {
	t.Helper()
	return oauthSim(t, clk, mod, func(s *Simulator) error {
		return s.RegisterShopifyApp(ShopifyApp{ClientID: testClientID, ClientSecret: testSecret,
			Scopes: []string{"read_orders", "read_customers"}, AppURL: "https://app.example/install", RedirectURIs: []string{testRedirect}})
	})
}

// oauthSim starts a one-shop simulator (mod, when set, changes its
// config) with the app register registers, and returns it and its URL.
func oauthSim(t *testing.T, clk *fakeClock, mod func(*Config), register func(*Simulator) error) (*Simulator, string) {
	t.Helper()
	cfg := testConfig(1, clk)
	if mod != nil {
		mod(&cfg)
	}
	s, ts := startTest(t, cfg)
	require.NoError(t, register(s))
	return s, ts.URL
}

// authorize runs the authorize endpoint and returns the redirect's query.
func authorize(t *testing.T, base, shop, clientID, redirect string) url.Values {
	t.Helper()
	q := url.Values{"client_id": {clientID}, "scope": {"read_orders"}, "redirect_uri": {redirect}, "state": {"nonce-42"}}
	resp, err := noRedirect.Get(base + "/shops/" + shop + "/admin/oauth/authorize?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, redirect, loc.Scheme+"://"+loc.Host+loc.Path)
	return loc.Query()
}

// shopifyToken posts to the token endpoint (JSON when asJSON, else a form)
// and returns the status and the decoded body.
func shopifyToken(t *testing.T, base, shop string, params map[string]string, asJSON bool) (int, map[string]any) {
	t.Helper()
	var resp *http.Response
	var err error
	u := base + "/shops/" + shop + "/admin/oauth/access_token"
	if asJSON {
		b, _ := json.Marshal(params)
		resp, err = http.Post(u, "application/json", bytes.NewReader(b))
	} else {
		f := url.Values{}
		for k, v := range params {
			f.Set(k, v)
		}
		resp, err = http.PostForm(u, f)
	}
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return resp.StatusCode, m
}

func refreshParams(refresh string) map[string]string {
	return map[string]string{"client_id": testClientID, "client_secret": testSecret, "grant_type": "refresh_token", "refresh_token": refresh}
}

// mustRefresh refreshes and returns the new access and refresh tokens.
func mustRefresh(t *testing.T, base, shop, refresh string) (string, string) {
	t.Helper()
	code, m := shopifyToken(t, base, shop, refreshParams(refresh), true)
	require.Equal(t, http.StatusOK, code, m)
	return m["access_token"].(string), m["refresh_token"].(string)
}

// expiringPair installs the app with an expiring offline token.
func expiringPair(t *testing.T, base, shop string) (string, string) {
	t.Helper()
	back := authorize(t, base, shop, testClientID, testRedirect)
	code, m := shopifyToken(t, base, shop, map[string]string{"client_id": testClientID, "client_secret": testSecret,
		"code": back.Get("code"), "expiring": "1"}, true)
	require.Equal(t, http.StatusOK, code, m)
	return m["access_token"].(string), m["refresh_token"].(string)
}

// shopJSON calls the REST Admin API with a token and returns the status and body.
func shopJSON(t *testing.T, base, shop, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/shops/"+shop+"/admin/api/2026-10/shop.json", nil)
	require.NoError(t, err)
	req.Header.Set("X-Shopify-Access-Token", token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

const shopify401 = `{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}`

// gqlStatus is the GraphQL Admin API's status for a token: authentication
// comes first, so an unknown operation answers 200 (a GraphQL error) when
// the token is good and 401 when it is not.
func gqlStatus(t *testing.T, base, shop, token string) (int, string) {
	t.Helper()
	code, body := gql(t, base, shop, token, "Nope", "query Nope { shop { name } }", nil)
	return code, string(body)
}

// TestShopifyInstallAndCodeGrant: the install request and the authorize
// redirect carry hmacs an app verifies with its secret; the code grant
// answers the documented fields, expiring or not, and a code works once.
func TestShopifyInstallAndCodeGrant(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, nil)

	install, err := s.ShopifyInstallURL(testClientID, "acme")
	require.NoError(t, err)
	iu, err := url.Parse(install)
	require.NoError(t, err)
	require.Equal(t, "https://app.example/install", iu.Scheme+"://"+iu.Host+iu.Path)
	iq := iu.Query()
	require.Equal(t, "acme.myshopify.com", iq.Get("shop"))
	require.NotEmpty(t, iq.Get("host"))
	require.Equal(t, clk.Now().Unix(), mustInt(t, iq.Get("timestamp")))
	verifyShopifyHMAC(t, iq, testSecret)

	back := authorize(t, base, "acme", testClientID, testRedirect)
	for _, k := range []string{"code", "hmac", "host", "shop", "state", "timestamp"} {
		require.NotEmpty(t, back.Get(k), k)
	}
	require.Len(t, back, 6)
	require.Equal(t, "nonce-42", back.Get("state"))
	require.Equal(t, "acme.myshopify.com", back.Get("shop"))
	verifyShopifyHMAC(t, back, testSecret)
	tampered := url.Values{}
	for k, v := range back {
		tampered[k] = v
	}
	tampered.Set("shop", "globex.myshopify.com")
	require.NotEqual(t, ShopifyQueryHMAC(tampered, testSecret), back.Get("hmac"))

	codeParams := map[string]string{"client_id": testClientID, "client_secret": testSecret, "code": back.Get("code"), "expiring": "1"}
	code, m := shopifyToken(t, base, "acme", codeParams, true)
	require.Equal(t, http.StatusOK, code, m)
	require.ElementsMatch(t, []string{"access_token", "scope", "expires_in", "refresh_token", "refresh_token_expires_in"}, keys(m))
	require.Equal(t, "read_customers,read_orders", m["scope"], "the app's granted scopes")
	require.EqualValues(t, 3600, m["expires_in"])
	require.EqualValues(t, 90*24*3600, m["refresh_token_expires_in"])
	status, _ := shopJSON(t, base, "acme", m["access_token"].(string))
	require.Equal(t, http.StatusOK, status)
	req, _ := http.NewRequest(http.MethodGet, base+"/shops/acme/admin/oauth/access_scopes.json", nil)
	req.Header.Set("X-Shopify-Access-Token", m["access_token"].(string))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	sb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.JSONEq(t, `{"access_scopes":[{"handle":"read_customers"},{"handle":"read_orders"}]}`, string(sb))
	status, _ = shopJSON(t, base, "globex", m["access_token"].(string))
	require.Equal(t, http.StatusUnauthorized, status, "a token opens its own shop only")

	code, m = shopifyToken(t, base, "acme", codeParams, true)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "invalid_request", m["error"])
	require.Equal(t, shopifyCodeNotFound, m["error_description"])

	// Without expiring=1: a non-expiring token, as a form, the same one on
	// every authorization.
	var first string
	for i := 0; i < 2; i++ {
		back = authorize(t, base, "acme", testClientID, testRedirect)
		code, m = shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": testSecret, "code": back.Get("code")}, false)
		require.Equal(t, http.StatusOK, code, m)
		require.ElementsMatch(t, []string{"access_token", "scope"}, keys(m))
		if i == 0 {
			first = m["access_token"].(string)
		}
		require.Equal(t, first, m["access_token"])
	}
	clk.Add(400 * 24 * time.Hour)
	status, _ = shopJSON(t, base, "acme", first)
	require.Equal(t, http.StatusOK, status, "a non-expiring token does not expire")

	// A code expires.
	back = authorize(t, base, "acme", testClientID, testRedirect)
	clk.Add(shopifyCodeTTL)
	code, m = shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": testSecret, "code": back.Get("code")}, true)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "invalid_request", m["error"])
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}

// TestShopifyTokenEndpointRefuses: wrong client secret, unknown client,
// unknown grant type, a redirect URI the app does not allow.
func TestShopifyTokenEndpointRefuses(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, nil)
	back := authorize(t, base, "acme", testClientID, testRedirect)

	code, m := shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": "wrong", "code": back.Get("code")}, true)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "invalid_client", m["error"])
	code, m = shopifyToken(t, base, "acme", map[string]string{"client_id": "other", "client_secret": testSecret, "code": back.Get("code")}, true)
	require.Equal(t, http.StatusUnauthorized, code)
	require.Equal(t, "invalid_client", m["error"])
	code, m = shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": testSecret, "grant_type": "password"}, true)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "unsupported_grant_type", m["error"])
	code, m = shopifyToken(t, base, "globex", map[string]string{"client_id": testClientID, "client_secret": testSecret, "code": back.Get("code")}, true)
	require.Equal(t, http.StatusBadRequest, code, "a code is the shop's it was issued for")
	require.Equal(t, "invalid_request", m["error"])
	// The refusals did not spend the code.
	code, _ = shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": testSecret, "code": back.Get("code")}, true)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 4, s.AuthStats().Shopify.GrantErrors)

	q := url.Values{"client_id": {testClientID}, "scope": {"read_orders"}, "redirect_uri": {"https://evil.example/cb"}, "state": {"x"}}
	resp, err := noRedirect.Get(base + "/shops/acme/admin/oauth/authorize?" + q.Encode())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestShopifyRefreshRotation: each refresh returns a new pair; the
// previous refresh token stays usable until its replacement is used and
// answers invalid_grant after that.
func TestShopifyRefreshRotation(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, nil)
	a0, r0 := expiringPair(t, base, "acme")

	a1, r1 := mustRefresh(t, base, "acme", r0)
	require.NotEqual(t, r0, r1)
	require.NotEqual(t, a0, a1)
	// r1 not used yet: r0 still works and hands out r1 again.
	a1b, r1b := mustRefresh(t, base, "acme", r0)
	require.Equal(t, r1, r1b)
	require.NotEqual(t, a1, a1b)
	for _, a := range []string{a0, a1, a1b} {
		status, _ := shopJSON(t, base, "acme", a)
		require.Equal(t, http.StatusOK, status, "issued access tokens live until they expire")
	}

	_, r2 := mustRefresh(t, base, "acme", r1) // the app begins using the replacement
	code, m := shopifyToken(t, base, "acme", refreshParams(r0), true)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "invalid_grant", m["error"])
	require.NotEmpty(t, m["error_description"])
	_, r2b := mustRefresh(t, base, "acme", r1) // r2 unused: r1 still works
	require.Equal(t, r2, r2b)
	mustRefresh(t, base, "acme", r2)
	code, _ = shopifyToken(t, base, "acme", refreshParams(r1), true)
	require.Equal(t, http.StatusBadRequest, code)

	require.EqualValues(t, 2, s.RefreshSpent(r0))
	require.EqualValues(t, 2, s.RefreshSpent(r1))
	require.EqualValues(t, 1, s.RefreshSpent(r2))
	st := s.AuthStats().Shopify
	require.EqualValues(t, 5, st.RefreshGrants)
	require.EqualValues(t, 2, st.RefreshRetries)
	require.EqualValues(t, 2, st.GrantErrors)

	// A previous token can be retried for 30 days after its first use.
	a3, r3 := expiringPair(t, base, "acme")
	_ = a3
	mustRefresh(t, base, "acme", r3)
	clk.Add(shopifyRetryWindow + time.Second)
	code, _ = shopifyToken(t, base, "acme", refreshParams(r3), true)
	require.Equal(t, http.StatusBadRequest, code)
}

// TestShopifyAccessTokensExpire: an expired access token answers 401
// with Shopify's body on both Admin APIs, counted as a refreshed token's
// 401 when a refresh issued it.
func TestShopifyAccessTokensExpire(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, func(c *Config) { c.ShopifyAccessTTL = time.Minute; c.ShopifyRefreshTTL = time.Hour })
	a0, r0 := expiringPair(t, base, "acme")
	code, m := shopifyToken(t, base, "acme", refreshParams(r0), true)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 60, m["expires_in"], "expires_in says the configured TTL")
	require.EqualValues(t, 3600, m["refresh_token_expires_in"])
	a1, r1 := m["access_token"].(string), m["refresh_token"].(string)

	status, _ := gqlStatus(t, base, "acme", a1)
	require.Equal(t, http.StatusOK, status)
	clk.Add(59 * time.Second)
	status, _ = shopJSON(t, base, "acme", a1)
	require.Equal(t, http.StatusOK, status)
	clk.Add(time.Second)
	status, body := gqlStatus(t, base, "acme", a1)
	require.Equal(t, http.StatusUnauthorized, status)
	require.JSONEq(t, shopify401, body)
	status, body = shopJSON(t, base, "acme", a0)
	require.Equal(t, http.StatusUnauthorized, status)
	require.JSONEq(t, shopify401, body)
	status, _ = shopJSON(t, base, "acme", "shpat_unknown")
	require.Equal(t, http.StatusUnauthorized, status)

	st := s.AuthStats().Shopify
	require.EqualValues(t, 3, st.Unauthorized)
	require.EqualValues(t, 2, st.UnauthorizedIssued)
	require.EqualValues(t, 1, st.UnauthorizedRefreshed, "only a1 came from a refresh")
	require.EqualValues(t, 3, s.Stats().Shops["acme"].Unauthorized)

	// A refresh token expires too.
	clk.Add(time.Hour)
	code, m = shopifyToken(t, base, "acme", refreshParams(r1), true)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "invalid_grant", m["error"])

	// Mid-window lapse: every access token issued so far expires now.
	a2, _ := expiringPair(t, base, "acme")
	require.NoError(t, s.ExpireAccessTokens(SurfaceShopify))
	status, _ = shopJSON(t, base, "acme", a2)
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = shopJSON(t, base, "acme", "acme-token")
	require.Equal(t, http.StatusOK, status, "the shop's static token does not expire")
}

// TestShopifyLostRefreshAnswer: the answer of a refresh is dropped after
// the new pair was issued; the client retries with the previous refresh
// token, gets the pair's refresh token again and carries on.
func TestShopifyLostRefreshAnswer(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, nil)
	_, r0 := expiringPair(t, base, "acme")
	require.NoError(t, s.SetTokenFaults(SurfaceShopify, TokenFaults{DropAnswers: 1}))

	b, _ := json.Marshal(refreshParams(r0))
	resp, err := http.Post(base+"/shops/acme/admin/oauth/access_token", "application/json", bytes.NewReader(b))
	if err == nil {
		resp.Body.Close()
	}
	require.Error(t, err, "the answer is lost")
	require.EqualValues(t, 1, s.RefreshSpent(r0), "the refresh happened")

	a1, r1 := mustRefresh(t, base, "acme", r0)
	status, _ := shopJSON(t, base, "acme", a1)
	require.Equal(t, http.StatusOK, status)
	_, r2 := mustRefresh(t, base, "acme", r1)
	require.NotEmpty(t, r2)
	st := s.AuthStats().Shopify
	require.EqualValues(t, 1, st.Dropped)
	require.EqualValues(t, 1, st.RefreshRetries)
	require.EqualValues(t, 2, s.RefreshSpent(r0))
	require.EqualValues(t, 1, s.RefreshSpent(r1))
	require.Zero(t, st.UnauthorizedRefreshed)
}

// TestTokenEndpointFaults: 429 and 503 on the token endpoints, counted
// per request, then normal service.
func TestTokenEndpointFaults(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, nil)
	_, r0 := expiringPair(t, base, "acme")
	require.NoError(t, s.SetTokenFaults(SurfaceShopify, TokenFaults{RateLimited: 1, Err5xx: 1}))
	b, _ := json.Marshal(refreshParams(r0))
	resp, err := http.Post(base+"/shops/acme/admin/oauth/access_token", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "2", resp.Header.Get("Retry-After"))
	code, _ := shopifyToken(t, base, "acme", refreshParams(r0), true)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Zero(t, s.RefreshSpent(r0), "a refused request spends nothing")
	mustRefresh(t, base, "acme", r0)

	require.NoError(t, s.SetTokenFaults(SurfaceAmazon, TokenFaults{Err5xx: 2}))
	for i := 0; i < 2; i++ {
		code, body := lwa(t, base, "acme", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"acme-token"}, "client_id": {"c"}, "client_secret": {"s"}})
		require.Equal(t, http.StatusServiceUnavailable, code, string(body))
	}
	amazonAccess(t, base, "acme", "acme-token")
	st := s.AuthStats()
	require.EqualValues(t, 1, st.Shopify.RateLimited)
	require.EqualValues(t, 1, st.Shopify.Err5xx)
	require.EqualValues(t, 2, st.Amazon.Err5xx)
	require.EqualValues(t, 1, s.RefreshSpent("acme-token"))
	require.Error(t, s.SetTokenFaults("ebay", TokenFaults{}))
	require.Error(t, s.SetTokenFaults(SurfaceShopify, TokenFaults{DropAnswers: -1}))
	require.Error(t, s.SetTokenTTL(SurfaceShopify, 500*time.Millisecond, 0), "expires_in would say 0")
	require.Error(t, s.SetTokenTTL(SurfaceAmazon, time.Minute, time.Hour), "LWA refresh tokens do not expire")
	_, err = New(Config{Shops: []ShopConfig{{Name: "a", Token: "t"}}, ShopifyAccessTTL: time.Millisecond})
	require.Error(t, err)
}

// TestShopifyRevocation: a revoked refresh token answers invalid_grant;
// an uninstalled app's tokens all stop working; uninstalling every app
// also disables the shop's static token.
func TestShopifyRevocation(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, nil)
	_, r0 := expiringPair(t, base, "acme")
	require.NoError(t, s.RevokeRefreshToken(SurfaceShopify, r0))
	code, m := shopifyToken(t, base, "acme", refreshParams(r0), true)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "invalid_grant", m["error"])
	require.Error(t, s.RevokeRefreshToken(SurfaceShopify, "shprt_unknown"))

	a1, r1 := expiringPair(t, base, "acme")
	require.NoError(t, s.RevokeShopifyInstall("acme", testClientID))
	status, _ := shopJSON(t, base, "acme", a1)
	require.Equal(t, http.StatusUnauthorized, status)
	code, _ = shopifyToken(t, base, "acme", refreshParams(r1), true)
	require.Equal(t, http.StatusBadRequest, code)
	status, _ = shopJSON(t, base, "acme", "acme-token")
	require.Equal(t, http.StatusOK, status, "another app's token (the static one) still works")
	a2, _ := expiringPair(t, base, "acme") // reinstalled
	status, _ = shopJSON(t, base, "acme", a2)
	require.Equal(t, http.StatusOK, status)

	require.NoError(t, s.RevokeShopifyInstall("acme", ""))
	for _, tok := range []string{a2, "acme-token"} {
		status, _ = gqlStatus(t, base, "acme", tok)
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, _ = gqlStatus(t, base, "globex", "globex-token")
	require.Equal(t, http.StatusOK, status, "other shops are untouched")
	code, m = shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": testSecret,
		"grant_type": shopifyExchangeGrant, "subject_token": "acme-token",
		"subject_token_type": shopifyOfflineType, "requested_token_type": shopifyOfflineType, "expiring": "1"}, true)
	require.Equal(t, http.StatusBadRequest, code, "an uninstalled shop's static token cannot be migrated")
	require.Equal(t, "invalid_subject_token", m["error"])
}

// TestShopifyTokenExchangeMigration: a non-expiring token is exchanged for
// an expiring pair; the old token stops opening the API; a retry with the
// old token returns the same pair until the pair is refreshed.
func TestShopifyTokenExchangeMigration(t *testing.T) {
	clk := newFakeClock()
	_, base := shopifyOAuthSim(t, clk, nil)
	exchange := func(subject string) (int, map[string]any) {
		return shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": testSecret,
			"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": subject,
			"subject_token_type": shopifyOfflineType, "requested_token_type": shopifyOfflineType, "expiring": "1"}, true)
	}
	for _, subject := range []string{"acme-token", ""} {
		if subject == "" { // a non-expiring token from the code grant
			back := authorize(t, base, "acme", testClientID, testRedirect)
			_, m := shopifyToken(t, base, "acme", map[string]string{"client_id": testClientID, "client_secret": testSecret, "code": back.Get("code")}, true)
			subject = m["access_token"].(string)
		}
		status, _ := shopJSON(t, base, "acme", subject)
		require.Equal(t, http.StatusOK, status)
		code, m := exchange(subject)
		require.Equal(t, http.StatusOK, code, m)
		require.ElementsMatch(t, []string{"access_token", "scope", "expires_in", "refresh_token", "refresh_token_expires_in"}, keys(m))
		status, _ = shopJSON(t, base, "acme", subject)
		require.Equal(t, http.StatusUnauthorized, status, "the migrated token no longer opens the API")
		status, _ = shopJSON(t, base, "acme", m["access_token"].(string))
		require.Equal(t, http.StatusOK, status)

		code, again := exchange(subject) // the first answer was lost
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, m["access_token"], again["access_token"])
		require.Equal(t, m["refresh_token"], again["refresh_token"])

		mustRefresh(t, base, "acme", m["refresh_token"].(string))
		code, e := exchange(subject)
		require.Equal(t, http.StatusBadRequest, code, "after a refresh the migration cannot be repeated")
		require.Equal(t, "invalid_subject_token", e["error"])
	}
	code, e := exchange("shpat_made_up")
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, "invalid_subject_token", e["error"])
}

const (
	testAppID        = "amzn1.sp.solution.sim"
	testLWAClient    = "amzn1.application-oa2-client.sim"
	testLWASecret    = "lwa-secret"
	testAmazonReturn = "https://app.example/amazon/callback"
)

func amazonOAuthSim(t *testing.T, clk *fakeClock, mod func(*Config)) (*Simulator, string) {
	t.Helper()
	return oauthSim(t, clk, mod, func(s *Simulator) error {
		return s.RegisterAmazonApp(AmazonApp{ApplicationID: testAppID, ClientID: testLWAClient, ClientSecret: testLWASecret,
			RedirectURIs: []string{testAmazonReturn, "https://app.example/other"}})
	})
}

// consent opens the consent page and returns the status and, for a
// redirect, its query.
func consent(t *testing.T, base, shop string, q url.Values) (int, url.Values, string) {
	t.Helper()
	resp, err := noRedirect.Get(base + "/shops/" + shop + "/amazon/apps/authorize/consent?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusFound {
		return resp.StatusCode, nil, string(b)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	return resp.StatusCode, loc.Query(), loc.Scheme + "://" + loc.Host + loc.Path
}

// TestAmazonWebsiteAuthorization: the consent page redirects with
// spapi_oauth_code, state and selling_partner_id; the code grant answers
// LWA's fields once; the refresh token then works and can be revoked.
func TestAmazonWebsiteAuthorization(t *testing.T) {
	clk := newFakeClock()
	s, base := amazonOAuthSim(t, clk, nil)
	q := url.Values{"application_id": {testAppID}, "state": {"st-1"}}
	code, _, page := consent(t, base, "acme", q)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, page, "MD1000", "a draft app needs version=beta")
	q.Set("version", "beta")
	q.Set("redirect_uri", "https://evil.example/cb")
	code, _, page = consent(t, base, "acme", q)
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, page, "MD5101")
	q.Del("redirect_uri")
	code, back, to := consent(t, base, "acme", q)
	require.Equal(t, http.StatusFound, code)
	require.Equal(t, testAmazonReturn, to, "the first registered redirect URI")
	require.Equal(t, "st-1", back.Get("state"))
	require.Equal(t, s.SellingPartnerID("acme"), back.Get("selling_partner_id"))
	require.Regexp(t, `^A[0-9A-Z]{13}$`, back.Get("selling_partner_id"))
	oauthCode := back.Get("spapi_oauth_code")
	require.NotEmpty(t, oauthCode)

	grant := url.Values{"grant_type": {"authorization_code"}, "code": {oauthCode}, "redirect_uri": {testAmazonReturn},
		"client_id": {testLWAClient}, "client_secret": {"wrong"}}
	status, body := lwa(t, base, "acme", grant)
	require.Equal(t, http.StatusUnauthorized, status)
	require.Contains(t, string(body), `"invalid_client"`)
	grant.Set("client_secret", testLWASecret)
	grant.Set("redirect_uri", "https://app.example/other")
	status, body = lwa(t, base, "acme", grant)
	require.Equal(t, http.StatusBadRequest, status, "redirect_uri must be the consent's")
	require.JSONEq(t, `{"error":"invalid_grant","error_description":"The request has an invalid grant parameter : code"}`, string(body))
	grant.Set("redirect_uri", testAmazonReturn)
	status, body = lwa(t, base, "acme", grant)
	require.Equal(t, http.StatusOK, status, string(body))
	var tok map[string]any
	require.NoError(t, json.Unmarshal(body, &tok))
	require.ElementsMatch(t, []string{"access_token", "refresh_token", "token_type", "expires_in"}, keys(tok))
	require.Equal(t, "bearer", tok["token_type"])
	require.EqualValues(t, 3600, tok["expires_in"])
	require.True(t, strings.HasPrefix(tok["access_token"].(string), "Atza|"))
	refresh := tok["refresh_token"].(string)
	require.True(t, strings.HasPrefix(refresh, "Atzr|"))
	status, _ = lwa(t, base, "acme", grant)
	require.Equal(t, http.StatusBadRequest, status, "a code works once")

	now := clk.Now()
	win := amazonWindow(now.Add(-time.Hour), now.Add(-3*time.Minute))
	status, _, _ = searchOrders(t, base, "acme", tok["access_token"].(string), win)
	require.Equal(t, http.StatusOK, status)

	ref := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {testLWAClient}, "client_secret": {testLWASecret}}
	status, body = lwa(t, base, "acme", ref)
	require.Equal(t, http.StatusOK, status, string(body))
	require.NoError(t, json.Unmarshal(body, &tok))
	require.Equal(t, refresh, tok["refresh_token"], "LWA refresh tokens do not rotate")
	status, _, _ = searchOrders(t, base, "acme", tok["access_token"].(string), win)
	require.Equal(t, http.StatusOK, status)
	status, _ = lwa(t, base, "globex", ref)
	require.Equal(t, http.StatusBadRequest, status, "one seller's refresh token is not another's")
	require.EqualValues(t, 1, s.RefreshSpent(refresh))

	require.NoError(t, s.RevokeRefreshToken(SurfaceAmazon, refresh))
	status, body = lwa(t, base, "acme", ref)
	require.Equal(t, http.StatusBadRequest, status)
	require.JSONEq(t, `{"error":"invalid_grant","error_description":"The request has an invalid grant parameter : refresh_token"}`, string(body))

	// A code lives five minutes.
	_, back, _ = consent(t, base, "acme", q)
	clk.Add(amazonCodeTTL)
	grant.Set("code", back.Get("spapi_oauth_code"))
	status, _ = lwa(t, base, "acme", grant)
	require.Equal(t, http.StatusBadRequest, status)
}

// TestAmazonAccessTokenExpiry403: SP-API's 403 bodies for a missing, an
// expired and an invalid access token; the expired ones count as a
// refreshed token's refusal; a seller revoking the app ends the refresh
// token (the shop token included).
func TestAmazonAccessTokenExpiry403(t *testing.T) {
	clk := newFakeClock()
	s, base := amazonOAuthSim(t, clk, func(c *Config) { c.AmazonAccessTTL = time.Minute })
	now := clk.Now()
	win := amazonWindow(now.Add(-time.Hour), now.Add(-3*time.Minute))
	access := amazonAccess(t, base, "acme", "acme-token")
	status, _, _ := searchOrders(t, base, "acme", access, win)
	require.Equal(t, http.StatusOK, status)
	clk.Add(time.Minute)
	status, _, body := searchOrders(t, base, "acme", access, win)
	require.Equal(t, http.StatusForbidden, status)
	require.JSONEq(t, `{"errors":[{"code":"Unauthorized","message":"Access to requested resource is denied.","details":"The access token you provided has expired."}]}`, string(body))
	status, _, body = searchOrders(t, base, "acme", "", win)
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, string(body), "Access token is missing in the request header.")
	status, _, body = searchOrders(t, base, "acme", "Atza|garbage", win)
	require.Equal(t, http.StatusForbidden, status)
	require.Contains(t, string(body), "The access token you provided is revoked, malformed or invalid.")

	access = amazonAccess(t, base, "acme", "acme-token")
	require.NoError(t, s.ExpireAccessTokens(SurfaceAmazon))
	status, _, body = searchOrders(t, base, "acme", access, win)
	require.Equal(t, http.StatusForbidden, status, "lapsed mid-window")
	require.Contains(t, string(body), "has expired")
	st := s.AuthStats().Amazon
	require.EqualValues(t, 4, st.Unauthorized)
	require.EqualValues(t, 2, st.UnauthorizedRefreshed)

	require.NoError(t, s.RevokeAmazonAuthorization("acme", ""))
	code, body := lwa(t, base, "acme", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"acme-token"}, "client_id": {"c"}, "client_secret": {"s"}})
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, string(body), `"invalid_grant"`)
	amazonAccess(t, base, "globex", "globex-token")
}

// TestAmazonStatelessTokensAfterRestart: an access token minted from the
// shop token by an earlier simulator with the same seed still works, and
// ExpireAccessTokens lapses it too.
func TestAmazonStatelessTokensAfterRestart(t *testing.T) {
	clk := newFakeClock()
	_, base1 := amazonOAuthSim(t, clk, nil)
	access := amazonAccess(t, base1, "acme", "acme-token")
	s2, base2 := amazonOAuthSim(t, clk, nil)
	now := clk.Now()
	win := amazonWindow(now.Add(-time.Hour), now.Add(-3*time.Minute))
	status, _, _ := searchOrders(t, base2, "acme", access, win)
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, s2.ExpireAccessTokens(SurfaceAmazon))
	status, _, _ = searchOrders(t, base2, "acme", access, win)
	require.Equal(t, http.StatusForbidden, status)
}

// TestOAuthAdminClient drives the OAuth admin API over HTTP.
func TestOAuthAdminClient(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(1, clk))
	ac := &AdminClient{BaseURL: ts.URL, Token: "admin-token"}
	ctx := context.Background()
	require.NoError(t, ac.RegisterShopifyApp(ctx, ShopifyApp{ClientID: testClientID, ClientSecret: testSecret, AppURL: "https://app.example/install"}))
	require.NoError(t, ac.RegisterAmazonApp(ctx, AmazonApp{ApplicationID: testAppID, ClientID: testLWAClient, ClientSecret: testLWASecret, RedirectURIs: []string{testAmazonReturn}}))
	require.ErrorContains(t, ac.RegisterAmazonApp(ctx, AmazonApp{ApplicationID: "x"}), "HTTP 400")
	u, err := ac.ShopifyInstallURL(ctx, testClientID, "acme")
	require.NoError(t, err)
	pu, err := url.Parse(u)
	require.NoError(t, err)
	verifyShopifyHMAC(t, pu.Query(), testSecret)

	_, r0 := expiringPair(t, ts.URL, "acme")
	require.NoError(t, ac.SetTokenTTL(ctx, SurfaceShopify, 30*time.Second, time.Hour))
	require.NoError(t, ac.SetTokenFaults(ctx, SurfaceShopify, TokenFaults{DropAnswers: 1}))
	b, _ := json.Marshal(refreshParams(r0))
	if resp, err := http.Post(ts.URL+"/shops/acme/admin/oauth/access_token", "application/json", bytes.NewReader(b)); err == nil {
		resp.Body.Close()
		t.Fatal("the answer should have been dropped")
	}
	code, m := shopifyToken(t, ts.URL, "acme", refreshParams(r0), true)
	require.Equal(t, http.StatusOK, code)
	require.EqualValues(t, 30, m["expires_in"])
	require.EqualValues(t, 3600, m["refresh_token_expires_in"])
	n, err := ac.RefreshSpent(ctx, r0)
	require.NoError(t, err)
	require.EqualValues(t, 2, n)

	require.NoError(t, ac.ExpireAccessTokens(ctx, SurfaceShopify))
	status, _ := shopJSON(t, ts.URL, "acme", m["access_token"].(string))
	require.Equal(t, http.StatusUnauthorized, status)
	require.NoError(t, ac.RevokeRefreshToken(ctx, SurfaceShopify, m["refresh_token"].(string)))
	code, _ = shopifyToken(t, ts.URL, "acme", refreshParams(m["refresh_token"].(string)), true)
	require.Equal(t, http.StatusBadRequest, code)
	require.NoError(t, ac.RevokeShopifyInstall(ctx, "acme", ""))
	require.NoError(t, ac.RevokeAmazonAuthorization(ctx, "globex", ""))
	require.Error(t, ac.RevokeShopifyInstall(ctx, "nope", ""))

	st, err := ac.AuthStats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, st.Shopify.Dropped)
	require.EqualValues(t, 1, st.Shopify.UnauthorizedRefreshed)
	require.EqualValues(t, 2, st.Shopify.RefreshSpent[TokenFingerprint(r0)])
}

// TestShopifyConcurrentRefreshes: refreshes racing with one refresh token
// (two workers that both saw the token expire) all succeed and agree on
// the replacement, so neither locks the other out.
func TestShopifyConcurrentRefreshes(t *testing.T) {
	clk := newFakeClock()
	s, base := shopifyOAuthSim(t, clk, nil)
	_, r0 := expiringPair(t, base, "acme")
	const n = 8
	got := make(chan string, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			b, _ := json.Marshal(refreshParams(r0))
			resp, err := http.Post(base+"/shops/acme/admin/oauth/access_token", "application/json", bytes.NewReader(b))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("HTTP %d: %v %v", resp.StatusCode, m, err)
				return
			}
			got <- m["refresh_token"].(string)
		}()
	}
	var first string
	for i := 0; i < n; i++ {
		select {
		case err := <-errs:
			t.Fatal(err)
		case r := <-got:
			if first == "" {
				first = r
			}
			require.Equal(t, first, r)
		}
	}
	require.EqualValues(t, n, s.RefreshSpent(r0))
	require.EqualValues(t, n-1, s.AuthStats().Shopify.RefreshRetries)
}
