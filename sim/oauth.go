package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// The OAuth side of the simulator (shopify_oauth.go, amazon_oauth.go):
// registered apps, the codes, access tokens and refresh tokens the token
// endpoints issued, the faults those endpoints inject and what they
// counted. One authority serves every shop; it has its own lock, never
// held together with a shop's.
//
// Tokens issued here are stateful (a restarted simulator forgets them and
// the client must authorize again), unlike the shop tokens of Config and
// the stateless access tokens minted from them, which keep working across
// restarts as before.

// Token surfaces: the platform whose token endpoint and API a fault,
// revocation, TTL or counter applies to.
const (
	SurfaceShopify = "shopify"
	SurfaceAmazon  = "amazon"
)

// Documented lifetimes.
const (
	// shopifyAccessTTL: "expiring offline access tokens ... expire after
	// 60 minutes" (expires_in 3600).
	shopifyAccessTTL = time.Hour
	// shopifyRefreshTTL: a refresh token's "normal 90-day lifetime".
	shopifyRefreshTTL = 90 * 24 * time.Hour
	// shopifyRetryWindow: a previous refresh token can be retried "until it
	// starts using the replacement refresh token", at most 30 days from its
	// first use (changelog 2026-08-28).
	shopifyRetryWindow = 30 * 24 * time.Hour
	// shopifyMigrationRetry: a lost token-exchange migration can be retried
	// with the original non-expiring token for up to seven days.
	shopifyMigrationRetry = 7 * 24 * time.Hour
	// shopifyCodeTTL: Shopify documents no lifetime for the authorization
	// code; ten minutes is RFC 6749's recommended maximum.
	shopifyCodeTTL = 10 * time.Minute
	// amazonCodeTTL: "The spapi_oauth_code value expires after five minutes."
	amazonCodeTTL = 5 * time.Minute
)

// ShopifyApp is a Shopify app registered with the simulator (its Dev
// Dashboard entry): the client credentials, the scopes a merchant grants
// on install, where the install request goes and where the authorize
// endpoint may redirect.
type ShopifyApp struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// Scopes are the access scopes granted on install; empty grants what
	// the authorize request asks for.
	Scopes []string `json:"scopes,omitempty"`
	// AppURL receives the install request (ShopifyInstallURL).
	AppURL string `json:"app_url,omitempty"`
	// RedirectURIs are the allowed redirection URLs; empty allows any
	// absolute http(s) URL.
	RedirectURIs []string `json:"redirect_uris,omitempty"`
}

// AmazonApp is an SP-API application registered with the simulator: its
// application id (for the consent page), its LWA client credentials and
// its OAuth redirect URIs.
type AmazonApp struct {
	ApplicationID string   `json:"application_id"`
	ClientID      string   `json:"client_id"`
	ClientSecret  string   `json:"client_secret"`
	RedirectURIs  []string `json:"redirect_uris"`
	// Published apps authorize without version=beta; draft ones (the
	// default) need it, else the consent page shows MD1000.
	Published bool `json:"published,omitempty"`
}

// TokenFaults are the token endpoint's worst cases, each a count of the
// next token requests it applies to (decremented as they happen), checked
// in this order: RateLimited answers 429, Err5xx answers 503, and
// DropAnswers lets a request that succeeds issue its tokens (a refresh
// spends its refresh token) and then drops the connection without an
// answer: the lost refresh response.
type TokenFaults struct {
	RateLimited int `json:"rate_limited"`
	Err5xx      int `json:"err_5xx"`
	DropAnswers int `json:"drop_answers"`
}

// AuthStats counts what one surface's token endpoint and API did with the
// tokens it issued.
type AuthStats struct {
	TokenRequests       int64 `json:"token_requests"`
	AccessTokensIssued  int64 `json:"access_tokens_issued"`
	RefreshTokensIssued int64 `json:"refresh_tokens_issued"`
	CodeGrants          int64 `json:"code_grants"`
	RefreshGrants       int64 `json:"refresh_grants"`
	ExchangeGrants      int64 `json:"exchange_grants"`
	// RefreshRetries counts refreshes with a previous refresh token whose
	// replacement was never used (the answer was lost): they succeed.
	RefreshRetries int64 `json:"refresh_retries"`
	// GrantErrors counts 4xx answers of the token endpoint.
	GrantErrors int64 `json:"grant_errors"`
	// Injected faults.
	RateLimited int64 `json:"rate_limited"`
	Err5xx      int64 `json:"err_5xx"`
	Dropped     int64 `json:"dropped"`
	// Unauthorized counts API requests (all shops) answered 401 (Shopify)
	// or 403 (Amazon) for their token; UnauthorizedIssued those whose token
	// the token endpoint issued (expired, revoked, lapsed), and
	// UnauthorizedRefreshed those whose token a refresh grant issued: a
	// client that refreshes in time has none.
	Unauthorized          int64 `json:"unauthorized"`
	UnauthorizedIssued    int64 `json:"unauthorized_issued"`
	UnauthorizedRefreshed int64 `json:"unauthorized_refreshed"`
	// RefreshSpent counts, per refresh token (by TokenFingerprint), the
	// refresh requests that spent it successfully.
	RefreshSpent map[string]int64 `json:"refresh_spent"`
}

// OAuthStats are both surfaces' AuthStats.
type OAuthStats struct {
	Shopify AuthStats `json:"shopify"`
	Amazon  AuthStats `json:"amazon"`
}

// TokenFingerprint names a token in AuthStats without holding it: the
// first 16 hex digits of its SHA-256.
func TokenFingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// accessGrant is an issued access token.
type accessGrant struct {
	surface     string
	shop        string
	clientID    string // "" for tokens minted from a shop token
	scope       string
	expiry      int64 // µs; 0 never expires
	fromRefresh bool
	revoked     bool
	// migrated: a non-expiring token exchanged for an expiring pair; it no
	// longer opens the API but may be exchanged again (migration retry).
	migrated *migration
}

type migration struct {
	at      int64
	access  string
	refresh *refreshGrant
}

// refreshGrant is an issued refresh token and what became of it.
type refreshGrant struct {
	token    string
	surface  string
	shop     string
	clientID string
	scope    string
	expiry   int64 // µs; 0 never expires (LWA's)
	firstUse int64 // µs; 0 unused
	parent   *refreshGrant
	child    *refreshGrant // Shopify: the replacement issued when it was spent
	retired  bool          // Shopify: its replacement was used
	revoked  bool
}

// authCode is an authorization code not yet exchanged.
type authCode struct {
	surface     string
	shop        string
	clientID    string
	scope       string
	redirectURI string
	expiry      int64
}

type authority struct {
	mu      sync.Mutex
	key     []byte
	seq     uint64
	shopify map[string]*ShopifyApp // by client id
	amazon  map[string]*AmazonApp  // by application id
	codes   map[string]*authCode
	access  map[string]*accessGrant
	refresh map[string]*refreshGrant
	// offline remembers a shop's non-expiring token per app: authorizing
	// again returns the same one, as Shopify's offline tokens do.
	offline map[[2]string]string
	// staticOff marks shops whose Config token no longer opens the Shopify
	// surface (uninstalled or migrated); amazonOff those whose shop token
	// LWA no longer takes as a refresh token (the seller revoked it).
	staticOff     map[string]bool
	staticMigrate map[string]*migration
	amazonOff     map[string]bool
	faults        map[string]*TokenFaults
	stats         map[string]*AuthStats
	accessTTL     map[string]time.Duration
	refreshTTL    time.Duration // Shopify's
	// staticToken says whether token is shop's Config token.
	staticToken func(shop, token string) bool
}

func newAuthority(cfg Config) *authority {
	key := binary.BigEndian.AppendUint64([]byte("sim-oauth\x00"), uint64(cfg.Seed))
	a := &authority{
		key: key, shopify: map[string]*ShopifyApp{}, amazon: map[string]*AmazonApp{},
		codes: map[string]*authCode{}, access: map[string]*accessGrant{}, refresh: map[string]*refreshGrant{},
		offline: map[[2]string]string{}, staticOff: map[string]bool{}, staticMigrate: map[string]*migration{},
		amazonOff: map[string]bool{},
		faults:    map[string]*TokenFaults{SurfaceShopify: {}, SurfaceAmazon: {}},
		stats: map[string]*AuthStats{SurfaceShopify: {RefreshSpent: map[string]int64{}},
			SurfaceAmazon: {RefreshSpent: map[string]int64{}}},
		accessTTL:  map[string]time.Duration{SurfaceShopify: cfg.ShopifyAccessTTL, SurfaceAmazon: cfg.AmazonAccessTTL},
		refreshTTL: cfg.ShopifyRefreshTTL,
	}
	return a
}

// mint returns a fresh token: deterministic for a seed and the order of
// issue, unguessable without the seed. The lock is held.
func (a *authority) mint(prefix string) string {
	a.seq++
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(prefix))
	m.Write(binary.BigEndian.AppendUint64(nil, a.seq))
	return prefix + hex.EncodeToString(m.Sum(nil)[:20])
}

func checkSurface(surface string) error {
	if surface != SurfaceShopify && surface != SurfaceAmazon {
		return fmt.Errorf("unknown token surface %q (want %q or %q)", surface, SurfaceShopify, SurfaceAmazon)
	}
	return nil
}

// takeFault decides what the next token request of a surface meets
// before it is processed: 429, 503 or nothing. The lock is held.
func (a *authority) takeFault(surface string) (rateLimited, err5xx bool) {
	f, st := a.faults[surface], a.stats[surface]
	st.TokenRequests++
	switch {
	case f.RateLimited > 0:
		f.RateLimited--
		st.RateLimited++
		return true, false
	case f.Err5xx > 0:
		f.Err5xx--
		st.Err5xx++
		return false, true
	}
	return false, false
}

// takeDrop says whether a successful answer is to be dropped. The lock is held.
func (a *authority) takeDrop(surface string) bool {
	f := a.faults[surface]
	if f.DropAnswers > 0 {
		f.DropAnswers--
		a.stats[surface].Dropped++
		return true
	}
	return false
}

// serveToken runs what every token endpoint shares around its grant: the
// surface's scripted 429 or 5xx (answered by refuse in the platform's
// words), the grant under the authority's lock, the counted refusal, and
// the answer lost after the tokens are issued.
func (s *Simulator) serveToken(w http.ResponseWriter, r *http.Request, surface string, refuse func(w http.ResponseWriter, limited bool), grant func(p url.Values, now int64) (any, *oauthErr)) {
	p, perr := oauthParams(r)
	now := s.now()
	a := s.auth
	a.mu.Lock()
	limited, failed := a.takeFault(surface)
	if limited || failed {
		a.mu.Unlock()
		refuse(w, limited)
		return
	}
	var out any
	var e *oauthErr
	if perr != nil {
		e = &oauthErr{http.StatusBadRequest, "invalid_request", perr.Error()}
	} else {
		out, e = grant(p, now)
	}
	if e != nil {
		a.stats[surface].GrantErrors++
		a.mu.Unlock()
		writeOAuthError(w, e)
		return
	}
	drop := a.takeDrop(surface)
	a.mu.Unlock()
	if drop {
		abortConnection() // the tokens are issued; the answer is lost
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

// issueAccess records a new access token. The lock is held.
func (a *authority) issueAccess(surface, prefix, shop, clientID, scope string, expiry int64, fromRefresh bool) string {
	tok := a.mint(prefix)
	a.access[tok] = &accessGrant{surface: surface, shop: shop, clientID: clientID, scope: scope, expiry: expiry, fromRefresh: fromRefresh}
	a.stats[surface].AccessTokensIssued++
	return tok
}

// issueRefresh records a new refresh token. The lock is held.
func (a *authority) issueRefresh(surface, prefix, shop, clientID, scope string, expiry int64, parent *refreshGrant) *refreshGrant {
	g := &refreshGrant{token: a.mint(prefix), surface: surface, shop: shop, clientID: clientID, scope: scope, expiry: expiry, parent: parent}
	a.refresh[g.token] = g
	a.stats[surface].RefreshTokensIssued++
	return g
}

// spend counts a successful use of a refresh token. The lock is held.
func (a *authority) spend(surface, token string) {
	a.stats[surface].RefreshSpent[TokenFingerprint(token)]++
}

// apiCheck is the verdict on an API request's token.
type apiCheck struct {
	ok      bool
	expired bool // a known token past its expiry
	grant   *accessGrant
}

// checkAccess looks an issued access token up for shop at now. The lock is held.
func (a *authority) checkAccess(surface, shop, token string, now int64) apiCheck {
	g, ok := a.access[token]
	if !ok || g.surface != surface || g.shop != shop {
		return apiCheck{}
	}
	switch {
	case g.revoked || g.migrated != nil:
		return apiCheck{grant: g}
	case g.expiry != 0 && now >= g.expiry:
		return apiCheck{grant: g, expired: true}
	}
	return apiCheck{ok: true, grant: g}
}

// countUnauthorized counts an API request refused for its token. The lock is held.
func (a *authority) countUnauthorized(surface string, g *accessGrant) {
	st := a.stats[surface]
	st.Unauthorized++
	if g != nil {
		st.UnauthorizedIssued++
		if g.fromRefresh {
			st.UnauthorizedRefreshed++
		}
	}
}

// RegisterShopifyApp registers (or replaces) a Shopify app.
func (s *Simulator) RegisterShopifyApp(app ShopifyApp) error {
	if app.ClientID == "" || app.ClientSecret == "" {
		return errors.New("shopify app needs a client_id and a client_secret")
	}
	if app.AppURL != "" {
		if err := absoluteURL(app.AppURL); err != nil {
			return fmt.Errorf("shopify app %q: app_url: %w", app.ClientID, err)
		}
	}
	for _, u := range app.RedirectURIs {
		if err := absoluteURL(u); err != nil {
			return fmt.Errorf("shopify app %q: redirect URI: %w", app.ClientID, err)
		}
	}
	app.Scopes = append([]string(nil), app.Scopes...)
	app.RedirectURIs = append([]string(nil), app.RedirectURIs...)
	s.auth.mu.Lock()
	s.auth.shopify[app.ClientID] = &app
	s.auth.mu.Unlock()
	return nil
}

// RegisterAmazonApp registers (or replaces) an SP-API application.
func (s *Simulator) RegisterAmazonApp(app AmazonApp) error {
	if app.ApplicationID == "" || app.ClientID == "" || app.ClientSecret == "" || len(app.RedirectURIs) == 0 {
		return errors.New("amazon app needs an application_id, a client_id, a client_secret and at least one redirect URI")
	}
	for _, u := range app.RedirectURIs {
		if err := absoluteURL(u); err != nil {
			return fmt.Errorf("amazon app %q: redirect URI: %w", app.ApplicationID, err)
		}
	}
	app.RedirectURIs = append([]string(nil), app.RedirectURIs...)
	s.auth.mu.Lock()
	s.auth.amazon[app.ApplicationID] = &app
	s.auth.mu.Unlock()
	return nil
}

func absoluteURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an absolute http(s) URL", clip(raw))
	}
	if u.Fragment != "" {
		return fmt.Errorf("%q has a fragment", clip(raw))
	}
	return nil
}

// clip shortens untrusted text before it reaches an error or a page.
func clip(s string) string {
	const max = 120
	if len(s) > max {
		s = s[:max] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// SetTokenFaults replaces a surface's token endpoint faults.
func (s *Simulator) SetTokenFaults(surface string, f TokenFaults) error {
	if err := checkSurface(surface); err != nil {
		return err
	}
	if f.RateLimited < 0 || f.Err5xx < 0 || f.DropAnswers < 0 {
		return fmt.Errorf("token faults must not be negative, got %+v", f)
	}
	s.auth.mu.Lock()
	*s.auth.faults[surface] = f
	s.auth.mu.Unlock()
	return nil
}

// SetTokenTTL changes how long access tokens issued from now on live
// (0 keeps the current value); for Shopify also refresh tokens. Shopify's
// expires_in says the truth; Amazon's still says 3600 (the lapse the
// Amazon surface plays, Config.AmazonAccessTTL).
func (s *Simulator) SetTokenTTL(surface string, access, refresh time.Duration) error {
	if err := checkSurface(surface); err != nil {
		return err
	}
	if access < 0 || refresh < 0 || (access > 0 && access < time.Second) || (refresh > 0 && refresh < time.Second) {
		// expires_in counts whole seconds: less than one would state 0.
		return fmt.Errorf("token TTLs must be at least 1s (0 keeps the current one), got %s and %s", access, refresh)
	}
	if surface == SurfaceAmazon && refresh != 0 {
		return errors.New("LWA refresh tokens do not expire; set only the access TTL")
	}
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	if access > 0 {
		s.auth.accessTTL[surface] = access
	}
	if refresh > 0 {
		s.auth.refreshTTL = refresh
	}
	return nil
}

// ExpireAccessTokens makes every access token of a surface issued so far
// lapse now, mid-window, whatever its expiry said (Shopify's static shop
// tokens do not expire and stay valid).
func (s *Simulator) ExpireAccessTokens(surface string) error {
	if err := checkSurface(surface); err != nil {
		return err
	}
	now := s.now()
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	for _, g := range s.auth.access {
		if g.surface == surface && (g.expiry == 0 || g.expiry > now) {
			g.expiry = now
		}
	}
	if surface == SurfaceAmazon {
		s.amazonLapse.Store(now) // the stateless tokens, minted before a restart
	}
	return nil
}

// RevokeRefreshToken revokes one refresh token: the token endpoint then
// answers it with invalid_grant. A shop's Config token on the Amazon
// surface is a refresh token too.
func (s *Simulator) RevokeRefreshToken(surface, token string) error {
	if err := checkSurface(surface); err != nil {
		return err
	}
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	if g, ok := s.auth.refresh[token]; ok && g.surface == surface {
		g.revoked = true
		return nil
	}
	if surface == SurfaceAmazon {
		for _, sh := range s.shops {
			if len(sh.token) > 0 && subtle.ConstantTimeCompare(sh.token, []byte(token)) == 1 {
				s.auth.amazonOff[sh.name] = true
				return nil
			}
		}
	}
	return fmt.Errorf("no %s refresh token with fingerprint %s", surface, TokenFingerprint(token))
}

// RevokeShopifyInstall uninstalls an app from a shop: every access and
// refresh token the app holds for the shop stops working at once. An
// empty clientID uninstalls every app and also disables the shop's Config
// token on the Shopify surface.
func (s *Simulator) RevokeShopifyInstall(shop, clientID string) error {
	return s.revokeAll(SurfaceShopify, shop, clientID)
}

// RevokeAmazonAuthorization plays a seller removing an app's authorization:
// its refresh tokens answer invalid_grant and its access tokens 403. An
// empty clientID revokes every app, the shop's Config token included.
func (s *Simulator) RevokeAmazonAuthorization(shop, clientID string) error {
	return s.revokeAll(SurfaceAmazon, shop, clientID)
}

func (s *Simulator) revokeAll(surface, shop, clientID string) error {
	if _, ok := s.byName[shop]; !ok {
		return fmt.Errorf("unknown shop %q", clip(shop))
	}
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	for _, g := range s.auth.access {
		if g.surface == surface && g.shop == shop && (clientID == "" || g.clientID == clientID) {
			g.revoked = true
		}
	}
	for _, g := range s.auth.refresh {
		if g.surface == surface && g.shop == shop && (clientID == "" || g.clientID == clientID) {
			g.revoked = true
		}
	}
	for k := range s.auth.offline {
		if surface == SurfaceShopify && k[0] == shop && (clientID == "" || k[1] == clientID) {
			delete(s.auth.offline, k)
		}
	}
	if clientID == "" {
		if surface == SurfaceShopify {
			s.auth.staticOff[shop] = true
		} else {
			s.auth.amazonOff[shop] = true
		}
	}
	return nil
}

// AuthStats returns both surfaces' token counters.
func (s *Simulator) AuthStats() OAuthStats {
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	cp := func(st *AuthStats) AuthStats {
		c := *st
		c.RefreshSpent = make(map[string]int64, len(st.RefreshSpent))
		for k, v := range st.RefreshSpent {
			c.RefreshSpent[k] = v
		}
		return c
	}
	return OAuthStats{Shopify: cp(s.auth.stats[SurfaceShopify]), Amazon: cp(s.auth.stats[SurfaceAmazon])}
}

// RefreshSpent is how many refresh requests spent a refresh token
// successfully, on either surface.
func (s *Simulator) RefreshSpent(token string) int64 {
	fp := TokenFingerprint(token)
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	return s.auth.stats[SurfaceShopify].RefreshSpent[fp] + s.auth.stats[SurfaceAmazon].RefreshSpent[fp]
}

// sortedScopes joins scopes as Shopify's scope field does.
func sortedScopes(scopes []string) string {
	out := make([]string, 0, len(scopes))
	seen := map[string]bool{}
	for _, sc := range scopes {
		if sc = strings.TrimSpace(sc); sc != "" && !seen[sc] {
			seen[sc] = true
			out = append(out, sc)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
