package onboarding

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// AmazonConfig configures SP-API website authorization.
type AmazonConfig struct {
	// App names the stored LWA app (client id and secret).
	App string
	// ApplicationID is the SP-API application id (amzn1.sp.solution...).
	ApplicationID string
	// ConsentURL is Seller Central's consent page of the sellers' region
	// (default https://sellercentral.amazon.com/apps/authorize/consent).
	ConsentURL string
	// TokenURL is Login with Amazon's token endpoint (default
	// https://api.amazon.com/auth/o2/token).
	TokenURL string
	// Draft adds version=beta while the application is in draft.
	Draft bool
	// NamePrefix names the platform: prefix + the selling partner id in
	// lower case (default "amazon-").
	NamePrefix string
	// Settings are the platform settings of a new account: endpoint (the
	// region's SP-API URL) and options.marketplace_ids at least.
	Settings map[string]any
}

// sellingPartnerID is the form of a seller's id; anything else is refused
// before it names a platform.
var sellingPartnerID = regexp.MustCompile(`^[A-Z0-9]{8,32}$`)

func (c *AmazonConfig) check() error {
	switch {
	case c.App == "":
		return fmt.Errorf("onboarding: amazon: the stored app name is required (ordersync credentials app set NAME ...)")
	case !strings.HasPrefix(c.ApplicationID, "amzn1."):
		return fmt.Errorf("onboarding: amazon: application id %q is not an SP-API application id (amzn1.sp.solution...)", c.ApplicationID)
	}
	if _, ok := c.Settings["endpoint"].(string); !ok {
		return fmt.Errorf("onboarding: amazon: the settings of new accounts need endpoint (the region's SP-API URL)")
	}
	if c.ConsentURL == "" {
		c.ConsentURL = "https://sellercentral.amazon.com/apps/authorize/consent"
	}
	if c.TokenURL == "" {
		c.TokenURL = "https://api.amazon.com/auth/o2/token"
	}
	for _, u := range []string{c.ConsentURL, c.TokenURL} {
		if p, err := url.Parse(u); err != nil || p.Host == "" || (p.Scheme != "https" && !(p.Scheme == "http" && loopbackHost(p.Hostname()))) {
			return fmt.Errorf("onboarding: amazon: %q must be an https URL", u)
		}
	}
	if c.NamePrefix == "" {
		c.NamePrefix = "amazon-"
	}
	return nil
}

// amazonStart sends a seller to Seller Central's consent page with a fresh
// state; the operator hands sellers this link.
func (h *Handler) amazonStart(w http.ResponseWriter, r *http.Request) {
	state, err := h.states.issue("amazon", "")
	if err != nil {
		h.fail(w, r, "amazon", err)
		return
	}
	h.setState(w, "amazon", state)
	cfg := h.cfg.Amazon
	q := url.Values{"application_id": {cfg.ApplicationID}, "state": {state}, "redirect_uri": {h.redirectURI("amazon")}}
	if cfg.Draft {
		q.Set("version", "beta")
	}
	http.Redirect(w, r, cfg.ConsentURL+"?"+q.Encode(), http.StatusFound)
}

type lwaToken struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

// amazonCallback finishes the authorization: state, the seller's id, the
// spapi_oauth_code exchanged at LWA for the seller's refresh token, the
// credential stored and the platform registered.
func (h *Handler) amazonCallback(w http.ResponseWriter, r *http.Request) {
	_, err := h.takeState(w, r, "amazon")
	q := r.URL.Query()
	seller, code := q.Get("selling_partner_id"), q.Get("spapi_oauth_code")
	switch {
	case err != nil:
	case !sellingPartnerID.MatchString(seller):
		err = refuse(http.StatusBadRequest, "selling_partner_id is missing or not a seller id")
	case code == "" || len(code) > 512:
		err = refuse(http.StatusBadRequest, "the callback has no usable spapi_oauth_code")
	}
	if err != nil {
		h.fail(w, r, "amazon", err)
		return
	}
	cfg := h.cfg.Amazon
	clientID, secret, err := h.creds.App(r.Context(), cfg.App)
	if err != nil {
		h.fail(w, r, "amazon", &flowError{status: http.StatusInternalServerError, msg: "the app's credentials are not available; the operator has the details", err: err})
		return
	}
	var tok lwaToken
	err = h.exchange(r, cfg.TokenURL, map[string]string{"grant_type": "authorization_code", "code": code,
		"redirect_uri": h.redirectURI("amazon"), "client_id": clientID, "client_secret": secret}, &tok)
	if err == nil && tok.RefreshToken == "" {
		err = &flowError{status: http.StatusBadGateway, msg: "Login with Amazon answered without a refresh token; the operator has the details",
			err: fmt.Errorf("amazon %s: the token answer has no refresh_token", seller)}
	}
	if err != nil {
		h.fail(w, r, "amazon", err)
		return
	}
	name := cfg.NamePrefix + strings.ToLower(seller)
	g := Grant{Kind: "lwa", App: cfg.App, TokenURL: cfg.TokenURL, AccessToken: tok.AccessToken,
		AccessTTL: time.Duration(tok.ExpiresIn) * time.Second, RefreshToken: tok.RefreshToken, Subject: seller}
	endpoint, _ := cfg.Settings["endpoint"].(string)
	how, err := h.connect(r.Context(), name, g, settings(cfg.Settings, map[string]any{
		"kind": "amazon", "endpoint": endpoint, "credentials": map[string]any{"stored": name}}))
	if err != nil {
		h.fail(w, r, "amazon", err)
		return
	}
	h.log.Info("amazon seller "+how, "selling_partner_id", seller, "platform", name)
	h.done(w, fmt.Sprintf("Seller %s is %s: ordersync fetches its orders as platform %s.", seller, how, name))
}
