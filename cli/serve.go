package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/httpapi"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/onboarding"
	"github.com/ordersync/ordersync/webhooks"
)

// serveShutdownGrace is how long serve lets requests in flight finish on
// SIGINT/SIGTERM: an add writes the registry, then starts the cursor, and
// cutting it between the two would leave a 502's fix to run by hand.
const serveShutdownGrace = 30 * time.Second

func newServeCommand(app *App) *cobra.Command {
	var listen, oauthFile string
	var allowRemote bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the accounts HTTP API (onboard and offboard platforms from a back office)",
		Long: `Serves the HTTP API a back office uses to add, edit, pause, resume, remove
and declaratively apply platforms: the same service, validation and errors
as ` + "`ordersync platform add|edit|pause|resume|remove|apply`" + `; and the
order operations of ` + "`ordersync orders get|search|refetch`" + ` under /v1/orders. The routes are
described in docs/openapi.yaml; errors are JSON naming the field.

Every request but GET /healthz needs Authorization: Bearer <token>, the token
from ORDERSYNC_API_TOKEN or the file ORDERSYNC_API_TOKEN_FILE names (at least
16 characters; serve refuses to start without one).

It listens on 127.0.0.1:8790 by default (--listen, ORDERSYNC_API_LISTEN). It
speaks plaintext HTTP, so the bearer token would cross the network in the
clear: a non-loopback address needs --allow-remote, and then TLS in front
(a reverse proxy or a service mesh). It reads and writes the registry in the
store (ORDERSYNC_STORE_DSN) and starts, signals and ends cursors on Temporal.
SIGINT or SIGTERM stops it after the requests in flight finish.

With --oauth-file (ORDERSYNC_OAUTH_FILE) it also onboards accounts by OAuth
under /oauth/: Shopify's app install (/oauth/shopify/install, /callback) and
Amazon's website authorization (/oauth/amazon/start, /callback). Those
routes are public (merchants' browsers call them) and checked by HMAC and a
single-use state instead; the tokens are stored sealed (ORDERSYNC_CREDENTIAL_KEYS)
and the account is registered. See docs/credentials.md.

Platform webhooks (the fast path, docs/webhooks.md) are taken at
/webhooks/shopify/<platform> and /webhooks/woocommerce/<platform>, with or
without --oauth-file: public routes checked by the platform's HMAC
signature with the account's webhook secret from the credential store
(ORDERSYNC_CREDENTIAL_KEYS), deduplicated, answered at once and turned into
a refetch of the order. GET /metrics (bearer token) counts them.`,
		Example: `  export ORDERSYNC_API_TOKEN=$(openssl rand -hex 32)
  ordersync serve
  curl -sS -H "Authorization: Bearer $ORDERSYNC_API_TOKEN" -H 'Content-Type: application/json' \
      -d '{"name":"shopify-acme","kind":"shopify","endpoint":"https://acme.myshopify.com",
           "credentials":{"env":"SHOPIFY_ACME_TOKEN"},"interval":"10m"}' \
      http://127.0.0.1:8790/v1/platforms
  curl -sS -H "Authorization: Bearer $ORDERSYNC_API_TOKEN" 'http://127.0.0.1:8790/v1/platforms?state=active&limit=50'
  ordersync serve --listen 0.0.0.0:8790 --allow-remote   # behind a TLS proxy
  ordersync serve --oauth-file oauth.yaml                 # plus Shopify install and Amazon authorization`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listen == "" {
				listen = app.Process.APIListen
			}
			token, err := app.Process.ReadAPIToken()
			if err != nil {
				return Usage(fmt.Errorf("serve: %w", err))
			}
			if err := checkListen(listen, allowRemote); err != nil {
				return Usage(err)
			}
			ctx, stop := SignalContext()
			defer stop()
			svc, c, done, err := app.accountService(ctx)
			if err != nil {
				return err
			}
			defer done()
			ops, closeOps, err := app.serveOrders(ctx, c)
			if err != nil {
				return err
			}
			defer closeOps()
			h, err := httpapi.New(svc, httpapi.Options{Token: token, Logger: app.Logger.With("component", "httpapi"), Orders: ops})
			if err != nil {
				return err
			}
			if oauthFile == "" {
				oauthFile = app.Process.OAuthFile
			}
			var ob http.Handler
			if oauthFile != "" {
				h, closeOB, err := app.onboardingHandler(ctx, oauthFile, svc)
				if err != nil {
					return err
				}
				defer closeOB()
				ob = h
			}
			wh, metricsHandler, closeWH, err := app.webhookIntake(ctx, ops)
			if err != nil {
				return err
			}
			defer closeWH()
			handler := serveRoutes(h, ob, wh, metricsHandler, token)
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("serve: listen on %s: %w", listen, err)
			}
			srv := &http.Server{
				Handler:           handler,
				ReadHeaderTimeout: 10 * time.Second,
				ReadTimeout:       time.Minute,
				IdleTimeout:       2 * time.Minute,
				MaxHeaderBytes:    64 << 10,
				// No WriteTimeout: an apply of thousands of platforms
				// starts a cursor each and may take minutes.
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			fmt.Fprintf(app.Out, "serving the accounts API on http://%s (routes: docs/openapi.yaml; Ctrl-C stops)\n", ln.Addr())
			select {
			case err := <-served:
				return fmt.Errorf("serve: %w", err)
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.Background(), serveShutdownGrace)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				return fmt.Errorf("serve: shut down: %w", err)
			}
			// Events accepted before the shutdown get their refetches started.
			if err := wh.Close(sctx); err != nil {
				app.Logger.Warn("serve: webhook intake", "error", err)
			}
			if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on (default $ORDERSYNC_API_LISTEN or 127.0.0.1:8790)")
	cmd.Flags().StringVar(&oauthFile, "oauth-file", "", "onboarding file: serve Shopify's app install and Amazon's website authorization under /oauth/ (default $ORDERSYNC_OAUTH_FILE; docs/credentials.md)")
	cmd.Flags().BoolVar(&allowRemote, "allow-remote", false, "allow a non-loopback --listen address (plaintext HTTP: put TLS in front)")
	return cmd
}

// serveRoutes is serve's mux: the accounts and orders API at / (bearer
// token), the OAuth onboarding routes when ob is set (public: merchants'
// browsers, checked by HMAC and state), the webhook intake (public:
// platforms, checked by HMAC, docs/webhooks.md) and the intake's metrics
// at GET /metrics (bearer token).
func serveRoutes(apiH, ob, wh, metricsH http.Handler, token string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", apiH)
	if ob != nil {
		mux.Handle(onboarding.Prefix, ob)
	}
	mux.Handle(webhooks.Prefix, wh)
	mux.Handle("GET /metrics", bearerOnly(token, metricsH))
	return mux
}

// checkListen refuses an address other machines can reach unless
// allowRemote: serve speaks plaintext HTTP, and the bearer token would
// cross the network readable by anyone on the path.
func checkListen(listen string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: want host:port, e.g. 127.0.0.1:8790", clipText(listen, 100))
	}
	if allowRemote || isLoopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("--listen %s listens on %s, reachable from other machines: serve speaks plaintext HTTP, so the bearer token "+
		"would cross the network in the clear. Listen on 127.0.0.1 and put TLS in front (a reverse proxy), "+
		"or pass --allow-remote once TLS terminates in front of it", clipText(listen, 100), clipText(shown, 100))
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// onboardingHandler builds the OAuth onboarding routes from the onboarding
// file, storing grants as stored credentials (keys required).
func (a *App) onboardingHandler(ctx context.Context, path string, svc *accounts.Service) (http.Handler, func(), error) {
	cfg, err := onboarding.LoadFile(path)
	if err != nil {
		return nil, nil, Usage(err)
	}
	m, done, err := a.credentialManager(ctx, true)
	if err != nil {
		return nil, nil, err
	}
	cfg.Logger = a.Logger.With("component", "onboarding")
	h, err := onboarding.New(cfg, grantStore{m}, svc)
	if err != nil {
		done()
		return nil, nil, Usage(err)
	}
	return h, done, nil
}

// grantStore stores what an OAuth flow obtained as a stored credential.
type grantStore struct{ m *credentials.Manager }

func (g grantStore) App(ctx context.Context, name string) (string, string, error) {
	return g.m.AppCredentials(ctx, name)
}

func (g grantStore) SaveGrant(ctx context.Context, name string, gr onboarding.Grant) error {
	now := time.Now()
	t := credentials.Token{Kind: credentials.Kind(gr.Kind), App: gr.App, AccessToken: gr.AccessToken, RefreshToken: gr.RefreshToken,
		ObtainedAt: now, Scope: gr.Scope, TokenURL: gr.TokenURL}
	if gr.AccessTTL > 0 {
		t.AccessExpiresAt = now.Add(gr.AccessTTL)
	}
	if gr.RefreshTTL > 0 {
		t.RefreshExpiresAt = now.Add(gr.RefreshTTL)
	}
	switch t.Kind {
	case credentials.KindShopify:
		t.Shop = gr.Subject
	case credentials.KindLWA:
		t.SellingPartnerID = gr.Subject
	}
	_, err := g.m.PutToken(ctx, name, t)
	return err
}
