package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/accountstest"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/store"
)

// signalClient is a Temporal server on which no cursor runs: a signal
// finds no workflow (what starter.Engine leaves alone). It records the
// signals; any other call panics.
type signalClient struct {
	client.Client
	mu      sync.Mutex
	signals []string
}

func (c *signalClient) SignalWorkflow(_ context.Context, id, _, name string, _ any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.signals = append(c.signals, name+" "+id)
	return serviceerror.NewNotFound("workflow not found")
}

func (c *signalClient) Close() {}

// migrateWorld is a simulator playing Shopify with two shops on static
// tokens and a public app, and an ordersync store whose registry holds
// them as shopify platforms (plus one sim platform), with a stored app.
type migrateWorld struct {
	t    *testing.T
	srv  *sim.Server
	s    *sim.Simulator
	reg  accounts.Registry
	st   store.Store
	temp *signalClient
}

const (
	migAppID     = "public-app-id"
	migAppSecret = "SECRET-app-client"
	acmeStatic   = "shpat_SECRET_acme_static"
	globexStatic = "shpat_SECRET_globex_static"
)

func newMigrateWorld(t *testing.T) *migrateWorld {
	t.Helper()
	t.Setenv("ORDERSYNC_LOG_LEVEL", "error")
	s, err := sim.New(sim.Config{Seed: 3, Shops: []sim.ShopConfig{{Name: "acme", Token: acmeStatic}, {Name: "globex", Token: globexStatic}},
		AdminToken: "admin-token", History: 24 * time.Hour, HistoryOrders: 20, MaxUpdates: 2, UpdateSpread: time.Hour, Late: time.Minute})
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, s.RegisterShopifyApp(sim.ShopifyApp{ClientID: migAppID, ClientSecret: migAppSecret, Scopes: []string{"read_orders"}}))

	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "state.db")
	t.Setenv("ORDERSYNC_STORE_DSN", dsn)
	t.Setenv("ORDERSYNC_PLATFORMS_FILE", "/nonexistent/platforms.yaml")
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS_FILE", "")
	key, err := credentials.NewKeyEntry(time.Now())
	require.NoError(t, err)
	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", key)
	t.Setenv("ACME_TOKEN", acmeStatic)
	t.Setenv("GLOBEX_TOKEN", globexStatic)
	t.Setenv("MIG_APP_SECRET", migAppSecret)

	st, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg, ok := store.RegistryOf(st)
	require.True(t, ok)
	svc := &accounts.Service{Registry: reg, Engine: &accountstest.Engine{}}
	for _, p := range []struct{ name, kind, endpoint, env string }{
		{"shopify-acme", "shopify", srv.ShopURL("acme"), "ACME_TOKEN"},
		{"shopify-globex", "shopify", srv.ShopURL("globex"), "GLOBEX_TOKEN"},
		{"sim-acme", "sim", srv.ShopURL("acme"), "ACME_TOKEN"},
	} {
		pl, err := platformFromFlags(p.name, p.kind, p.endpoint, config.CredentialRef{Env: p.env}, nil)
		require.NoError(t, err)
		_, err = svc.AddPlatform(context.Background(), pl, accounts.AddOptions{})
		require.NoError(t, err)
	}
	w := &migrateWorld{t: t, srv: srv, s: s, reg: reg, st: st, temp: &signalClient{}}
	code, out, errOut := w.run("credentials", "app", "set", "public-app", "--client-id", migAppID, "--client-secret-env", "MIG_APP_SECRET")
	require.Equal(t, ExitOK, code, out+errOut)
	return w
}

// run runs one ordersync command; nothing it prints holds a secret.
func (w *migrateWorld) run(args ...string) (int, string, string) {
	w.t.Helper()
	code, out, errOut := runCommand(w.t, w.temp, args...)
	require.NotContains(w.t, out+errOut, "SECRET", "ordersync %s printed a secret", strings.Join(args, " "))
	for _, tok := range w.issued() {
		require.NotContains(w.t, out+errOut, tok, "ordersync %s printed a token", strings.Join(args, " "))
	}
	return code, out, errOut
}

// issued is every stored token credential's current access and refresh
// token, read with the keys (what must never be printed).
func (w *migrateWorld) issued() []string {
	m := w.manager()
	var out []string
	for _, name := range []string{"shopify-acme", "shopify-globex"} {
		src, err := m.Source(name)
		require.NoError(w.t, err)
		if tok, err := src.Secret(context.Background()); err == nil {
			out = append(out, tok)
		}
	}
	return out
}

func (w *migrateWorld) manager() *credentials.Manager {
	keys, err := credentials.LoadKeyring(nil)
	require.NoError(w.t, err)
	cs, ok := store.CredentialsOf(w.st)
	require.True(w.t, ok)
	return credentials.NewManager(cs, keys, nil, credentials.Options{})
}

// platform is the registered platform and its revision.
func (w *migrateWorld) platform(name string) (config.Platform, int64) {
	e, ok, err := w.reg.Get(context.Background(), accounts.ClassPlatform, name)
	require.NoError(w.t, err)
	require.True(w.t, ok)
	p, err := accounts.DecodePlatform(e)
	require.NoError(w.t, err)
	return p, e.Revision
}

// shopStatus is the Admin API's answer to token at shop.
func (w *migrateWorld) shopStatus(shop, token string) int {
	w.t.Helper()
	req, err := http.NewRequest(http.MethodGet, w.srv.ShopURL(shop)+"/admin/api/2026-10/shop.json", nil)
	require.NoError(w.t, err)
	req.Header.Set("X-Shopify-Access-Token", token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(w.t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func (w *migrateWorld) stored(name string) bool {
	_, ok, err := w.manager().Show(context.Background(), name)
	require.NoError(w.t, err)
	return ok
}

// TestMigrateShopifyMovesAPlatformOffItsStaticToken: the static token is
// exchanged at the simulator's token endpoint, the pair stored, the
// platform pointed at it; the old token then answers 401, and the
// connector built as a worker builds it fetches with the stored token.
// Again: already stored.
func TestMigrateShopifyMovesAPlatformOffItsStaticToken(t *testing.T) {
	w := newMigrateWorld(t)
	ctx := context.Background()
	_, before := w.platform("shopify-acme")
	require.Equal(t, http.StatusOK, w.shopStatus("acme", acmeStatic))

	code, out, errOut := w.run("credentials", "migrate-shopify", "shopify-acme", "--app", "public-app")
	require.Equal(t, ExitOK, code, out+errOut)
	require.Contains(t, out, "shopify-acme: migrated (env:ACME_TOKEN -> stored:shopify-acme, revision ")

	st, ok, err := w.manager().Show(ctx, "shopify-acme")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, credentials.KindShopify, st.Kind)
	require.Equal(t, "public-app", st.App)
	require.False(t, st.AccessExpiresAt.IsZero(), "an expiring token")
	p, after := w.platform("shopify-acme")
	require.Equal(t, config.CredentialRef{Stored: "shopify-acme"}, p.Credentials)
	require.Greater(t, after, before)
	require.Equal(t, []string{"config cursor/shopify-acme", "config reconcile/shopify-acme", "config deadletter/shopify-acme"}, signalNames(w.temp))

	require.Equal(t, http.StatusUnauthorized, w.shopStatus("acme", acmeStatic), "the migrated static token no longer opens the API")
	require.Equal(t, http.StatusOK, w.shopStatus("globex", globexStatic), "another shop is left alone")
	m := w.manager()
	src, err := m.Source("shopify-acme")
	require.NoError(t, err)
	tok, err := src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, w.shopStatus("acme", tok))
	conn, err := connectors.New(p, connectors.WithStoredCredentials(m.Source))
	require.NoError(t, err)
	now := time.Now()
	_, err = conn.ListOrders(ctx, connectors.PageRequest{From: now.Add(-24 * time.Hour), To: now.Add(-time.Minute), PageSize: 50, Page: 1})
	require.NoError(t, err, "the platform fetches with the stored token")
	require.Zero(t, w.s.AuthStats().Shopify.UnauthorizedIssued, "no issued token was refused")

	code, out, errOut = w.run("credentials", "migrate-shopify", "shopify-acme", "--app", "public-app")
	require.Equal(t, ExitOK, code, out+errOut)
	require.Equal(t, "shopify-acme: already stored (stored:shopify-acme)\n", out)
	_, again := w.platform("shopify-acme")
	require.Equal(t, after, again, "nothing written")
	require.EqualValues(t, 1, w.s.AuthStats().Shopify.ExchangeGrants, "exchanged once")
}

func signalNames(c *signalClient) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.signals
	c.signals = nil
	return out
}

// TestMigrateShopifyRefusals: a wrong app secret is a clear error and
// changes nothing (the static token still works); a platform of another
// kind and an unknown one are refused by name; the exit status is 1 while
// the other named platforms are still migrated.
func TestMigrateShopifyRefusals(t *testing.T) {
	w := newMigrateWorld(t)
	t.Setenv("WRONG_SECRET", "SECRET-wrong")
	code, out, errOut := w.run("credentials", "app", "set", "wrong-app", "--client-id", migAppID, "--client-secret-env", "WRONG_SECRET")
	require.Equal(t, ExitOK, code, out+errOut)
	_, before := w.platform("shopify-acme")

	code, out, errOut = w.run("credentials", "migrate-shopify", "shopify-acme", "--app", "wrong-app")
	require.Equal(t, ExitFailure, code, out+errOut)
	require.Contains(t, out, `shopify-acme: failed: migrate "shopify-acme": HTTP 401 invalid_client`)
	require.Contains(t, out, "refused the app's client id or secret")
	require.Contains(t, errOut, "1 of 1 shopify platform(s) not migrated")
	p, after := w.platform("shopify-acme")
	require.Equal(t, before, after)
	require.Equal(t, config.CredentialRef{Env: "ACME_TOKEN"}, p.Credentials)
	require.False(t, w.stored("shopify-acme"))
	require.Equal(t, http.StatusOK, w.shopStatus("acme", acmeStatic), "the static token still works")

	code, out, errOut = w.run("credentials", "migrate-shopify", "sim-acme", "nope", "shopify-globex", "--app", "public-app")
	require.Equal(t, ExitFailure, code, out+errOut)
	require.Contains(t, out, "sim-acme: failed: platform sim-acme is of kind sim, not shopify")
	require.Contains(t, out, "nope: failed: no platform nope is registered")
	require.Contains(t, out, "shopify-globex: migrated")
	require.Contains(t, errOut, "2 of 3 shopify platform(s) not migrated")
	p, _ = w.platform("sim-acme")
	require.Equal(t, config.CredentialRef{Env: "ACME_TOKEN"}, p.Credentials)

	code, _, errOut = w.run("credentials", "migrate-shopify", "shopify-acme", "--app", "no-such-app")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "--app no-such-app is not a stored app")
	code, _, errOut = w.run("credentials", "migrate-shopify", "--app", "public-app")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, errOut, "or --all")

	// A shop that answers the exchange with a non-expiring token (the app
	// is not set up for expiring ones) and an endpoint that is not a
	// shop's: nothing stored, nothing edited, no client secret sent
	// elsewhere.
	fake := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"access_token":"shpat_SECRET_forever","scope":"read_orders"}`))
	}))
	defer fake.Close()
	svc := &accounts.Service{Registry: w.reg, Engine: &accountstest.Engine{}}
	for name, endpoint := range map[string]string{"shopify-old-app": fake.URL + "/shops/old", "shopify-elsewhere": "https://shop.example.com"} {
		pl, err := platformFromFlags(name, "shopify", endpoint, config.CredentialRef{Env: "ACME_TOKEN"}, nil)
		require.NoError(t, err)
		_, err = svc.AddPlatform(context.Background(), pl, accounts.AddOptions{})
		require.NoError(t, err)
	}
	code, out, _ = w.run("credentials", "migrate-shopify", "shopify-old-app", "shopify-elsewhere", "--app", "public-app")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, out, `shopify-old-app: failed: migrate "shopify-old-app": Shopify answered without a refresh token or expires_in`)
	require.Contains(t, out, `shopify-elsewhere: failed: platform shopify-elsewhere: endpoint: shop URL "https://shop.example.com": the host is not a shop's myshopify.com domain`)
	for _, name := range []string{"shopify-old-app", "shopify-elsewhere"} {
		require.False(t, w.stored(name))
		p, _ := w.platform(name)
		require.Equal(t, config.CredentialRef{Env: "ACME_TOKEN"}, p.Credentials)
	}

	t.Setenv("ACME_TOKEN", "")
	code, out, _ = w.run("credentials", "migrate-shopify", "shopify-acme", "--app", "public-app")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, out, "shopify-acme: failed: platform shopify-acme: read its static token on this machine: credential environment variable ACME_TOKEN is empty")
}

// TestMigrateShopifyDryRunAndAll: --dry-run lists what --all would
// migrate and changes nothing; --all then migrates both shops and leaves
// the sim platform alone.
func TestMigrateShopifyDryRunAndAll(t *testing.T) {
	w := newMigrateWorld(t)
	_, acmeRev := w.platform("shopify-acme")
	code, out, errOut := w.run("credentials", "migrate-shopify", "--all", "--app", "public-app", "--dry-run")
	require.Equal(t, ExitOK, code, out+errOut)
	require.Equal(t, "shopify-acme: would migrate (env:ACME_TOKEN -> stored:shopify-acme)\n"+
		"shopify-globex: would migrate (env:GLOBEX_TOKEN -> stored:shopify-globex)\n", out)
	_, rev := w.platform("shopify-acme")
	require.Equal(t, acmeRev, rev)
	require.False(t, w.stored("shopify-acme"))
	require.Zero(t, w.s.AuthStats().Shopify.TokenRequests, "a dry run sends nothing")
	require.Equal(t, http.StatusOK, w.shopStatus("acme", acmeStatic))

	code, out, errOut = w.run("credentials", "migrate-shopify", "--all", "--app", "public-app", "-o", "json")
	require.Equal(t, ExitOK, code, out+errOut)
	require.Contains(t, out, `"platform": "shopify-acme"`)
	require.Contains(t, out, `"result": "migrated"`)
	for _, name := range []string{"shopify-acme", "shopify-globex"} {
		p, _ := w.platform(name)
		require.Equal(t, config.CredentialRef{Stored: name}, p.Credentials)
	}
	p, _ := w.platform("sim-acme")
	require.Equal(t, config.CredentialRef{Env: "ACME_TOKEN"}, p.Credentials)

	code, out, _ = w.run("credentials", "migrate-shopify", "--all", "--app", "public-app")
	require.Equal(t, ExitOK, code)
	require.Equal(t, "no registered shopify platform is on a static token\n", out)
}

// TestMigrateShopifyResumes: a run that stopped after storing the pair
// (here: the exchange made through the Manager alone) is finished by the
// next run, which only edits; an exchange whose answer was lost leaves
// the platform as it was and the next run gets the same pair from
// Shopify's retry window.
func TestMigrateShopifyResumes(t *testing.T) {
	w := newMigrateWorld(t)
	ctx := context.Background()
	_, err := w.manager().ExchangeShopifyOffline(ctx, "shopify-acme", "public-app", w.srv.ShopURL("acme"), acmeStatic)
	require.NoError(t, err)
	_, err = w.manager().ExchangeShopifyOffline(ctx, "shopify-acme", "public-app", w.srv.ShopURL("acme"), acmeStatic)
	require.ErrorIs(t, err, credentials.ErrAlreadyStored, "a stored name is not exchanged again")
	p, _ := w.platform("shopify-acme")
	require.Equal(t, config.CredentialRef{Env: "ACME_TOKEN"}, p.Credentials, "stored, not yet edited")
	t.Setenv("ACME_TOKEN", "") // the static token is not needed to finish
	code, out, errOut := w.run("credentials", "migrate-shopify", "shopify-acme", "--app", "public-app")
	require.Equal(t, ExitOK, code, out+errOut)
	require.Contains(t, out, "shopify-acme: migrated (env:ACME_TOKEN -> stored:shopify-acme")
	require.Contains(t, out, "resumed")
	p, _ = w.platform("shopify-acme")
	require.Equal(t, config.CredentialRef{Stored: "shopify-acme"}, p.Credentials)
	require.EqualValues(t, 1, w.s.AuthStats().Shopify.ExchangeGrants)

	// The answer of the exchange is lost: nothing is stored, the platform
	// is unchanged and the static token no longer works.
	require.NoError(t, w.s.SetTokenFaults(sim.SurfaceShopify, sim.TokenFaults{DropAnswers: 1}))
	code, out, errOut = w.run("credentials", "migrate-shopify", "shopify-globex", "--app", "public-app")
	require.Equal(t, ExitFailure, code, out+errOut)
	require.Contains(t, out, `shopify-globex: failed: migrate "shopify-globex": post to `)
	require.Contains(t, out, "run the migration again (within 7 days")
	require.False(t, w.stored("shopify-globex"))
	p, _ = w.platform("shopify-globex")
	require.Equal(t, config.CredentialRef{Env: "GLOBEX_TOKEN"}, p.Credentials)
	require.Equal(t, http.StatusUnauthorized, w.shopStatus("globex", globexStatic), "Shopify migrated the token")

	code, out, errOut = w.run("credentials", "migrate-shopify", "shopify-globex", "--app", "public-app")
	require.Equal(t, ExitOK, code, out+errOut)
	require.Contains(t, out, "shopify-globex: migrated")
	src, err := w.manager().Source("shopify-globex")
	require.NoError(t, err)
	tok, err := src.Secret(ctx)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, w.shopStatus("globex", tok), "the retry's pair works")
	require.EqualValues(t, 3, w.s.AuthStats().Shopify.ExchangeGrants, "the lost exchange and its retry")
}

// TestMigrateShopifyRefusesAForeignStoredCredential: a stored credential
// already named like the platform that is not this migration's is not
// adopted.
func TestMigrateShopifyRefusesAForeignStoredCredential(t *testing.T) {
	w := newMigrateWorld(t)
	m := w.manager()
	_, err := m.PutToken(context.Background(), "shopify-acme", credentials.Token{Kind: credentials.KindShopify, App: "public-app",
		AccessToken: "SECRET-at", AccessExpiresAt: time.Now().Add(time.Hour),
		RefreshToken: "SECRET-rt", TokenURL: "https://elsewhere.myshopify.com/admin/oauth/access_token"})
	require.NoError(t, err)
	code, out, _ := w.run("credentials", "migrate-shopify", "shopify-acme", "--app", "public-app")
	require.Equal(t, ExitFailure, code)
	require.Contains(t, out, "shopify-acme: failed: platform shopify-acme: stored credential shopify-acme refreshes at another shop's token URL")
	p, _ := w.platform("shopify-acme")
	require.Equal(t, config.CredentialRef{Env: "ACME_TOKEN"}, p.Credentials)
	require.Equal(t, http.StatusOK, w.shopStatus("acme", acmeStatic))
}
