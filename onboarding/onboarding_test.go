package onboarding_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/accountstest"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/onboarding"
)

const (
	clientID     = "app-client-id"
	clientSecret = "app-client-secret-0123456789"
)

// fakeCreds is the credential store: one app, the grants saved.
type fakeCreds struct {
	mu     sync.Mutex
	grants map[string]onboarding.Grant
}

func (f *fakeCreds) App(_ context.Context, name string) (string, string, error) {
	if name != "public-app" {
		return "", "", errors.New("no app " + name)
	}
	return clientID, clientSecret, nil
}

func (f *fakeCreds) SaveGrant(_ context.Context, name string, g onboarding.Grant) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.grants == nil {
		f.grants = map[string]onboarding.Grant{}
	}
	f.grants[name] = g
	return nil
}

func (f *fakeCreds) grant(name string) (onboarding.Grant, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g, ok := f.grants[name]
	return g, ok
}

// platformSide plays a shop's token endpoint and Amazon's LWA.
type platformSide struct {
	scope     string
	expiring  bool
	exchanged []url.Values
	mu        sync.Mutex
}

func (p *platformSide) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /shops/{shop}/admin/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		p.exchanged = append(p.exchanged, r.PostForm)
		p.mu.Unlock()
		if r.PostForm.Get("client_secret") != clientSecret || r.PostForm.Get("code") != "good-code" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_request"}`))
			return
		}
		ans := map[string]any{"access_token": "shpat_new", "scope": p.scope}
		if p.expiring && r.PostForm.Get("expiring") == "1" {
			ans["expires_in"], ans["refresh_token"], ans["refresh_token_expires_in"] = 3600, "shprt_new", 7776000
		}
		_ = json.NewEncoder(w).Encode(ans)
	})
	mux.HandleFunc("POST /lwa/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") != "authorization_code" || r.PostForm.Get("code") != "sp-code" || r.PostForm.Get("client_secret") != clientSecret {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "Atza|new", "refresh_token": "Atzr|new", "token_type": "bearer", "expires_in": 3600})
	})
	return mux
}

type fixture struct {
	h      *onboarding.Handler
	srv    *httptest.Server
	side   *platformSide
	sideS  *httptest.Server
	creds  *fakeCreds
	reg    *accounts.Memory
	engine *accountstest.Engine
	svc    *accounts.Service
	now    time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{side: &platformSide{scope: "read_orders", expiring: true}, creds: &fakeCreds{}, reg: accounts.NewMemory(),
		engine: &accountstest.Engine{}, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	f.sideS = httptest.NewServer(f.side.handler())
	t.Cleanup(f.sideS.Close)
	f.svc = &accounts.Service{Registry: f.reg, Engine: f.engine}
	mux := http.NewServeMux()
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	h, err := onboarding.New(onboarding.Config{
		PublicURL: f.srv.URL,
		Shopify:   &onboarding.ShopifyConfig{App: "public-app", ShopURL: f.sideS.URL + "/shops/{handle}", Settings: map[string]any{"interval": "5m"}},
		Amazon: &onboarding.AmazonConfig{App: "public-app", ApplicationID: "amzn1.sp.solution.test", ConsentURL: f.sideS.URL + "/consent",
			TokenURL: f.sideS.URL + "/lwa/token", Settings: map[string]any{"endpoint": f.sideS.URL + "/sp", "options": map[string]any{"marketplace_ids": []any{"ATVPDKIKX0DER"}}}},
		Now: func() time.Time { return f.now },
	}, f.creds, f.svc)
	require.NoError(t, err)
	mux.Handle(onboarding.Prefix, h)
	f.h = h
	return f
}

// browser follows no redirects (each hop is checked) and keeps cookies.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signed is a query Shopify signed with the app's secret.
func signed(q url.Values) url.Values {
	q.Set("hmac", onboarding.ShopifyHMAC(q, clientSecret))
	return q
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// install runs the install request and returns the state the consent
// redirect carries.
func (f *fixture) install(t *testing.T, c *http.Client, shop string) string {
	t.Helper()
	q := signed(url.Values{"shop": {shop}, "timestamp": {strconv.FormatInt(f.now.Unix(), 10)}, "host": {"YWRtaW4"}})
	resp, body := get(t, c, f.srv.URL+"/oauth/shopify/install?"+q.Encode())
	require.Equal(t, http.StatusFound, resp.StatusCode, body)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	handle, _, _ := strings.Cut(shop, ".")
	require.Equal(t, f.sideS.URL+"/shops/"+handle+"/admin/oauth/authorize", loc.Scheme+"://"+loc.Host+loc.Path, "the consent page is the shop's own")
	require.Equal(t, clientID, loc.Query().Get("client_id"))
	require.Equal(t, "read_orders", loc.Query().Get("scope"))
	require.Equal(t, f.srv.URL+"/oauth/shopify/callback", loc.Query().Get("redirect_uri"))
	require.NotEmpty(t, loc.Query().Get("state"))
	return loc.Query().Get("state")
}

func (f *fixture) callback(t *testing.T, c *http.Client, shop, state, code string) (*http.Response, string) {
	q := url.Values{"shop": {shop}, "code": {code}, "timestamp": {strconv.FormatInt(f.now.Unix(), 10)}, "host": {"YWRtaW4"}}
	if state != "" {
		q.Set("state", state)
	}
	return get(t, c, f.srv.URL+"/oauth/shopify/callback?"+signed(q).Encode())
}

func TestShopifyInstallRegistersTheShopWithAnExpiringToken(t *testing.T) {
	f := newFixture(t)
	c := browser(t)
	state := f.install(t, c, "acme.myshopify.com")
	resp, body := f.callback(t, c, "acme.myshopify.com", state, "good-code")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "platform shopify-acme")
	require.NotContains(t, body, "shpat_new")

	g, ok := f.creds.grant("shopify-acme")
	require.True(t, ok, "the token pair is stored")
	require.Equal(t, onboarding.Grant{Kind: "shopify", App: "public-app", TokenURL: f.sideS.URL + "/shops/acme/admin/oauth/access_token",
		AccessToken: "shpat_new", AccessTTL: time.Hour, RefreshToken: "shprt_new", RefreshTTL: 90 * 24 * time.Hour, Scope: "read_orders", Subject: "acme.myshopify.com"}, g)
	require.Equal(t, "1", f.side.exchanged[0].Get("expiring"), "an expiring offline token is asked for")

	e, found, err := f.reg.Get(context.Background(), accounts.ClassPlatform, "shopify-acme")
	require.NoError(t, err)
	require.True(t, found)
	p, err := accounts.DecodePlatform(e)
	require.NoError(t, err)
	require.Equal(t, config.CredentialRef{Stored: "shopify-acme"}, p.Credentials)
	require.Equal(t, f.sideS.URL+"/shops/acme", p.Endpoint)
	require.Equal(t, 5*time.Minute, p.Interval.D(), "the operator's settings for new accounts apply")

	// A re-install (a revoked token) replaces the credential, keeps the platform.
	state = f.install(t, c, "acme.myshopify.com")
	resp, body = f.callback(t, c, "acme.myshopify.com", state, "good-code")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "reconnected")
	again, _, _ := f.reg.Get(context.Background(), accounts.ClassPlatform, "shopify-acme")
	require.Equal(t, e.Revision, again.Revision, "the platform itself is unchanged")
}

func TestShopifyInstallRefusesWhatIsForgedReplayedOrForeign(t *testing.T) {
	f := newFixture(t)
	ts := strconv.FormatInt(f.now.Unix(), 10)
	c := browser(t)

	forged := url.Values{"shop": {"acme.myshopify.com"}, "timestamp": {ts}}
	forged.Set("hmac", onboarding.ShopifyHMAC(forged, "another-secret"))
	resp, body := get(t, c, f.srv.URL+"/oauth/shopify/install?"+forged.Encode())
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a forged hmac: %s", body)

	tampered := signed(url.Values{"shop": {"acme.myshopify.com"}, "timestamp": {ts}})
	tampered.Set("shop", "evil.myshopify.com")
	resp, _ = get(t, c, f.srv.URL+"/oauth/shopify/install?"+tampered.Encode())
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a parameter changed after signing")

	resp, body = get(t, c, f.srv.URL+"/oauth/shopify/install?"+signed(url.Values{"shop": {"evil.example.com"}, "timestamp": {ts}}).Encode())
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a shop that is not *.myshopify.com is never redirected to: %s", body)
	require.Empty(t, resp.Header.Get("Location"))

	stale := strconv.FormatInt(f.now.Add(-2*time.Hour).Unix(), 10)
	resp, _ = get(t, c, f.srv.URL+"/oauth/shopify/install?"+signed(url.Values{"shop": {"acme.myshopify.com"}, "timestamp": {stale}}).Encode())
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a stale install link")

	resp, _ = f.callback(t, c, "acme.myshopify.com", "", "good-code")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "no state")
	resp, _ = f.callback(t, c, "acme.myshopify.com", "made-up-state", "good-code")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a state never issued")

	state := f.install(t, c, "acme.myshopify.com")
	resp, _ = f.callback(t, c, "other.myshopify.com", state, "good-code")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a state issued for another shop")
	resp, _ = f.callback(t, c, "acme.myshopify.com", state, "good-code")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a state is used once, even by a refused callback")

	state = f.install(t, c, "acme.myshopify.com")
	resp, _ = f.callback(t, browser(t), "acme.myshopify.com", state, "good-code")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a state finished in another browser")

	state = f.install(t, c, "acme.myshopify.com")
	f.now = f.now.Add(onboarding.StateTTL + time.Second)
	resp, _ = f.callback(t, c, "acme.myshopify.com", state, "good-code")
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "an expired state")

	_, found, _ := f.reg.Get(context.Background(), accounts.ClassPlatform, "shopify-acme")
	require.False(t, found, "nothing refused registered anything")
	_, stored := f.creds.grant("shopify-acme")
	require.False(t, stored)
}

func TestShopifyInstallNeedsTheScopesAndAnExpiringToken(t *testing.T) {
	f := newFixture(t)
	c := browser(t)
	f.side.scope = "read_products"
	resp, body := f.callback(t, c, "acme.myshopify.com", f.install(t, c, "acme.myshopify.com"), "good-code")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, body, "read_orders")

	f.side.scope = "write_orders"
	f.side.expiring = false
	resp, body = f.callback(t, c, "acme.myshopify.com", f.install(t, c, "acme.myshopify.com"), "good-code")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode, "a non-expiring token is not taken: Shopify rejects them for public apps: %s", body)

	f.side.expiring = true
	resp, body = f.callback(t, c, "acme.myshopify.com", f.install(t, c, "acme.myshopify.com"), "bad-code")
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.NotContains(t, body, clientSecret)

	resp, body = f.callback(t, c, "acme.myshopify.com", f.install(t, c, "acme.myshopify.com"), "good-code")
	require.Equal(t, http.StatusOK, resp.StatusCode, "write_orders grants read_orders: %s", body)
}

func TestAmazonWebsiteAuthorizationRegistersTheSeller(t *testing.T) {
	f := newFixture(t)
	c := browser(t)
	resp, body := get(t, c, f.srv.URL+"/oauth/amazon/start")
	require.Equal(t, http.StatusFound, resp.StatusCode, body)
	loc, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	require.Equal(t, f.sideS.URL+"/consent", loc.Scheme+"://"+loc.Host+loc.Path)
	require.Equal(t, "amzn1.sp.solution.test", loc.Query().Get("application_id"))
	state := loc.Query().Get("state")

	cb := func(c *http.Client, q url.Values) (*http.Response, string) {
		return get(t, c, f.srv.URL+"/oauth/amazon/callback?"+q.Encode())
	}
	resp, _ = cb(c, url.Values{"state": {state}, "selling_partner_id": {"../etc"}, "spapi_oauth_code": {"sp-code"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a seller id that is not one")

	resp, body = get(t, c, f.srv.URL+"/oauth/amazon/start")
	require.Equal(t, http.StatusFound, resp.StatusCode, body)
	loc, _ = url.Parse(resp.Header.Get("Location"))
	state = loc.Query().Get("state")
	resp, body = cb(c, url.Values{"state": {state}, "selling_partner_id": {"A1SELLER0001"}, "spapi_oauth_code": {"sp-code"}})
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, "amazon-a1seller0001")
	g, ok := f.creds.grant("amazon-a1seller0001")
	require.True(t, ok)
	require.Equal(t, "lwa", g.Kind)
	require.Equal(t, "Atzr|new", g.RefreshToken)
	require.Equal(t, f.sideS.URL+"/lwa/token", g.TokenURL)

	resp, _ = cb(c, url.Values{"state": {state}, "selling_partner_id": {"A1SELLER0001"}, "spapi_oauth_code": {"sp-code"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "a replayed callback")
}

func TestConfigIsChecked(t *testing.T) {
	reg := accounts.NewMemory()
	svc := &accounts.Service{Registry: reg, Engine: &accountstest.Engine{}}
	for name, cfg := range map[string]onboarding.Config{
		"no public URL":           {Shopify: &onboarding.ShopifyConfig{App: "a"}},
		"plain http to the world": {PublicURL: "http://ordersync.example.com", Shopify: &onboarding.ShopifyConfig{App: "a"}},
		"no flow":                 {PublicURL: "https://o.example.com"},
		"shopify without app":     {PublicURL: "https://o.example.com", Shopify: &onboarding.ShopifyConfig{}},
		"amazon bad application":  {PublicURL: "https://o.example.com", Amazon: &onboarding.AmazonConfig{App: "a", ApplicationID: "x", Settings: map[string]any{"endpoint": "https://sp"}}},
		"amazon without endpoint": {PublicURL: "https://o.example.com", Amazon: &onboarding.AmazonConfig{App: "a", ApplicationID: "amzn1.sp.solution.x"}},
	} {
		_, err := onboarding.New(cfg, &fakeCreds{}, svc)
		require.Error(t, err, name)
	}
}

func TestOnboardingFile(t *testing.T) {
	cfg, err := onboarding.ParseFile("oauth.yaml", []byte(`
public_url: https://ordersync.example.com
shopify:
  app: shopify-public
  settings: {interval: 10m, options: {api: graphql}}
amazon:
  app: lwa
  application_id: amzn1.sp.solution.abc
  consent_url: https://sellercentral-europe.amazon.com/apps/authorize/consent
  settings: {endpoint: https://sellingpartnerapi-eu.amazon.com, options: {marketplace_ids: [A1PA6795UKMFR9]}}
`))
	require.NoError(t, err)
	require.Equal(t, "shopify-public", cfg.Shopify.App)
	require.Equal(t, "amzn1.sp.solution.abc", cfg.Amazon.ApplicationID)

	_, err = onboarding.ParseFile("oauth.yaml", []byte("public_url: https://o.example.com\nshopify: {app: a, scope: [read_orders]}\n"))
	require.ErrorContains(t, err, "scope", "a misspelt field is named")
	_, err = onboarding.ParseFile("oauth.yaml", []byte("public_url: https://o.example.com\nshopify: {app: a, settings: {credentials: {env: X}}}\n"))
	require.ErrorContains(t, err, "settings.credentials")
}
