package sim

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// SP-API's website authorization workflow and Login with Amazon's token
// endpoint, as developer-docs.amazon.com documents them:
//
//	GET  /shops/{shop}/amazon/apps/authorize/consent?application_id&state[&version=beta][&redirect_uri]
//	     Seller Central's consent page, the seller {shop} signed in and
//	     approving at once: 302 to the redirect URI (the given one, which
//	     must be registered, or the app's first) with state,
//	     selling_partner_id and spapi_oauth_code (valid five minutes, once).
//	     Refusals are pages with Amazon's codes: MD1000 (a draft app
//	     without version=beta), MD5101 (redirect URI not registered),
//	     MD5110 (redirect URI with a fragment).
//	POST /shops/{shop}/amazon/auth/o2/token   form (or JSON)
//	     grant_type=authorization_code&code&redirect_uri&client_id&client_secret
//	       -> {"access_token":"Atza|…","refresh_token":"Atzr|…","token_type":"bearer","expires_in":3600}
//	     grant_type=refresh_token&refresh_token&client_id&client_secret
//	       -> {"access_token","refresh_token" (the same: LWA's do not rotate),"token_type","expires_in"}
//	       The shop's Config token is a refresh token of any client.
//	     400 {"error":"invalid_grant","error_description":"The request has an
//	     invalid grant parameter : refresh_token"} (or : code) for an unknown,
//	     used, expired or revoked grant; 401 invalid_client; 400
//	     unsupported_grant_type.
//
// SP-API answers a request without a usable access token 403
// {"errors":[{"code":"Unauthorized","message":"Access to requested resource is denied.","details":…}]}
// with details "Access token is missing in the request header.", "The
// access token you provided has expired." or "The access token you
// provided is revoked, malformed or invalid.".

const (
	amazonRefreshPrefix   = "Atzr|"
	lwaInvalidRefresh     = "The request has an invalid grant parameter : refresh_token"
	lwaInvalidCode        = "The request has an invalid grant parameter : code"
	lwaInvalidClient      = "Client authentication failed"
	amazonMissingToken    = "Access token is missing in the request header."
	amazonExpiredToken    = "The access token you provided has expired."
	amazonInvalidToken    = "The access token you provided is revoked, malformed or invalid."
	amazonDeniedMessage   = "Access to requested resource is denied."
	amazonUnauthorizedErr = "Unauthorized"
)

// SellingPartnerID is the selling_partner_id the consent page reports
// for a shop (a merchant token: A and 13 capitals or digits).
func (s *Simulator) SellingPartnerID(shop string) string {
	return fmt.Sprintf("A%013X", s.hashOf(shop))[:14]
}

func (s *Simulator) hashOf(shop string) uint64 {
	if sh, ok := s.byName[shop]; ok {
		return sh.hash
	}
	return hashString(shop)
}

// handleAmazonConsent serves the consent page.
func (s *Simulator) handleAmazonConsent(w http.ResponseWriter, r *http.Request) {
	shop := r.PathValue("shop")
	if _, ok := s.byName[shop]; !ok {
		writeOAuthPage(w, http.StatusNotFound, "Page Not Found", fmt.Sprintf("There is no seller %q.", clip(shop)))
		return
	}
	q := r.URL.Query()
	s.auth.mu.Lock()
	app, ok := s.auth.amazon[q.Get("application_id")]
	s.auth.mu.Unlock()
	redirect := q.Get("redirect_uri")
	switch {
	case !ok:
		writeOAuthPage(w, http.StatusBadRequest, "Authorization error", "The application_id "+clip(q.Get("application_id"))+" does not name an application.")
		return
	case !app.Published && q.Get("version") != "beta":
		writeOAuthPage(w, http.StatusBadRequest, "Error code: MD1000", "The application is in draft state: add version=beta to authorize it.")
		return
	case strings.Contains(redirect, "#"):
		writeOAuthPage(w, http.StatusBadRequest, "Error code: MD5110", "The redirect URI contains a fragment.")
		return
	case redirect != "" && !contains(app.RedirectURIs, redirect):
		writeOAuthPage(w, http.StatusBadRequest, "Error code: MD5101", "The redirect URI is not one of the application's redirect URIs.")
		return
	case q.Get("state") == "":
		writeOAuthPage(w, http.StatusBadRequest, "Authorization error", "The state parameter is required.")
		return
	}
	if redirect == "" {
		redirect = app.RedirectURIs[0]
	}
	now := s.now()
	s.auth.mu.Lock()
	code := "AN" + strings.TrimPrefix(s.auth.mint("spapi"), "spapi")[:30]
	s.auth.codes[code] = &authCode{surface: SurfaceAmazon, shop: shop, clientID: app.ClientID, redirectURI: redirect,
		expiry: now + amazonCodeTTL.Microseconds()}
	s.auth.mu.Unlock()
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("state", q.Get("state"))
	v.Set("selling_partner_id", s.SellingPartnerID(shop))
	v.Set("spapi_oauth_code", code)
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// handleAmazonToken serves POST /shops/{shop}/amazon/auth/o2/token, the
// shop's Login with Amazon.
func (s *Simulator) handleAmazonToken(w http.ResponseWriter, r *http.Request) {
	sh, ok := s.byName[r.PathValue("shop")]
	if !ok {
		writeJSON(w, http.StatusNotFound, lwaError{"invalid_request", fmt.Sprintf("unknown shop %q", clip(r.PathValue("shop")))})
		return
	}
	s.serveToken(w, r, SurfaceAmazon, func(w http.ResponseWriter, limited bool) {
		if limited {
			writeJSON(w, http.StatusTooManyRequests, lwaError{"slow_down", "The request rate is too high; retry later."})
		} else {
			writeJSON(w, http.StatusServiceUnavailable, lwaError{"temporarily_unavailable", "The service is temporarily unavailable."})
		}
	}, func(p url.Values, now int64) (any, *oauthErr) {
		return s.amazonGrant(sh, p, now)
	})
}

// amazonClient finds the registered app of an LWA client. The lock is held.
func (a *authority) amazonClient(clientID, secret string) *AmazonApp {
	for _, app := range a.amazon {
		if app.ClientID == clientID && subtle.ConstantTimeCompare([]byte(secret), []byte(app.ClientSecret)) == 1 {
			return app
		}
	}
	return nil
}

// amazonGrant runs one LWA token request. The authority's lock is held.
func (s *Simulator) amazonGrant(sh *shop, p url.Values, now int64) (map[string]any, *oauthErr) {
	a := s.auth
	st := a.stats[SurfaceAmazon]
	clientID, secret := p.Get("client_id"), p.Get("client_secret")
	if clientID == "" || secret == "" {
		return nil, &oauthErr{http.StatusUnauthorized, "invalid_client", lwaInvalidClient}
	}
	ttl := a.accessTTL[SurfaceAmazon]
	answer := func(access, refresh string) map[string]any {
		// expires_in states LWA's hour whatever the token really lives.
		return map[string]any{"access_token": access, "refresh_token": refresh, "token_type": "bearer",
			"expires_in": int64(amazonAccessTTL.Seconds())}
	}
	switch p.Get("grant_type") {
	case "refresh_token":
		tok := p.Get("refresh_token")
		if g, ok := a.refresh[tok]; ok && g.surface == SurfaceAmazon {
			if g.shop != sh.name || g.revoked {
				return nil, &oauthErr{http.StatusBadRequest, "invalid_grant", lwaInvalidRefresh}
			}
			if app := a.amazonClient(clientID, secret); app == nil || app.ClientID != g.clientID {
				return nil, &oauthErr{http.StatusUnauthorized, "invalid_client", lwaInvalidClient}
			}
			a.spend(SurfaceAmazon, tok)
			st.RefreshGrants++
			acc := a.issueAccess(SurfaceAmazon, amazonAccessPrefix, sh.name, g.clientID, "", now+ttl.Microseconds(), true)
			return answer(acc, tok), nil
		}
		if len(sh.token) == 0 || subtle.ConstantTimeCompare([]byte(tok), sh.token) != 1 || a.amazonOff[sh.name] {
			return nil, &oauthErr{http.StatusBadRequest, "invalid_grant", lwaInvalidRefresh}
		}
		// The shop's Config token: a stateless access token, so one a
		// restarted simulator minted still works; recorded as well, so
		// ExpireAccessTokens and the counters see it.
		a.spend(SurfaceAmazon, tok)
		st.RefreshGrants++
		expiry := now + ttl.Microseconds()
		acc := sh.accessToken(expiry)
		a.access[acc] = &accessGrant{surface: SurfaceAmazon, shop: sh.name, expiry: expiry, fromRefresh: true}
		st.AccessTokensIssued++
		return answer(acc, tok), nil

	case "authorization_code":
		app := a.amazonClient(clientID, secret)
		if app == nil {
			return nil, &oauthErr{http.StatusUnauthorized, "invalid_client", lwaInvalidClient}
		}
		c, ok := a.codes[p.Get("code")]
		if !ok || c.surface != SurfaceAmazon || c.shop != sh.name || c.clientID != app.ClientID || now >= c.expiry ||
			c.redirectURI != p.Get("redirect_uri") {
			return nil, &oauthErr{http.StatusBadRequest, "invalid_grant", lwaInvalidCode}
		}
		delete(a.codes, p.Get("code"))
		st.CodeGrants++
		ref := a.issueRefresh(SurfaceAmazon, amazonRefreshPrefix, sh.name, app.ClientID, "", 0, nil)
		acc := a.issueAccess(SurfaceAmazon, amazonAccessPrefix, sh.name, app.ClientID, "", now+ttl.Microseconds(), false)
		return answer(acc, ref.token), nil

	default:
		return nil, &oauthErr{http.StatusBadRequest, "unsupported_grant_type", "grant_type must be refresh_token or authorization_code"}
	}
}

// amazonAuth checks an SP-API request's x-amz-access-token for sh at now;
// a refusal carries the details of SP-API's 403 and is counted in the
// authority's stats (the caller counts it in the shop's).
func (s *Simulator) amazonAuth(sh *shop, token string, now int64) (bool, string) {
	if token == "" {
		s.auth.mu.Lock()
		s.auth.countUnauthorized(SurfaceAmazon, nil)
		s.auth.mu.Unlock()
		return false, amazonMissingToken
	}
	a := s.auth
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, known := a.access[token]; known {
		c := a.checkAccess(SurfaceAmazon, sh.name, token, now)
		switch {
		case c.ok:
			return true, ""
		case c.expired:
			a.countUnauthorized(SurfaceAmazon, c.grant)
			return false, amazonExpiredToken
		}
		a.countUnauthorized(SurfaceAmazon, c.grant)
		return false, amazonInvalidToken
	}
	// A stateless token this process did not mint (it restarted).
	expiry, signed := sh.accessExpiry(token)
	if !signed {
		a.countUnauthorized(SurfaceAmazon, nil)
		return false, amazonInvalidToken
	}
	lapse := s.amazonLapse.Load()
	if now >= expiry || (lapse != 0 && expiry <= lapse+a.accessTTL[SurfaceAmazon].Microseconds()) {
		a.countUnauthorized(SurfaceAmazon, &accessGrant{fromRefresh: true})
		return false, amazonExpiredToken
	}
	return true, ""
}
