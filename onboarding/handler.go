package onboarding

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/textclip"
)

// Grant is what an authorization gave for one account: the token pair the
// worker refreshes from then on. Credentials store it encrypted.
type Grant struct {
	// Kind is the stored credential kind: "shopify" or "lwa".
	Kind string
	// App names the stored OAuth app (client id and secret) it was issued to.
	App string
	// TokenURL is where the refresh token is spent.
	TokenURL string
	// AccessToken and AccessTTL: LWA's and an expiring Shopify token's.
	AccessToken string
	AccessTTL   time.Duration
	// RefreshToken and RefreshTTL (0: the platform stated none).
	RefreshToken string
	RefreshTTL   time.Duration
	// Scope is what the merchant granted (Shopify), for status.
	Scope string
	// Subject is the shop domain or the selling partner id.
	Subject string
}

// Credentials is what the flows need of the credential store.
type Credentials interface {
	// App returns a stored OAuth app's client id and secret.
	App(ctx context.Context, name string) (clientID, clientSecret string, err error)
	// SaveGrant stores, creating or replacing, the token credential name.
	SaveGrant(ctx context.Context, name string, g Grant) error
}

// Config configures the flows; a nil Shopify or Amazon turns its routes off.
type Config struct {
	// PublicURL is where merchants' browsers reach serve (behind the
	// operator's TLS proxy), e.g. https://ordersync.example.com; the
	// redirect URIs registered with the platforms are built from it.
	PublicURL string
	Shopify   *ShopifyConfig
	Amazon    *AmazonConfig
	// ReuseRemoved lets an install take the name of a removed platform
	// (a merchant coming back); by default it is refused and logged.
	ReuseRemoved bool
	Logger       *slog.Logger
	// Now and HTTP are for tests.
	Now  func() time.Time
	HTTP *http.Client
}

// Handler serves /oauth/... for the configured flows.
type Handler struct {
	cfg    Config
	public *url.URL
	creds  Credentials
	svc    *accounts.Service
	states *states
	http   *resty.Client
	log    *slog.Logger
	mux    *http.ServeMux
}

// exchangeTimeout bounds one code exchange at a platform.
const exchangeTimeout = 30 * time.Second

// maxTokenAnswer bounds a token endpoint's answer (a few hundred bytes).
const maxTokenAnswer = 64 << 10

// New builds the handler; it checks the configuration and names what is wrong.
func New(cfg Config, creds Credentials, svc *accounts.Service) (*Handler, error) {
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("onboarding: public URL %q must be an http(s) URL without query (where merchants' browsers reach serve)", textclip.Clip(cfg.PublicURL, 200))
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return nil, fmt.Errorf("onboarding: public URL %s must be https: authorization codes cross it", u.Redacted())
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if creds == nil || svc == nil {
		return nil, errors.New("onboarding: a credential store and the accounts service are required")
	}
	if cfg.Shopify == nil && cfg.Amazon == nil {
		return nil, errors.New("onboarding: neither Shopify nor Amazon is configured")
	}
	if cfg.Shopify != nil {
		if err := cfg.Shopify.check(); err != nil {
			return nil, err
		}
	}
	if cfg.Amazon != nil {
		if err := cfg.Amazon.check(); err != nil {
			return nil, err
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: exchangeTimeout}
	}
	h := &Handler{cfg: cfg, public: u, creds: creds, svc: svc, states: newStates(cfg.Now),
		http: resty.NewWithClient(hc).SetRedirectPolicy(resty.NoRedirectPolicy()), log: cfg.Logger, mux: http.NewServeMux()}
	if h.log == nil {
		h.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Shopify != nil {
		h.mux.HandleFunc("GET /oauth/shopify/install", h.shopifyInstall)
		h.mux.HandleFunc("GET /oauth/shopify/callback", h.shopifyCallback)
	}
	if cfg.Amazon != nil {
		h.mux.HandleFunc("GET /oauth/amazon/start", h.amazonStart)
		h.mux.HandleFunc("GET /oauth/amazon/callback", h.amazonCallback)
	}
	return h, nil
}

// Routes lists the path prefixes the handler serves, for mounting.
const Prefix = "/oauth/"

// ServeHTTP serves the flows' routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer") // the callback URL carries the code
	h.mux.ServeHTTP(w, r)
}

// redirectURI is the callback registered with the platform for flow.
func (h *Handler) redirectURI(flow string) string {
	return h.public.String() + "/oauth/" + flow + "/callback"
}

// flowError is a refusal shown to the merchant: a status and a message
// that holds no secret and no unclipped input.
type flowError struct {
	status int
	msg    string
	err    error // logged, never shown
}

func (e *flowError) Error() string { return e.msg }

func refuse(status int, format string, args ...any) *flowError {
	return &flowError{status: status, msg: fmt.Sprintf(format, args...)}
}

// fail answers a refused or failed step.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, flow string, err error) {
	var fe *flowError
	if !errors.As(err, &fe) {
		fe = &flowError{status: http.StatusBadGateway, msg: "the authorization could not be completed; the operator has the details", err: err}
	}
	attrs := []any{"flow", flow, "path", r.URL.Path, "status", fe.status, "reason", fe.msg}
	if fe.err != nil {
		attrs = append(attrs, "error", fe.err.Error())
	}
	h.log.Warn("oauth flow refused or failed", attrs...)
	http.Error(w, fe.msg, fe.status)
}

// done answers a completed flow.
func (h *Handler) done(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, msg+"\n")
}

// stateCookie binds a state to the browser that started the flow, so a
// state leaked from one browser cannot finish the flow in another.
func stateCookie(flow string) string { return "ordersync_oauth_" + flow }

func (h *Handler) setState(w http.ResponseWriter, flow, state string) {
	http.SetCookie(w, &http.Cookie{Name: stateCookie(flow), Value: state, Path: "/oauth/" + flow + "/",
		MaxAge: int(StateTTL / time.Second), HttpOnly: true, Secure: h.public.Scheme == "https", SameSite: http.SameSiteLaxMode})
}

// takeState checks the state of a callback: issued here for flow, bound
// to this browser, unused and fresh. It is consumed either way.
func (h *Handler) takeState(w http.ResponseWriter, r *http.Request, flow string) (pending, error) {
	state := r.URL.Query().Get("state")
	if state == "" {
		return pending{}, refuse(http.StatusForbidden, "the callback has no state; start the authorization again")
	}
	p, ok := h.states.take(flow, state)
	http.SetCookie(w, &http.Cookie{Name: stateCookie(flow), Path: "/oauth/" + flow + "/", MaxAge: -1})
	c, err := r.Cookie(stateCookie(flow))
	if !ok || err != nil || c.Value != state {
		return pending{}, refuse(http.StatusForbidden, "the state is unknown, used, expired or from another browser; start the authorization again")
	}
	return p, nil
}

// connect stores the grant as credential name and registers the platform
// (or, when registered for the same endpoint, points it at the stored
// credential): the credential first, so the first fetch finds it.
func (h *Handler) connect(ctx context.Context, name string, g Grant, settings map[string]any) (string, error) {
	endpoint, _ := settings["endpoint"].(string)
	e, found, err := h.svc.Registry.Get(ctx, accounts.ClassPlatform, name)
	if err != nil {
		return "", err
	}
	if found && e.State != accounts.Removed {
		p, err := accounts.DecodePlatform(e)
		if err != nil {
			return "", err
		}
		if p.Endpoint != endpoint {
			return "", &flowError{status: http.StatusConflict, msg: fmt.Sprintf("platform %s is registered for another endpoint; the operator must resolve it", name),
				err: fmt.Errorf("platform %s: registered endpoint %s, authorization for %s", name, p.Endpoint, endpoint)}
		}
		if err := h.creds.SaveGrant(ctx, name, g); err != nil {
			return "", err
		}
		if p.Credentials == (config.CredentialRef{Stored: name}) {
			return "reconnected", nil
		}
		_, err = h.svc.EditPlatform(ctx, name, e.Revision, func(p *config.Platform) error {
			p.Credentials = config.CredentialRef{Stored: name}
			return nil
		})
		return "reconnected", err
	}
	if found && !h.cfg.ReuseRemoved {
		return "", &flowError{status: http.StatusConflict, msg: fmt.Sprintf("platform %s was removed by the operator; ask them to connect it again", name)}
	}
	p, err := accounts.BuildPlatform(name, settings)
	if err != nil {
		return "", &flowError{status: http.StatusInternalServerError, msg: "the operator's platform settings for new accounts are invalid; the operator has the details", err: err}
	}
	if err := h.creds.SaveGrant(ctx, name, g); err != nil {
		return "", err
	}
	if _, err := h.svc.AddPlatform(ctx, p, accounts.AddOptions{ReuseRemoved: h.cfg.ReuseRemoved}); err != nil {
		return "", err
	}
	return "connected", nil
}

// settings merges the operator's defaults for new accounts under what the
// flow decides (kind, endpoint, credential).
func settings(defaults map[string]any, decided map[string]any) map[string]any {
	out := make(map[string]any, len(defaults)+len(decided))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range decided {
		out[k] = v
	}
	return out
}

func loopbackHost(h string) bool {
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}
