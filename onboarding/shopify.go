package onboarding

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ShopifyConfig configures Shopify's app install.
type ShopifyConfig struct {
	// App names the stored OAuth app (`ordersync credentials app set`).
	App string
	// Scopes are asked for and must all be granted; default read_orders.
	Scopes []string
	// ShopURL builds a shop's base URL from its domain: {shop} is the
	// domain (acme.myshopify.com), {handle} its first label. Default
	// https://{shop}; tests point it at the simulator.
	ShopURL string
	// NamePrefix names the platform: prefix + handle (default "shopify-").
	NamePrefix string
	// Settings are the platform settings of a new account (interval,
	// options.api, ...); kind, endpoint and credentials are the flow's.
	Settings map[string]any
}

// shopDomain is the only shop a flow accepts: Shopify's own domains, so a
// forged shop parameter cannot send the merchant, or the code exchange
// with the client secret, to another host.
var shopDomain = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}\.myshopify\.com$`)

// installSkew bounds the age of an install request's timestamp: a signed
// link replayed days later is refused.
const installSkew = time.Hour

func (c *ShopifyConfig) check() error {
	if c.App == "" {
		return fmt.Errorf("onboarding: shopify: the stored app name is required (ordersync credentials app set NAME ...)")
	}
	if len(c.Scopes) == 0 {
		c.Scopes = []string{"read_orders"}
	}
	if c.ShopURL == "" {
		c.ShopURL = "https://{shop}"
	}
	if !strings.Contains(c.ShopURL, "{shop}") && !strings.Contains(c.ShopURL, "{handle}") {
		return fmt.Errorf("onboarding: shopify: shop URL %q must contain {shop} or {handle}", c.ShopURL)
	}
	if c.NamePrefix == "" {
		c.NamePrefix = "shopify-"
	}
	return nil
}

func (c *ShopifyConfig) base(shop string) string {
	handle, _, _ := strings.Cut(shop, ".")
	return strings.NewReplacer("{shop}", shop, "{handle}", handle).Replace(c.ShopURL)
}

// ShopifyHMAC is the hex HMAC-SHA256 Shopify signs a query with: every
// parameter but hmac (and the legacy signature), sorted by name, as
// name=value joined by '&'; a repeated parameter is name=["a", "b"].
func ShopifyHMAC(q url.Values, secret string) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "hmac" && k != "signature" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		vs := q[k]
		if len(vs) == 1 && !strings.HasSuffix(k, "[]") {
			parts = append(parts, k+"="+vs[0])
			continue
		}
		quoted := make([]string, len(vs))
		for i, v := range vs {
			quoted[i] = strconv.Quote(v)
		}
		parts = append(parts, strings.TrimSuffix(k, "[]")+"=["+strings.Join(quoted, ", ")+"]")
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strings.Join(parts, "&")))
	return hex.EncodeToString(m.Sum(nil))
}

// verifyShopify checks a request Shopify signed: the hmac (compared in
// constant time), then the shop domain.
func (h *Handler) verifyShopify(r *http.Request) (shop, clientID, secret string, err error) {
	q := r.URL.Query()
	clientID, secret, err = h.creds.App(r.Context(), h.cfg.Shopify.App)
	if err != nil {
		return "", "", "", &flowError{status: http.StatusInternalServerError, msg: "the app's credentials are not available; the operator has the details", err: err}
	}
	got, err := hex.DecodeString(q.Get("hmac"))
	want, _ := hex.DecodeString(ShopifyHMAC(q, secret))
	if err != nil || !hmac.Equal(got, want) {
		return "", "", "", refuse(http.StatusUnauthorized, "the request is not signed by Shopify for this app (hmac)")
	}
	shop = q.Get("shop")
	if !shopDomain.MatchString(shop) {
		return "", "", "", refuse(http.StatusBadRequest, "shop must be a *.myshopify.com domain")
	}
	return shop, clientID, secret, nil
}

// shopifyInstall answers Shopify's install request: it sends the merchant
// to the shop's consent page asking for the scopes, with a fresh state.
func (h *Handler) shopifyInstall(w http.ResponseWriter, r *http.Request) {
	shop, clientID, _, err := h.verifyShopify(r)
	if err == nil {
		err = h.checkTimestamp(r.URL.Query().Get("timestamp"))
	}
	var state string
	if err == nil {
		state, err = h.states.issue("shopify", shop)
	}
	if err != nil {
		h.fail(w, r, "shopify", err)
		return
	}
	h.setState(w, "shopify", state)
	q := url.Values{"client_id": {clientID}, "scope": {strings.Join(h.cfg.Shopify.Scopes, ",")},
		"redirect_uri": {h.redirectURI("shopify")}, "state": {state}}
	http.Redirect(w, r, h.cfg.Shopify.base(shop)+"/admin/oauth/authorize?"+q.Encode(), http.StatusFound)
}

func (h *Handler) checkTimestamp(ts string) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return refuse(http.StatusBadRequest, "timestamp must be Unix seconds")
	}
	if d := h.cfg.Now().Sub(time.Unix(sec, 0)); d > installSkew || d < -installSkew {
		return refuse(http.StatusForbidden, "the install request is older than %s (or from the future); start the install again from Shopify", installSkew)
	}
	return nil
}

// shopifyToken is the access token answer; with expiring=1 it carries the
// lifetime and a refresh token.
type shopifyToken struct {
	AccessToken           string `json:"access_token"`
	Scope                 string `json:"scope"`
	ExpiresIn             int64  `json:"expires_in"`
	RefreshToken          string `json:"refresh_token"`
	RefreshTokenExpiresIn int64  `json:"refresh_token_expires_in"`
}

// shopifyCallback finishes the install: hmac, state (for this shop),
// the code exchanged for an expiring offline token, the scopes checked,
// the credential stored and the platform registered.
func (h *Handler) shopifyCallback(w http.ResponseWriter, r *http.Request) {
	shop, clientID, secret, err := h.verifyShopify(r)
	if err != nil {
		h.fail(w, r, "shopify", err)
		return
	}
	p, err := h.takeState(w, r, "shopify")
	if err == nil && p.subject != shop {
		err = refuse(http.StatusForbidden, "the state was issued for another shop; start the install again")
	}
	code := r.URL.Query().Get("code")
	if err == nil && (code == "" || len(code) > 512) {
		err = refuse(http.StatusBadRequest, "the callback has no usable code")
	}
	if err != nil {
		h.fail(w, r, "shopify", err)
		return
	}
	cfg := h.cfg.Shopify
	tokenURL := cfg.base(shop) + "/admin/oauth/access_token"
	var tok shopifyToken
	err = h.exchange(r, tokenURL, map[string]string{"client_id": clientID, "client_secret": secret, "code": code, "expiring": "1"}, &tok)
	switch {
	case err != nil:
	case tok.AccessToken == "" || tok.RefreshToken == "" || tok.ExpiresIn <= 0:
		err = &flowError{status: http.StatusBadGateway, msg: "Shopify answered without an expiring token; the operator has the details",
			err: fmt.Errorf("shopify %s: the token answer lacks access_token, refresh_token or expires_in (is the app set up for expiring offline tokens?)", shop)}
	default:
		if missing := missingScopes(cfg.Scopes, tok.Scope); len(missing) > 0 {
			err = refuse(http.StatusForbidden, "the app was not granted %s, which ordersync needs to read orders; install again and accept them", strings.Join(missing, ", "))
		}
	}
	if err != nil {
		h.fail(w, r, "shopify", err)
		return
	}
	handle, _, _ := strings.Cut(shop, ".")
	name := cfg.NamePrefix + handle
	g := Grant{Kind: "shopify", App: cfg.App, TokenURL: tokenURL, AccessToken: tok.AccessToken, AccessTTL: time.Duration(tok.ExpiresIn) * time.Second,
		RefreshToken: tok.RefreshToken, RefreshTTL: time.Duration(tok.RefreshTokenExpiresIn) * time.Second, Scope: tok.Scope, Subject: shop}
	how, err := h.connect(r.Context(), name, g, settings(cfg.Settings, map[string]any{
		"kind": "shopify", "endpoint": cfg.base(shop), "credentials": map[string]any{"stored": name}}))
	if err != nil {
		h.fail(w, r, "shopify", err)
		return
	}
	h.log.Info("shopify shop "+how, "shop", shop, "platform", name, "scope", tok.Scope)
	h.done(w, fmt.Sprintf("%s is %s: ordersync fetches its orders as platform %s.", shop, how, name))
}

// missingScopes lists the needed scopes the granted list lacks; a write_
// scope grants its read_.
func missingScopes(need []string, granted string) []string {
	have := map[string]bool{}
	for _, s := range strings.Split(granted, ",") {
		s = strings.TrimSpace(s)
		have[s] = true
		if rest, ok := strings.CutPrefix(s, "write_"); ok {
			have["read_"+rest] = true
		}
	}
	var out []string
	for _, s := range need {
		if !have[s] {
			out = append(out, s)
		}
	}
	return out
}

// exchange POSTs a form to a token endpoint and decodes the answer into v.
// The form holds secrets: errors say the status and the platform's error
// code, never the form.
func (h *Handler) exchange(r *http.Request, tokenURL string, form map[string]string, v any) error {
	resp, err := h.http.R().SetContext(r.Context()).SetFormData(form).SetDoNotParseResponse(true).Post(tokenURL)
	if err != nil {
		return &flowError{status: http.StatusBadGateway, msg: "the platform could not be reached to finish the authorization; try again",
			err: fmt.Errorf("token exchange at %s: %w", redactURL(tokenURL), err)}
	}
	body := resp.RawBody()
	defer body.Close()
	b, err := readBounded(body, maxTokenAnswer)
	if err != nil {
		return &flowError{status: http.StatusBadGateway, msg: "the platform's answer could not be read; try again", err: fmt.Errorf("token exchange at %s: %w", redactURL(tokenURL), err)}
	}
	if resp.StatusCode() != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(b, &e)
		return &flowError{status: http.StatusBadGateway, msg: "the platform refused the authorization code; start again",
			err: fmt.Errorf("token exchange at %s: HTTP %d, error %q", redactURL(tokenURL), resp.StatusCode(), clipCode(e.Error))}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &flowError{status: http.StatusBadGateway, msg: "the platform's answer could not be read; try again", err: fmt.Errorf("token exchange at %s: the answer is not the documented JSON", redactURL(tokenURL))}
	}
	return nil
}
