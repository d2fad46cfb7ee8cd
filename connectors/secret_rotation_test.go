package connectors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/sim"
)

// Issue 26, item 1: a connector asks for its secret per request. A token
// file overwritten with a wrong token fails the next request (401, the
// permanent error naming the reference, the token redacted even though it
// was never the connector's at construction); fixed, the next request of
// the same connector succeeds, no rebuild. A request refused while the
// file changed meanwhile is sent once more with the new secret within the
// same call (so `dlq retry` after fixing the file works on a running
// worker). Before, every connector read its secret once in New.

// tokenGate answers with an empty page when a request carries the valid
// token and 401 otherwise, quoting the token it was sent (as platforms
// do); onRefused runs before a refusal is answered.
type tokenGate struct {
	mu        sync.Mutex
	valid     string
	requests  int
	onRefused func()
}

func (g *tokenGate) serve(presented func(*http.Request) string, page []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.requests++
		valid, hook := g.valid, g.onRefused
		g.onRefused = nil
		g.mu.Unlock()
		if got := presented(r); got != valid {
			if hook != nil {
				hook()
			}
			b, _ := json.Marshal(map[string]string{"errors": "[API] Invalid API key or access token: " + got})
			writeBody(w, http.StatusUnauthorized, b)
			return
		}
		writeBody(w, http.StatusOK, page)
	}
}

func (g *tokenGate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.requests
}

func (g *tokenGate) refuseThen(hook func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onRefused = hook
}

// rotationKind is one kind's side of the test: its platform, the file
// text for a token, where the server finds the token, an empty page.
type rotationKind struct {
	name      string
	platform  func(endpoint string, cred config.CredentialRef) config.Platform
	secret    func(token string) string
	presented func(*http.Request) string
	sent      func(token string) string // what presented finds for token; nil: token
	page      []byte
}

func (k rotationKind) valid(token string) string {
	if k.sent != nil {
		return k.sent(token)
	}
	return token
}

var rotationKinds = []rotationKind{
	{
		name: "shopify REST",
		platform: func(endpoint string, cred config.CredentialRef) config.Platform {
			return config.Platform{Name: "shopify-acme", Kind: "shopify", Endpoint: endpoint, PageSize: 2,
				Timeout: config.Duration(5 * time.Second), Credentials: cred, Options: map[string]any{"api": "rest"}}
		},
		secret:    func(token string) string { return token },
		presented: func(r *http.Request) string { return r.Header.Get("X-Shopify-Access-Token") },
		page:      []byte(`{"orders":[]}`),
	},
	{
		name: "woocommerce",
		platform: func(endpoint string, cred config.CredentialRef) config.Platform {
			return config.Platform{Name: "woo-acme", Kind: "woocommerce", Endpoint: endpoint, PageSize: 2,
				Timeout: config.Duration(5 * time.Second), Credentials: cred}
		},
		secret: func(token string) string {
			return fmt.Sprintf(`{"consumer_key":"ck_%s","consumer_secret":"cs_%s"}`, token, token)
		},
		presented: func(r *http.Request) string {
			user, pass, _ := r.BasicAuth()
			if strings.TrimPrefix(user, "ck_") != strings.TrimPrefix(pass, "cs_") {
				return "mismatched pair " + user
			}
			return user
		},
		sent: func(token string) string { return "ck_" + token },
		page: []byte(`[]`),
	},
	{
		name: "http",
		platform: func(endpoint string, cred config.CredentialRef) config.Platform {
			return config.Platform{Name: "api", Kind: "http", Endpoint: endpoint, PageSize: 2,
				Timeout: config.Duration(5 * time.Second), Credentials: cred, Options: map[string]any{
					"path": "/orders", "auth": map[string]any{"type": "bearer"},
					"window":       map[string]any{"from_param": "from", "to_param": "to"},
					"pagination":   map[string]any{"style": "cursor", "token_param": "cursor", "token_path": "next"},
					"records_path": "orders", "fields": genFields}}
		},
		secret:    func(token string) string { return token },
		presented: func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") },
		page:      []byte(`{"orders":[],"next":null}`),
	},
}

// writeTokenFile replaces the file's text; servers' hooks call it too,
// hence assert (safe off the test's goroutine).
func writeTokenFile(t *testing.T, path, text string) {
	t.Helper()
	assert.NoError(t, os.WriteFile(path, []byte(text+"\n"), 0o600))
}

func TestSecretFileChangesApplyWithoutRebuild(t *testing.T) {
	const good, wrong, wrong2 = "tok_valid_0123456789", "tok_wrong_quoted_in_errors", "tok_wrong_again_x"
	ctx := context.Background()
	req := connectors.PageRequest{From: genFrom, To: genTo, Page: 1}
	for _, k := range rotationKinds {
		t.Run(k.name, func(t *testing.T) {
			gate := &tokenGate{valid: k.valid(good)}
			ts := httptest.NewServer(gate.serve(k.presented, k.page))
			t.Cleanup(ts.Close)
			cred := secretFile(t, k.secret(good))
			conn, err := connectors.New(k.platform(ts.URL, cred))
			require.NoError(t, err)

			_, err = conn.ListOrders(ctx, req)
			require.NoError(t, err)

			// Overwritten with a wrong token: the next request sends it.
			writeTokenFile(t, cred.File, k.secret(wrong))
			before := gate.count()
			_, err = conn.ListOrders(ctx, req)
			require.Error(t, err)
			require.True(t, connectors.IsPermanent(err))
			var pe *connectors.PermanentError
			require.True(t, errors.As(err, &pe))
			require.Equal(t, http.StatusUnauthorized, pe.Status)
			require.Contains(t, err.Error(), "file:"+cred.File, "the error names the reference to fix")
			require.NotContains(t, err.Error(), wrong, "a token read after construction is redacted too")
			require.Contains(t, err.Error(), connectors.Redacted)
			require.Equal(t, 1, gate.count()-before, "a refusal with the file unchanged is not retried")

			// Fixed: the same connector uses it.
			writeTokenFile(t, cred.File, k.secret(good))
			_, err = conn.ListOrders(ctx, req)
			require.NoError(t, err)

			// Refused while the file is being fixed: the same call
			// retries once with the fixed token.
			writeTokenFile(t, cred.File, k.secret(wrong2))
			gate.refuseThen(func() { writeTokenFile(t, cred.File, k.secret(good)) })
			before = gate.count()
			_, err = conn.ListOrders(ctx, req)
			require.NoError(t, err)
			require.Equal(t, 2, gate.count()-before, "the refused request and its retry")
		})
	}
}

// A token file that disappears fails the next request with the reference
// named, never the old token (which the connector no longer holds).
func TestSecretFileGoneIsAPermanentErrorNamingIt(t *testing.T) {
	k := rotationKinds[0]
	gate := &tokenGate{valid: "tok_valid_0123456789"}
	ts := httptest.NewServer(gate.serve(k.presented, k.page))
	t.Cleanup(ts.Close)
	cred := secretFile(t, "tok_valid_0123456789")
	conn, err := connectors.New(k.platform(ts.URL, cred))
	require.NoError(t, err)
	require.NoError(t, os.Remove(cred.File))
	_, err = conn.ListOrders(context.Background(), connectors.PageRequest{From: genFrom, To: genTo, Page: 1})
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, cred.File)
	require.Equal(t, 0, gate.count(), "nothing is sent without a secret")
}

// hookProxy forwards to target and lets hook see each response before the
// client does (to change a secret's origin between a refusal and the
// connector's reaction to it).
func hookProxy(t *testing.T, target string, hook func(*http.Response)) string {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		hook(resp)
		return nil
	}
	ts := httptest.NewServer(rp)
	t.Cleanup(ts.Close)
	return ts.URL
}

// The same against the simulator's Shopify GraphQL surface and its own
// list API (kinds shopify and sim), which answer a wrong token 401 as
// documented.
func TestSecretFileChangesApplyOnTheSimulator(t *testing.T) {
	const wrong = "acme-token-wrong-and-longer"
	ctx := context.Background()
	clk := newFakeClock()
	_, ts := startSim(t, simConfig(11, clk))
	req := connectors.PageRequest{From: clk.Now().Add(-time.Hour), To: clk.Now(), Page: 1}
	for _, tc := range []struct{ name, kind string }{{"shopify GraphQL", "shopify"}, {"sim", "sim"}} {
		t.Run(tc.name, func(t *testing.T) {
			var refusals atomic.Int32
			var fix atomic.Pointer[func()]
			endpoint := hookProxy(t, ts.URL, func(resp *http.Response) {
				if resp.StatusCode == http.StatusUnauthorized {
					refusals.Add(1)
					if f := fix.Swap(nil); f != nil {
						(*f)()
					}
				}
			})
			cred := secretFile(t, "acme-token")
			conn, err := connectors.New(config.Platform{Name: "acme", Kind: tc.kind, Endpoint: endpoint + "/shops/acme",
				PageSize: 5, Timeout: config.Duration(5 * time.Second), Credentials: cred})
			require.NoError(t, err)
			_, err = conn.ListOrders(ctx, req)
			require.NoError(t, err)

			writeTokenFile(t, cred.File, wrong)
			_, err = conn.ListOrders(ctx, req)
			require.True(t, connectors.IsPermanent(err), "%v", err)
			require.ErrorContains(t, err, "401")
			require.Equal(t, int32(1), refusals.Load())

			writeTokenFile(t, cred.File, "acme-token")
			_, err = conn.ListOrders(ctx, req)
			require.NoError(t, err)

			writeTokenFile(t, cred.File, wrong)
			fixFile := func() { writeTokenFile(t, cred.File, "acme-token") }
			fix.Store(&fixFile)
			_, err = conn.ListOrders(ctx, req)
			require.NoError(t, err, "refused, re-read, retried within the call")
			require.Equal(t, int32(2), refusals.Load())
		})
	}
}

// Amazon with an {env} JSON secret: a changed refresh token is used at
// once (the cached access token minted from the old JSON is dropped), a
// wrong one fails the next request naming the variable, the fixed one
// works again on the same connector. Before, the cached access token hid
// every change for up to an hour.
func TestAmazonEnvSecretChangesApplyWithoutRebuild(t *testing.T) {
	const env = "ORDERSYNC_TEST_AMAZON_ROTATION"
	good := `{"client_id":"amzn1.application-oa2-client.sim","client_secret":"sim","refresh_token":"acme-token"}`
	bad := `{"client_id":"amzn1.application-oa2-client.sim","client_secret":"sim","refresh_token":"Atzr|revoked-refresh-token"}`
	t.Setenv(env, good)
	clk := newFakeClock()
	_, ts := settledAmazonSim(t, simConfig(11, clk), clk)
	base := ts.URL + "/shops/acme/amazon"
	ids := make([]any, len(sim.AmazonMarketplaceIDs))
	for i, id := range sim.AmazonMarketplaceIDs {
		ids[i] = id
	}
	conn, err := connectors.New(config.Platform{Name: "amazon-sim", Kind: "amazon", Endpoint: base, PageSize: 7,
		Timeout: config.Duration(5 * time.Second), Credentials: config.CredentialRef{Env: env},
		Options: map[string]any{"marketplace_ids": ids, "token_url": base + "/auth/o2/token"}})
	require.NoError(t, err)
	ctx := context.Background()
	req := connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now().Add(-3 * time.Minute), Page: 1}

	_, err = conn.ListOrders(ctx, req)
	require.NoError(t, err)

	t.Setenv(env, bad)
	_, err = conn.ListOrders(ctx, req)
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "env:"+env)
	require.ErrorContains(t, err, "invalid grant")
	require.NotContains(t, err.Error(), "revoked-refresh-token")

	t.Setenv(env, good)
	_, err = conn.ListOrders(ctx, req)
	require.NoError(t, err)
}

// A refresh refused while the JSON file is being fixed re-reads it and
// refreshes once more within the same call.
func TestAmazonRefusedRefreshRereadsTheSecret(t *testing.T) {
	good := `{"client_id":"amzn1.application-oa2-client.sim","client_secret":"sim","refresh_token":"acme-token"}`
	bad := `{"client_id":"amzn1.application-oa2-client.sim","client_secret":"sim","refresh_token":"Atzr|revoked-refresh-token"}`
	clk := newFakeClock()
	_, ts := settledAmazonSim(t, simConfig(11, clk), clk)
	cred := secretFile(t, bad)
	var rejected atomic.Int32
	endpoint := hookProxy(t, ts.URL, func(resp *http.Response) {
		if resp.StatusCode == http.StatusBadRequest && strings.HasSuffix(resp.Request.URL.Path, "/auth/o2/token") {
			rejected.Add(1)
			writeTokenFile(t, cred.File, good)
		}
	})
	base := endpoint + "/shops/acme/amazon"
	ids := make([]any, len(sim.AmazonMarketplaceIDs))
	for i, id := range sim.AmazonMarketplaceIDs {
		ids[i] = id
	}
	conn, err := connectors.New(config.Platform{Name: "amazon-sim", Kind: "amazon", Endpoint: base, PageSize: 7,
		Timeout: config.Duration(5 * time.Second), Credentials: cred,
		Options: map[string]any{"marketplace_ids": ids, "token_url": base + "/auth/o2/token"}})
	require.NoError(t, err)
	_, err = conn.ListOrders(context.Background(), connectors.PageRequest{From: clk.Now().Add(-25 * time.Hour), To: clk.Now().Add(-3 * time.Minute), Page: 1})
	require.NoError(t, err)
	require.Equal(t, int32(1), rejected.Load())
}

// storedSource stands in for the credential store's Source: a current
// access token, replaced by the next one when refused.
type storedSource struct {
	mu      sync.Mutex
	tokens  []string
	at      int
	refused []string
}

func (s *storedSource) Secret(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[s.at], nil
}

func (s *storedSource) Refused(_ context.Context, secret string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused = append(s.refused, secret)
	if secret == s.tokens[s.at] && s.at+1 < len(s.tokens) {
		s.at++
		return true, nil
	}
	return s.tokens[s.at] != secret, nil
}

func (s *storedSource) Recent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tokens[:s.at+1]...)
}

func (s *storedSource) String() string { return "stored:acme" }

func storedOption(t *testing.T, src credentials.Source) connectors.Option {
	return connectors.WithStoredCredentials(func(name string) (credentials.Source, error) {
		assert.Equal(t, "acme", name)
		return src, nil
	})
}

func TestStoredCredentialNeedsTheStore(t *testing.T) {
	for _, kind := range []string{"shopify", "amazon", "http", "woocommerce", "ebay", "sim"} {
		_, err := connectors.New(config.Platform{Name: "acme-" + kind, Kind: kind, Endpoint: "https://example.com",
			Credentials: config.CredentialRef{Stored: "acme"}})
		require.True(t, connectors.IsPermanent(err), "%s: %v", kind, err)
		require.ErrorContains(t, err, "acme-"+kind)
		require.ErrorContains(t, err, "stored:acme")
		require.ErrorContains(t, err, "ORDERSYNC_CREDENTIAL_KEYS")
	}
	_, err := connectors.New(config.Platform{Name: "acme", Kind: "shopify", Endpoint: "https://example.com",
		Credentials: config.CredentialRef{Stored: "acme"}},
		connectors.WithStoredCredentials(func(string) (credentials.Source, error) {
			return nil, errors.New("no stored credential named acme")
		}))
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "no stored credential named acme")
}

// A stored Shopify credential's secret is the access token itself, sent as
// X-Shopify-Access-Token; refused, the store's next token is tried once.
// Every token handed out is redacted from errors.
func TestStoredShopifyToken(t *testing.T) {
	src := &storedSource{tokens: []string{"shpat_stored_expired", "shpat_stored_current"}}
	k := rotationKinds[0]
	gate := &tokenGate{valid: "shpat_stored_current"}
	ts := httptest.NewServer(gate.serve(k.presented, k.page))
	t.Cleanup(ts.Close)
	conn, err := connectors.New(k.platform(ts.URL, config.CredentialRef{Stored: "acme"}), storedOption(t, src))
	require.NoError(t, err)
	req := connectors.PageRequest{From: genFrom, To: genTo, Page: 1}
	_, err = conn.ListOrders(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, []string{"shpat_stored_expired"}, src.refused)
	require.Equal(t, 2, gate.count())

	gate.mu.Lock()
	gate.valid = "revoked-everything"
	gate.mu.Unlock()
	_, err = conn.ListOrders(context.Background(), req)
	require.True(t, connectors.IsPermanent(err), "%v", err)
	require.ErrorContains(t, err, "stored:acme")
	require.NotContains(t, err.Error(), "shpat_stored_current")
}

// A stored Amazon credential yields the LWA access token (the store
// refreshes it): the connector never calls the token endpoint itself.
func TestStoredAmazonTokenSkipsTheConnectorsRefresh(t *testing.T) {
	f, ts := newAmazonFake(t)
	f.refuse["Atza|stored-expired"] = true
	src := &storedSource{tokens: []string{"Atza|stored-expired", "Atza|stored-current"}}
	conn, err := connectors.New(config.Platform{Name: "amazon-eu", Kind: "amazon", Endpoint: ts.URL, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: config.CredentialRef{Stored: "acme"},
		Options: map[string]any{"api_version": "v0", "marketplace_ids": []any{"A1PA6795UKMFR9", "A1F83G8C2ARO7P"}, "token_url": ts.URL + "/auth/o2/token"}},
		storedOption(t, src))
	require.NoError(t, err)
	orders := fetchWindow(t, conn, amazonWindow.From, amazonWindow.To)
	require.Len(t, orders, 3)
	require.Equal(t, int32(0), f.tokens.calls.Load(), "no LWA refresh by the connector")
	require.Equal(t, []string{"Atza|stored-expired"}, src.refused)
}

// failingSource is a stored Source whose Secret fails with err.
type failingSource struct{ err error }

// retryLater is an error a Source marks as worth retrying.
type retryLater struct{ error }

func (retryLater) Transient() bool { return true }

func (f failingSource) Secret(context.Context) (string, error)        { return "", f.err }
func (f failingSource) Refused(context.Context, string) (bool, error) { return false, nil }
func (f failingSource) Recent() []string                              { return nil }
func (f failingSource) String() string                                { return "stored:acme" }

// A Source error marked transient (a stored token whose refresh failed on
// the way: the refresh token is kept, and the next attempt spends it) is
// retried like a failed request; any other fails the attempt for good.
func TestStoredRefreshFailureIsTransientUnlessPermanent(t *testing.T) {
	k := rotationKinds[0]
	for _, tc := range []struct {
		err       error
		permanent bool
	}{
		{retryLater{errors.New(`refresh stored credential "acme": post to http://127.0.0.1/admin/oauth/access_token: Post: EOF`)}, false},
		{fmt.Errorf("refresh stored credential %q: %w", "acme", credentials.ErrReauthorize), true},
		{fmt.Errorf("stored credential %q: %w", "acme", credentials.ErrNotStored), true},
	} {
		conn, err := connectors.New(k.platform("https://example.com", config.CredentialRef{Stored: "acme"}), storedOption(t, failingSource{tc.err}))
		require.NoError(t, err)
		_, err = conn.ListOrders(context.Background(), connectors.PageRequest{From: genFrom, To: genTo, Page: 1})
		require.Error(t, err)
		require.Equal(t, tc.permanent, connectors.IsPermanent(err), "%v", err)
		require.ErrorContains(t, err, "stored:acme")
	}
}
