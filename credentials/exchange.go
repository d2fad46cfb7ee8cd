package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/textclip"
)

// Shopify's token exchange of a non-expiring offline token for an
// expiring one (shopify.dev, "Migrate to expiring offline access tokens"):
// POST https://{shop}.myshopify.com/admin/oauth/access_token with the
// app's client_id and client_secret, grant_type token-exchange,
// subject_token the old token, subject_token_type and requested_token_type
// offline-access-token, expiring=1. The answer is an expiring pair; the
// old token stops opening the Admin API. A retry with the same old token
// within seven days (and before the pair is refreshed) answers the same
// pair again (changelog "More resilient token exchanges when migrating
// tokens without a user session"), so a lost answer is recovered by
// exchanging again.
const (
	shopifyExchangeGrant = "urn:ietf:params:oauth:grant-type:token-exchange"
	shopifyOfflineToken  = "urn:shopify:params:oauth:token-type:offline-access-token"
)

// shopifyShopHost is a shop's Admin API host.
var shopifyShopHost = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}\.myshopify\.com$`)

// ErrSubjectRefused is wrapped when Shopify refused the static token as
// the subject of the exchange: not a non-expiring offline token of this
// shop and app (a custom app's token, another app's, one revoked by an
// uninstall), or one migrated more than seven days ago or whose pair was
// refreshed since.
var ErrSubjectRefused = errors.New("the shop refused the static token for the exchange: it is not a non-expiring offline token of this shop issued to this app (custom apps' tokens are not migrated; they keep working), or it was exchanged already more than 7 days ago or its pair was refreshed since")

// ErrAlreadyStored is wrapped when a stored credential already has the
// name an exchange would store under.
var ErrAlreadyStored = errors.New("a stored credential already has that name")

// ErrExchangeLost is wrapped when the exchange may have happened at
// Shopify but its answer was not read or not stored: the static token may
// no longer open the API. Exchanging again within seven days gets the
// same pair.
var ErrExchangeLost = errors.New("the exchange's answer was lost or not stored; the static token may no longer open the Admin API: run the migration again (within 7 days Shopify answers a retry with the same pair)")

// ShopifyTokenURL is where a shop's token grants go: the shop's base URL
// (a shopify platform's endpoint, e.g. https://acme.myshopify.com) and
// /admin/oauth/access_token. The host must be a *.myshopify.com shop or
// this machine (the simulator): the app's client secret, good for every
// shop, goes there, so a registry entry pointing elsewhere must not
// collect it. It refuses a base that carries a query, a fragment or user
// info, and what CheckTokenURL refuses.
func ShopifyTokenURL(shopBaseURL string) (string, error) {
	u, err := url.Parse(shopBaseURL)
	if err != nil || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("shop URL %q is not a plain http(s) URL: %w", textclip.Value(shopBaseURL), ErrInvalid)
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if !isLoopback(host) && !shopifyShopHost.MatchString(host) {
		return "", fmt.Errorf("shop URL %q: the host is not a shop's myshopify.com domain (the app's client secret goes only there): %w", textclip.Value(shopBaseURL), ErrInvalid)
	}
	target := strings.TrimRight(shopBaseURL, "/") + "/admin/oauth/access_token"
	if err := CheckTokenURL(target); err != nil {
		return "", err
	}
	return target, nil
}

// ExchangeShopifyOffline exchanges the shop's non-expiring offline token
// staticToken for an expiring pair at shopBaseURL's token endpoint, with
// the stored app's client id and secret, and stores the pair as the
// shopify credential name (refreshed with app at that token URL). The
// pair is committed before this returns; only then may a platform be
// pointed at name. A name already stored is ErrAlreadyStored and nothing
// is sent. Errors name the credential and never carry a token or secret;
// ErrExchangeLost says the static token may be spent and a retry
// (within seven days) recovers the pair.
func (m *Manager) ExchangeShopifyOffline(ctx context.Context, name, app, shopBaseURL, staticToken string) (Status, error) {
	if err := m.needKeys(name); err != nil {
		return Status{}, err
	}
	if err := CheckName(name); err != nil {
		return Status{}, err
	}
	staticToken = strings.TrimSpace(staticToken)
	if staticToken == "" {
		return Status{}, fmt.Errorf("migrate %q: the static token is empty: %w", name, ErrInvalid)
	}
	target, err := ShopifyTokenURL(shopBaseURL)
	if err != nil {
		return Status{}, fmt.Errorf("migrate %q: %w", name, err)
	}
	if _, ok, err := m.st.Get(ctx, name); err != nil {
		return Status{}, err
	} else if ok {
		return Status{}, fmt.Errorf("migrate %q: %w", name, ErrAlreadyStored)
	}
	ap, err := m.openApp(ctx, "", app)
	if err != nil {
		return Status{}, fmt.Errorf("migrate %q: %w", name, err)
	}
	start := m.opt.Now()
	body, err := m.postExchange(ctx, name, target, ap, staticToken)
	if err != nil {
		return Status{}, err
	}
	tok, err := TokenFromAnswer(KindShopify, app, target, body, start)
	if err != nil {
		return Status{}, fmt.Errorf("migrate %q: %w", name, err)
	}
	if tok.RefreshToken == "" || tok.AccessExpiresAt.IsZero() {
		// A non-expiring token again: the app is not set up for expiring
		// offline tokens, and storing it would rotate nothing.
		return Status{}, fmt.Errorf("migrate %q: Shopify answered without a refresh token or expires_in (a non-expiring token): is the app allowed expiring offline tokens? Nothing was stored: %w", name, ErrInvalid)
	}
	// The commit outlives the caller's context: a pair obtained and not
	// stored leaves the shop on a token that no longer opens the API.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	st, err := m.PutToken(wctx, name, tok)
	if err != nil {
		return Status{}, fmt.Errorf("migrate %q: store the exchanged token: %s: %w", name, textclip.Message(err.Error()), ErrExchangeLost)
	}
	m.opt.Logger.Info("exchanged a static shopify token for an expiring one", "credential", name, "access_expires_at", st.AccessExpiresAt)
	return st, nil
}

// postExchange posts the token exchange and returns the answer's body
// when it is a 200. Errors quote none of the body, only the endpoint's
// error code and description with what was sent redacted.
func (m *Manager) postExchange(ctx context.Context, name, target string, app Payload, subject string) ([]byte, error) {
	form := url.Values{
		"client_id":            {app.ClientID},
		"client_secret":        {app.ClientSecret},
		"grant_type":           {shopifyExchangeGrant},
		"subject_token":        {subject},
		"subject_token_type":   {shopifyOfflineToken},
		"requested_token_type": {shopifyOfflineToken},
		"expiring":             {"1"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("migrate %q: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		// Sent or not, the answer is not known: the exchange may have
		// happened.
		return nil, fmt.Errorf("migrate %q: post to %s: %s: %w", name, textclip.Value(target), textclip.Message(transportText(err)), ErrExchangeLost)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxGrantBody+1))
	if err != nil {
		return nil, fmt.Errorf("migrate %q: read the answer (HTTP %d): %s: %w", name, resp.StatusCode, textclip.Message(err.Error()), ErrExchangeLost)
	}
	if len(body) > maxGrantBody {
		return nil, fmt.Errorf("migrate %q: the answer (HTTP %d) is longer than %d bytes: %w", name, resp.StatusCode, maxGrantBody, ErrExchangeLost)
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	var a grantAnswer
	_ = json.Unmarshal(body, &a) // an error page leaves a empty
	said := textclip.Message(redactSent(strings.TrimSpace(a.Error+" "+a.ErrorDescription), subject, app.ClientSecret))
	switch {
	case a.Error == "invalid_client" || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("migrate %q: HTTP %d %s: %w", name, resp.StatusCode, said, ErrAppRefused)
	case a.Error == "invalid_subject_token":
		return nil, fmt.Errorf("migrate %q: HTTP %d %s: %w", name, resp.StatusCode, said, ErrSubjectRefused)
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		// Refused as asked: nothing was exchanged.
		return nil, fmt.Errorf("migrate %q: HTTP %d %s (nothing was exchanged): %w", name, resp.StatusCode, said, ErrInvalid)
	}
	// 429, 5xx, a redirect: nothing says whether the exchange happened.
	return nil, fmt.Errorf("migrate %q: HTTP %d %s: %w", name, resp.StatusCode, said, ErrExchangeLost)
}

// StoredTokenTarget is the kind, app and token URL of the stored token
// credential name (opened with the keys): what a resumed migration
// checks before pointing a platform at it. ok is false when none is
// stored.
func (m *Manager) StoredTokenTarget(ctx context.Context, name string) (kind Kind, app, tokenURLOf string, ok bool, err error) {
	if err := m.needKeys(name); err != nil {
		return "", "", "", false, err
	}
	r, found, err := m.st.Get(ctx, name)
	if err != nil || !found {
		return "", "", "", false, err
	}
	if r.Kind == KindApp {
		return r.Kind, "", "", true, nil
	}
	p, err := openPayload(m.keys, r)
	if err != nil {
		return "", "", "", false, err
	}
	return r.Kind, r.App, tokenURL(p), true, nil
}
