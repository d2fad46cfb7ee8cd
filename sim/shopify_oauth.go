package sim

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Shopify's OAuth, as https://shopify.dev documents it for apps that are
// not embedded (authorization code grant), with expiring offline access
// tokens (changelog 2025-12-10), their more resilient refreshes (changelog
// 2026-08-28) and the token-exchange migration of non-expiring tokens:
//
//	GET  /shops/{shop}/admin/oauth/authorize?client_id&scope&redirect_uri&state[&grant_options[]=per-user]
//	     the merchant approves at once: 302 to redirect_uri with code, hmac,
//	     host, shop ({shop}.myshopify.com), state, timestamp; the hmac is
//	     HMAC-SHA256 (hex) of the other parameters sorted by name and
//	     joined as k=v&k=v, keyed with the app's client secret
//	     (ShopifyQueryHMAC). grant_options[] is accepted and ignored: every
//	     token is an offline token.
//	POST /shops/{shop}/admin/oauth/access_token   JSON, form or query parameters
//	     grant_type absent (authorization code): client_id, client_secret,
//	       code[, expiring=1] -> {"access_token","scope"} (non-expiring; the
//	       same token every time) or with expiring=1 {"access_token","scope",
//	       "expires_in","refresh_token","refresh_token_expires_in"}
//	     grant_type=refresh_token: client_id, client_secret, refresh_token
//	       -> a new access token and a new refresh token
//	     grant_type=urn:ietf:params:oauth:grant-type:token-exchange:
//	       client_id, client_secret, subject_token (a non-expiring offline
//	       token), subject_token_type and requested_token_type
//	       urn:shopify:params:oauth:token-type:offline-access-token,
//	       expiring=1 -> an expiring pair; the old token stops opening the API
//	     errors: 400 {"error","error_description"} (invalid_request for a
//	     code not found or used, invalid_grant for a refresh token that is
//	     unknown, expired, revoked or retired, invalid_subject_token,
//	     unsupported_grant_type); 401 invalid_client for an unknown client or
//	     a wrong client secret (RFC 6749 §5.2: Shopify documents no body)
//	GET  /shops/{shop}/admin/oauth/access_scopes.json  {"access_scopes":[{"handle"}]}
//	GET  /shops/{shop}/admin/api/{version}/shop.json    {"shop":{"name","myshopify_domain","currency"}}
//
// Rotation: a refresh spends the refresh token R and returns (A', R').
// R stays usable until R' is used (it then answers invalid_grant), for at
// most 30 days after its first use; a retry with R while R' is unused
// returns R' again with a fresh access token, so a client that lost the
// answer recovers. Access tokens already issued stay valid until they
// expire. Every Admin API request (GraphQL and REST) with an expired,
// revoked or unknown token answers 401
// {"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}.

const (
	shopifyExchangeGrant  = "urn:ietf:params:oauth:grant-type:token-exchange"
	shopifyOfflineType    = "urn:shopify:params:oauth:token-type:offline-access-token"
	shopifyAccessPrefix   = "shpat_"
	shopifyRefreshPrefix  = "shprt_"
	shopifyUnauthorized   = "[API] Invalid API key or access token (unrecognized login or wrong password)"
	shopifyCodeNotFound   = "The authorization code was not found or was already used"
	shopifyInvalidClient  = "Client authentication failed: unknown client_id or wrong client_secret"
	shopifyInvalidRefresh = "The refresh token is invalid, expired, revoked or was replaced"
)

// ShopifyQueryHMAC is the hmac Shopify puts on the query strings it sends
// to an app (install request, authorize redirect): HMAC-SHA256 in hex of
// every parameter but hmac (and the legacy signature), sorted by name,
// joined as name=value with &, keyed with the client secret.
func ShopifyQueryHMAC(q url.Values, secret string) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "hmac" && k != "signature" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v := q[k]
		val := strings.Join(v, ",")
		if len(v) > 1 {
			b, _ := json.Marshal(v) // array parameters are sent as ["a", "b"]
			val = string(b)
		}
		parts = append(parts, k+"="+val)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strings.Join(parts, "&")))
	return hex.EncodeToString(m.Sum(nil))
}

// shopifyDomain is the shop parameter Shopify sends.
func shopifyDomain(shop string) string { return shop + ".myshopify.com" }

// shopifyHost is the base64 host parameter (admin.shopify.com/store/<shop>).
func shopifyHost(shop string) string {
	return base64.RawStdEncoding.EncodeToString([]byte("admin.shopify.com/store/" + shop))
}

// ShopifyInstallURL is the install request Shopify sends to an app when a
// merchant installs it: the app's AppURL with hmac, host, shop and
// timestamp, signed with the app's client secret.
func (s *Simulator) ShopifyInstallURL(clientID, shop string) (string, error) {
	if _, ok := s.byName[shop]; !ok {
		return "", fmt.Errorf("unknown shop %q", clip(shop))
	}
	s.auth.mu.Lock()
	app, ok := s.auth.shopify[clientID]
	s.auth.mu.Unlock()
	switch {
	case !ok:
		return "", fmt.Errorf("no shopify app with client_id %q", clip(clientID))
	case app.AppURL == "":
		return "", fmt.Errorf("shopify app %q has no app_url", clip(clientID))
	}
	q := url.Values{"shop": {shopifyDomain(shop)}, "host": {shopifyHost(shop)},
		"timestamp": {strconv.FormatInt(s.Now().Unix(), 10)}}
	q.Set("hmac", ShopifyQueryHMAC(q, app.ClientSecret))
	sep := "?"
	if strings.Contains(app.AppURL, "?") {
		sep = "&"
	}
	return app.AppURL + sep + q.Encode(), nil
}

// writeOAuthPage answers a browser-facing OAuth step that fails with a page.
func writeOAuthPage(w http.ResponseWriter, status int, title, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!DOCTYPE html><html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p></body></html>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}

// handleShopifyAuthorize serves the authorize endpoint as the merchant
// clicking "install": the app is installed with its scopes and the browser
// is redirected to the app with a code.
func (s *Simulator) handleShopifyAuthorize(w http.ResponseWriter, r *http.Request) {
	shop := r.PathValue("shop")
	if _, ok := s.byName[shop]; !ok {
		writeOAuthPage(w, http.StatusNotFound, "Not Found", fmt.Sprintf("There is no store %q.", clip(shop)))
		return
	}
	q := r.URL.Query()
	s.auth.mu.Lock()
	app, ok := s.auth.shopify[q.Get("client_id")]
	s.auth.mu.Unlock()
	if !ok {
		writeOAuthPage(w, http.StatusBadRequest, "Oauth error invalid_request", "Could not find Shopify API application with api_key "+clip(q.Get("client_id")))
		return
	}
	redirect := q.Get("redirect_uri")
	if err := absoluteURL(redirect); err != nil || (len(app.RedirectURIs) > 0 && !contains(app.RedirectURIs, redirect)) {
		writeOAuthPage(w, http.StatusBadRequest, "Oauth error invalid_request", "The redirect_uri is not whitelisted")
		return
	}
	scope := sortedScopes(app.Scopes)
	if scope == "" {
		scope = sortedScopes(strings.Split(q.Get("scope"), ","))
	}
	now := s.now()
	s.auth.mu.Lock()
	code := strings.TrimPrefix(s.auth.mint("code_"), "code_")[:32]
	s.auth.codes[code] = &authCode{surface: SurfaceShopify, shop: shop, clientID: app.ClientID, scope: scope,
		redirectURI: redirect, expiry: now + shopifyCodeTTL.Microseconds()}
	s.auth.mu.Unlock()
	back := url.Values{"code": {code}, "host": {shopifyHost(shop)}, "shop": {shopifyDomain(shop)},
		"state": {q.Get("state")}, "timestamp": {strconv.FormatInt(now/1e6, 10)}}
	back.Set("hmac", ShopifyQueryHMAC(back, app.ClientSecret))
	u, _ := url.Parse(redirect)
	merged := u.Query()
	for k, v := range back {
		merged[k] = v
	}
	u.RawQuery = merged.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// oauthParams reads a token request's parameters from a JSON body, a form
// body or the query string, as Shopify's endpoint and LWA's take them.
func oauthParams(r *http.Request) (url.Values, error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt == "application/json" {
		var m map[string]any
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&m); err != nil {
			return nil, fmt.Errorf("the body is not a JSON object")
		}
		v := r.URL.Query()
		for k, x := range m {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			case float64:
				v.Set(k, strconv.FormatFloat(x, 'f', -1, 64))
			case bool:
				v.Set(k, strconv.FormatBool(x))
			}
		}
		return v, nil
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return nil, fmt.Errorf("the body is not a form")
	}
	return r.Form, nil
}

type oauthErr struct {
	status int
	code   string
	desc   string
}

func writeOAuthError(w http.ResponseWriter, e *oauthErr) {
	w.Header().Set("Cache-Control", "no-store")
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="oauth"`)
	}
	writeJSON(w, e.status, lwaError{Error: e.code, ErrorDescription: e.desc})
}

// shopifyTokens is the token endpoint's answer.
type shopifyTokens struct {
	AccessToken           string `json:"access_token"`
	Scope                 string `json:"scope"`
	ExpiresIn             int64  `json:"expires_in,omitempty"`
	RefreshToken          string `json:"refresh_token,omitempty"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in,omitempty"`
}

// handleShopifyToken serves POST /shops/{shop}/admin/oauth/access_token.
func (s *Simulator) handleShopifyToken(w http.ResponseWriter, r *http.Request) {
	shop := r.PathValue("shop")
	if _, ok := s.byName[shop]; !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"errors": "Not Found"})
		return
	}
	s.serveToken(w, r, SurfaceShopify, func(w http.ResponseWriter, limited bool) {
		if limited {
			w.Header().Set("Retry-After", "2")
			writeJSON(w, http.StatusTooManyRequests, map[string]string{"errors": "Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service."})
		} else {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"errors": "Service Unavailable"})
		}
	}, func(p url.Values, now int64) (any, *oauthErr) {
		return s.auth.shopifyGrant(shop, p, now)
	})
}

// shopifyGrant runs one token request. The lock is held.
func (a *authority) shopifyGrant(shop string, p url.Values, now int64) (shopifyTokens, *oauthErr) {
	app, ok := a.shopify[p.Get("client_id")]
	if !ok || subtle.ConstantTimeCompare([]byte(p.Get("client_secret")), []byte(app.ClientSecret)) != 1 {
		return shopifyTokens{}, &oauthErr{http.StatusUnauthorized, "invalid_client", shopifyInvalidClient}
	}
	st := a.stats[SurfaceShopify]
	switch p.Get("grant_type") {
	case "", "authorization_code":
		c, ok := a.codes[p.Get("code")]
		if !ok || c.surface != SurfaceShopify || c.shop != shop || c.clientID != app.ClientID || now >= c.expiry {
			return shopifyTokens{}, &oauthErr{http.StatusBadRequest, "invalid_request", shopifyCodeNotFound}
		}
		delete(a.codes, p.Get("code"))
		st.CodeGrants++
		if p.Get("expiring") == "1" {
			return a.shopifyPair(shop, app.ClientID, c.scope, now, nil, false), nil
		}
		key := [2]string{shop, app.ClientID}
		if tok, ok := a.offline[key]; ok {
			if g := a.access[tok]; g != nil && !g.revoked && g.migrated == nil {
				g.scope = c.scope
				return shopifyTokens{AccessToken: tok, Scope: c.scope}, nil
			}
		}
		tok := a.issueAccess(SurfaceShopify, shopifyAccessPrefix, shop, app.ClientID, c.scope, 0, false)
		a.offline[key] = tok
		return shopifyTokens{AccessToken: tok, Scope: c.scope}, nil

	case "refresh_token":
		g, ok := a.refresh[p.Get("refresh_token")]
		if !ok || g.surface != SurfaceShopify || g.shop != shop || g.clientID != app.ClientID ||
			g.revoked || g.retired || now >= g.expiry ||
			(g.child != nil && now-g.firstUse > shopifyRetryWindow.Microseconds()) {
			return shopifyTokens{}, &oauthErr{http.StatusBadRequest, "invalid_grant", shopifyInvalidRefresh}
		}
		a.spend(SurfaceShopify, g.token)
		st.RefreshGrants++
		if g.parent != nil {
			g.parent.retired = true // the app began using the replacement
		}
		if g.child != nil {
			// A retry: the earlier answer was lost or not stored. The
			// replacement is handed out again with a fresh access token.
			st.RefreshRetries++
			acc := a.issueAccess(SurfaceShopify, shopifyAccessPrefix, shop, app.ClientID, g.scope,
				now+a.accessTTL[SurfaceShopify].Microseconds(), true)
			return shopifyTokens{AccessToken: acc, Scope: g.scope, ExpiresIn: int64(a.accessTTL[SurfaceShopify].Seconds()),
				RefreshToken: g.child.token, RefreshTokenExpiresIn: (g.child.expiry - now) / 1e6}, nil
		}
		g.firstUse = now
		out := a.shopifyPair(shop, app.ClientID, g.scope, now, g, true)
		g.child = a.refresh[out.RefreshToken]
		return out, nil

	case shopifyExchangeGrant:
		if p.Get("subject_token_type") != shopifyOfflineType || p.Get("requested_token_type") != shopifyOfflineType {
			return shopifyTokens{}, &oauthErr{http.StatusBadRequest, "invalid_request",
				"subject_token_type and requested_token_type must be " + shopifyOfflineType}
		}
		return a.shopifyMigrate(shop, app, p, now)

	default:
		return shopifyTokens{}, &oauthErr{http.StatusBadRequest, "unsupported_grant_type", "grant_type " + strconv.Quote(clip(p.Get("grant_type"))) + " is not supported"}
	}
}

// shopifyPair issues an expiring access token and its refresh token. The lock is held.
func (a *authority) shopifyPair(shop, clientID, scope string, now int64, parent *refreshGrant, fromRefresh bool) shopifyTokens {
	ttl, rttl := a.accessTTL[SurfaceShopify], a.refreshTTL
	acc := a.issueAccess(SurfaceShopify, shopifyAccessPrefix, shop, clientID, scope, now+ttl.Microseconds(), fromRefresh)
	ref := a.issueRefresh(SurfaceShopify, shopifyRefreshPrefix, shop, clientID, scope, now+rttl.Microseconds(), parent)
	return shopifyTokens{AccessToken: acc, Scope: scope, ExpiresIn: int64(ttl.Seconds()),
		RefreshToken: ref.token, RefreshTokenExpiresIn: int64(rttl.Seconds())}
}

// shopifyMigrate exchanges a non-expiring offline token (one this
// endpoint issued, or the shop's Config token) for an expiring pair. The
// lock is held; the caller holds no shop lock, so the Config token is
// read through the simulator the authority was built for.
func (a *authority) shopifyMigrate(shop string, app *ShopifyApp, p url.Values, now int64) (shopifyTokens, *oauthErr) {
	subject := p.Get("subject_token")
	bad := &oauthErr{http.StatusBadRequest, "invalid_subject_token", "subject_token is not a non-expiring offline access token of this store and app"}
	var mig **migration
	var scope string
	if g, ok := a.access[subject]; ok {
		if g.surface != SurfaceShopify || g.shop != shop || g.clientID != app.ClientID || g.revoked || g.expiry != 0 {
			return shopifyTokens{}, bad
		}
		mig, scope = &g.migrated, g.scope
	} else if a.staticToken != nil && !a.staticOff[shop] && a.staticToken(shop, subject) {
		m := a.staticMigrate[shop]
		mig, scope = &m, sortedScopes(app.Scopes)
		defer func() { a.staticMigrate[shop] = m }()
	} else {
		return shopifyTokens{}, bad
	}
	if p.Get("expiring") != "1" {
		if *mig != nil {
			return shopifyTokens{}, bad
		}
		return shopifyTokens{AccessToken: subject, Scope: scope}, nil // nothing to migrate to
	}
	ttl := a.accessTTL[SurfaceShopify]
	if m := *mig; m != nil {
		// A retry of a migration whose answer was lost: the same pair,
		// the access token's expiry extended, for seven days and until the
		// pair is refreshed.
		acc := a.access[m.access]
		if now-m.at > shopifyMigrationRetry.Microseconds() || m.refresh.firstUse != 0 || m.refresh.revoked || acc == nil || acc.revoked {
			return shopifyTokens{}, bad
		}
		acc.expiry = now + ttl.Microseconds()
		a.stats[SurfaceShopify].ExchangeGrants++
		return shopifyTokens{AccessToken: m.access, Scope: acc.scope, ExpiresIn: int64(ttl.Seconds()),
			RefreshToken: m.refresh.token, RefreshTokenExpiresIn: (m.refresh.expiry - now) / 1e6}, nil
	}
	out := a.shopifyPair(shop, app.ClientID, scope, now, nil, false)
	*mig = &migration{at: now, access: out.AccessToken, refresh: a.refresh[out.RefreshToken]}
	a.stats[SurfaceShopify].ExchangeGrants++
	return out, nil
}

// shopifyAuth checks an Admin API request's X-Shopify-Access-Token: the
// shop's Config token (unless uninstalled or migrated) or a token the
// token endpoint issued for the shop. A refusal is counted in the
// authority's stats; the caller counts it in the shop's.
func (s *Simulator) shopifyAuth(sh *shop, token string, now int64) (bool, string) {
	a := s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(sh.token) > 0 && subtle.ConstantTimeCompare([]byte(token), sh.token) == 1 {
		if !a.staticOff[sh.name] && a.staticMigrate[sh.name] == nil {
			return true, "read_orders" // a custom app's token, made for ordersync
		}
		a.countUnauthorized(SurfaceShopify, nil)
		return false, ""
	}
	c := a.checkAccess(SurfaceShopify, sh.name, token, now)
	if c.ok {
		return true, c.grant.scope
	}
	a.countUnauthorized(SurfaceShopify, c.grant)
	return false, ""
}

// handleShopifyScopes serves GET /shops/{shop}/admin/oauth/access_scopes.json.
func (s *Simulator) handleShopifyScopes(w http.ResponseWriter, r *http.Request) {
	sh, ok := s.shopifyREST(w, r)
	if !ok {
		return
	}
	_, scope := s.shopifyAuth(sh, r.Header.Get("X-Shopify-Access-Token"), s.now())
	type handle struct {
		Handle string `json:"handle"`
	}
	out := []handle{}
	for _, h := range strings.Split(scope, ",") {
		if h != "" {
			out = append(out, handle{h})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_scopes": out})
}

// handleShopifyShop serves GET /shops/{shop}/admin/api/{version}/shop.json,
// the smallest REST Admin API call: what a client checks a token with.
func (s *Simulator) handleShopifyShop(w http.ResponseWriter, r *http.Request) {
	sh, ok := s.shopifyREST(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"shop": map[string]string{
		"name": sh.name, "myshopify_domain": shopifyDomain(sh.name), "currency": sh.currency}})
}

// shopifyREST runs a REST Admin API request's route and token checks.
func (s *Simulator) shopifyREST(w http.ResponseWriter, r *http.Request) (*shop, bool) {
	sh, ok := s.byName[r.PathValue("shop")]
	if v := r.PathValue("version"); !ok || (v != "" && !shopifyVersionRE.MatchString(v)) {
		writeJSON(w, http.StatusNotFound, map[string]string{"errors": "Not Found"})
		return nil, false
	}
	now := s.now()
	authed, _ := s.shopifyAuth(sh, r.Header.Get("X-Shopify-Access-Token"), now)
	sh.mu.Lock()
	sh.stats.Requests++
	if !authed {
		sh.stats.Unauthorized++
	}
	sh.mu.Unlock()
	if !authed {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"errors": shopifyUnauthorized})
		return nil, false
	}
	return sh, true
}
