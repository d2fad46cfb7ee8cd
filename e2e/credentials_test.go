package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/sim"
)

// Shopify's expiring offline tokens end to end on the production-shaped
// stack: a merchant installs the public app through `ordersync serve`
// (behind a proxy, as behind the operator's TLS), the install stores the
// token pair encrypted and registers the shop, and three `ordersync
// worker` processes fetch it while its access token expires every 10 s.
// Every refresh token is spent once (the one whose answer the simulator
// drops is spent again, as Shopify allows), no request is refused after a
// refresh, and nothing is missing. Then the merchant's grant is revoked:
// the refresh is refused, the credential says it needs reauthorization,
// and a second install mends it with no worker restarted.
func TestRotatingShopifyTokens(t *testing.T) {
	parallel(t, share{weight: heavyPostgres.weight, postgres: true, long: true})
	st := onboardingStack(t, postgresStack)
	const (
		clientID     = "e2e-public-app"
		clientSecret = "e2e-public-app-secret-0123456789"
		accessTTL    = 10 * time.Second
	)
	key, err := credentials.NewKeyEntry(time.Now())
	require.NoError(t, err)
	setenv(t, credentials.KeysEnv, key) // the workers, serve and the CLI share the key, never the store
	setenv(t, "ORDERSYNC_E2E_APP_SECRET", clientSecret)

	cfg := sim.DefaultConfig()
	cfg.Seed = 26
	cfg.Shops = []sim.ShopConfig{{Name: "base", Token: "base-token"}, {Name: "acme", Token: "acme-static-token"}}
	cfg.History = 2 * time.Minute
	cfg.HistoryOrders = 150
	cfg.LiveRate = 1
	cfg.Late = time.Second
	cfg.ShopifyAccessTTL = accessTTL
	cfg.ShopifyCost = sim.CostLimit{RestoreRate: 2000, MaxAvailable: 20000}
	s := startSystemOn(t, st, cfg, onboardingPlatforms)
	code, out, errOut := s.runCLI("platform", "apply")
	require.Zero(t, code, "apply: %s%s", out, errOut)

	code, out, errOut = s.runCLI("credentials", "app", "set", "shopify-public", "--client-id", clientID, "--client-secret-env", "ORDERSYNC_E2E_APP_SECRET")
	require.Zero(t, code, "app set: %s%s", out, errOut)
	require.NotContains(t, out+errOut, clientSecret)

	// The proxy is the public URL Shopify knows; serve listens behind it.
	var backend *url.URL
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httputil.NewSingleHostReverseProxy(backend).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	require.NoError(t, s.sim.RegisterShopifyApp(sim.ShopifyApp{ClientID: clientID, ClientSecret: clientSecret, Scopes: []string{"read_orders"},
		AppURL: proxy.URL + "/oauth/shopify/install", RedirectURIs: []string{proxy.URL + "/oauth/shopify/callback"}}))
	from := s.sim.Started().Add(-cfg.History - time.Minute).Format(time.RFC3339)
	oauthFile := filepath.Join(t.TempDir(), "oauth.yaml")
	require.NoError(t, os.WriteFile(oauthFile, fmt.Appendf(nil, `public_url: %s
shopify:
  app: shopify-public
  shop_url: "%s/shops/{handle}"
  settings:
    start: %q
    interval: 10s
    overlap: 3s
    settle: 2s
    timeout: 5s
    retries: 3
    retry_interval: 200ms
    breaker_failures: 2
    rate_limit: {rps: 50, burst: 20}
    page_size: 50
    options: {restore_rate: 2000, max_cost_available: 20000}
`, proxy.URL, s.simSrv.URL, from), 0o600))
	serve := startProc(t, "serve", append(st.env(s.srv.FrontendAddress(), s.storeDSN, s.platformsPath),
		"ORDERSYNC_API_TOKEN=e2e-accounts-api-token"), "serve", "--listen", "127.0.0.1:0", "--oauth-file", oauthFile)
	servingRE := regexp.MustCompile(`serving the accounts API on (http://\S+)`)
	eventually(t, 30*time.Second, "serve is listening", func() bool {
		m := servingRE.FindStringSubmatch(serve.tail(1 << 16))
		if m != nil {
			backend, _ = url.Parse(m[1])
		}
		return m != nil
	})

	install := func() string {
		t.Helper()
		jar, err := cookiejar.New(nil)
		require.NoError(t, err)
		merchant := &http.Client{Jar: jar, Timeout: 30 * time.Second}
		u, err := s.sim.ShopifyInstallURL(clientID, "acme")
		require.NoError(t, err)
		resp, err := merchant.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "install: %s\nserve log:\n%s", b, serve.tail(4000))
		return string(b)
	}
	installed := time.Now()
	page := install()
	require.Contains(t, page, "platform shopify-acme")
	eventually(t, 30*time.Second, "shopify-acme fetches within 30 s of its install", func() bool {
		st, err := tryStatus(s.client, "shopify-acme")
		return err == nil && st.Counts.SlicesCompleted > 0
	})
	t.Logf("shopify-acme fetched its first slice %s after the install", time.Since(installed).Round(100*time.Millisecond))

	// Rotation across three workers, with one refresh answer lost. The
	// workers follow the present meanwhile: light work.
	lighten(t, light)
	time.Sleep(5 * accessTTL)
	require.NoError(t, s.sim.SetTokenFaults(sim.SurfaceShopify, sim.TokenFaults{DropAnswers: 1}))
	time.Sleep(5 * accessTTL)
	stw := s.waitWatermark("shopify-acme", time.Now().Add(-15*time.Second), 2*time.Minute)
	require.Zero(t, stw.Counts.SlicesFailed, stw.LastError)
	r := s.verifyAsOf("shopify-acme", "acme", stw.Watermark, sim.AmazonItemID, time.Second)
	require.Greater(t, r.Checked, 100)
	require.Empty(t, r.Missing, "missing")
	require.Empty(t, r.Stale, "stale")

	stats := s.sim.AuthStats().Shopify
	t.Logf("shopify tokens: %d refreshes, %d retried after a lost answer, %d dropped, %d refused after a refresh, %d refused in all",
		stats.RefreshGrants, stats.RefreshRetries, stats.Dropped, stats.UnauthorizedRefreshed, stats.Unauthorized)
	require.GreaterOrEqual(t, stats.RefreshGrants, int64(8), "tokens of %s over %s were refreshed", accessTTL, 10*accessTTL)
	require.Equal(t, int64(1), stats.Dropped, "the lost answer happened")
	require.Equal(t, int64(1), stats.RefreshRetries, "it was recovered with the previous refresh token")
	twice := 0
	for fp, n := range stats.RefreshSpent {
		require.LessOrEqual(t, n, int64(2), "refresh token %s spent %d times", fp, n)
		if n == 2 {
			twice++
		}
	}
	require.Equal(t, 1, twice, "only the refresh token whose answer was lost is spent again")
	require.Zero(t, stats.UnauthorizedRefreshed, "no request was refused with a refreshed token")

	// Revoked: the refresh is refused, the credential needs reauthorization.
	require.NoError(t, s.sim.RevokeShopifyInstall("acme", clientID))
	eventually(t, 90*time.Second, "the revoked grant shows in the credential's status", func() bool {
		_, out, _ := s.runCLI("credentials", "show", "shopify-acme", "-o", "json")
		return strings.Contains(out, `"needs_reauthorization": true`)
	})
	eventually(t, 90*time.Second, "the cursor's breaker opens on the refused credential", func() bool {
		st, err := tryStatus(s.client, "shopify-acme")
		return err == nil && st.Paused
	})
	stRevoked, err := tryStatus(s.client, "shopify-acme")
	require.NoError(t, err)
	require.Contains(t, stRevoked.LastError, "re", "the error says what to do: %s", stRevoked.LastError)
	t.Logf("after the revocation: %s", stRevoked.LastError)
	eventually(t, 90*time.Second, "a worker alerts that the credential needs the merchant again", func() bool {
		for _, w := range s.procs {
			if strings.Contains(w.tail(1<<20), "kind=credential") {
				return true
			}
		}
		return false
	})

	// A re-install mends it; the operator resumes and retries, no restart.
	require.Contains(t, install(), "reconnected")
	code, out, errOut = s.runCLI("platform", "resume", "shopify-acme")
	require.Zero(t, code, "%s%s", out, errOut)
	code, out, errOut = s.runCLI("dlq", "retry", "--platform", "shopify-acme", "--all")
	require.Zero(t, code, "%s%s", out, errOut)
	// The watermark passes dead letters; their retries are waited for.
	eventually(t, 90*time.Second, "the dead letters of the revoked grant are fetched after the re-install", func() bool {
		entries, err := tryDeadLetters(s.client, "shopify-acme")
		return err == nil && len(entries) == 0
	})
	stw = s.waitWatermark("shopify-acme", time.Now().Add(-15*time.Second), 2*time.Minute)
	r = s.verifyAsOf("shopify-acme", "acme", stw.Watermark, sim.AmazonItemID, time.Second)
	require.Empty(t, r.Missing, "missing after the re-install")
	for _, w := range s.procs {
		select {
		case <-w.done:
			t.Fatalf("a worker exited:\n%s", w.tail(4000))
		default:
		}
		require.NotContains(t, w.tail(1<<20), "shpat_", "no token in a worker's log")
	}
	require.NotContains(t, serve.tail(1<<20), clientSecret)
}
