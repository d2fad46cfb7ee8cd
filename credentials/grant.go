package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/textclip"
)

// ErrReauthorize is wrapped when the token endpoint refused the refresh
// token (invalid_grant): it was revoked or expired, and only the merchant
// can mend that, by re-installing or re-authorizing the app. The
// credential keeps the error until a new token is stored.
var ErrReauthorize = errors.New("the refresh token was revoked or expired: the merchant must re-install or re-authorize the app, then store the new token")

// ErrAppRefused is wrapped when the token endpoint refused the app's
// client id or secret (401, 403, invalid_client): fix the app credential.
var ErrAppRefused = errors.New("the token endpoint refused the app's client id or secret: fix the app credential (ordersync credentials app set)")

// ErrNotStored is wrapped when no stored credential has the name.
var ErrNotStored = errors.New("no stored credential has that name")

// IsPermanent reports whether err from a stored Source will not go away
// by retrying: a caller should fail the attempt for good and say so.
func IsPermanent(err error) bool {
	for _, e := range []error{ErrReauthorize, ErrAppRefused, ErrNotStored, ErrUnknownKey, ErrOpen, ErrNoKeys, ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// maxGrantBody bounds what is read of a token endpoint's answer.
const maxGrantBody = 64 << 10

// grantAnswer is a token endpoint's JSON answer (RFC 6749 section 5, and
// Shopify's refresh_token_expires_in).
type grantAnswer struct {
	AccessToken           string      `json:"access_token"`
	ExpiresIn             json.Number `json:"expires_in"`
	RefreshToken          string      `json:"refresh_token"`
	RefreshTokenExpiresIn json.Number `json:"refresh_token_expires_in"`
	Scope                 string      `json:"scope"`
	Error                 string      `json:"error"`
	ErrorDescription      string      `json:"error_description"`
}

// grantError is a refresh that did not give a new token. permanent: the
// endpoint refused (ErrReauthorize or ErrAppRefused in err); otherwise
// the answer may have been lost, and the stored refresh token is kept to
// be spent again.
type grantError struct {
	permanent bool
	err       error
}

func (e *grantError) Error() string { return e.err.Error() }
func (e *grantError) Unwrap() error { return e.err }

// tokenURL is where the record's refresh grant goes: the sealed token
// URL, or Shopify's per-shop endpoint.
func tokenURL(p Payload) string {
	if p.TokenURL != "" || p.Shop == "" {
		return p.TokenURL
	}
	host := p.Shop
	if !strings.Contains(host, ".") {
		host += ".myshopify.com"
	}
	return "https://" + host + "/admin/oauth/access_token"
}

// CheckTokenURL refuses a token URL a refresh token may not be sent to:
// not http(s), or plain http to anything but this machine.
func CheckTokenURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		return fmt.Errorf("token URL %q is not an http(s) URL: %w", textclip.Value(raw), ErrInvalid)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("token URL %q: plain http only to this machine (localhost, 127.0.0.1, ::1); use https: %w", textclip.Value(raw), ErrInvalid)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// postRefresh posts the refresh grant for credential name and reads the
// answer. It never quotes a secret; the endpoint's text is clipped.
func (m *Manager) postRefresh(ctx context.Context, name string, p, app Payload) (grantAnswer, error) {
	target := tokenURL(p)
	if err := CheckTokenURL(target); err != nil {
		return grantAnswer{}, &grantError{permanent: true, err: fmt.Errorf("refresh stored credential %q: %w", name, err)}
	}
	form := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {p.RefreshToken},
		"client_id":     {app.ClientID},
		"client_secret": {app.ClientSecret},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		return grantAnswer{}, &grantError{err: fmt.Errorf("refresh stored credential %q: %w", name, err)}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		// *url.Error quotes the URL, which holds no secret (the form is
		// the body); the error may still be long.
		return grantAnswer{}, &grantError{err: fmt.Errorf("refresh stored credential %q: post to %s: %s (the stored refresh token is kept and spent again next time)",
			name, textclip.Value(target), textclip.Message(transportText(err)))}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxGrantBody+1))
	if err != nil {
		return grantAnswer{}, &grantError{err: fmt.Errorf("refresh stored credential %q: read the answer (HTTP %d): %s (the stored refresh token is kept and spent again next time)",
			name, resp.StatusCode, textclip.Message(err.Error()))}
	}
	if len(body) > maxGrantBody {
		return grantAnswer{}, &grantError{err: fmt.Errorf("refresh stored credential %q: the answer (HTTP %d) is longer than %d bytes", name, resp.StatusCode, maxGrantBody)}
	}
	var a grantAnswer
	decodeErr := json.Unmarshal(body, &a)
	// The endpoint's words, with what was sent redacted (an endpoint may
	// echo it) and clipped; never the body itself, which on success holds
	// tokens.
	said := textclip.Message(redactSent(strings.TrimSpace(a.Error+" "+a.ErrorDescription), p.RefreshToken, app.ClientSecret, p.AccessToken))
	switch {
	case resp.StatusCode == http.StatusOK && decodeErr == nil && a.AccessToken != "":
		return a, nil
	case resp.StatusCode == http.StatusOK:
		return grantAnswer{}, &grantError{err: fmt.Errorf("refresh stored credential %q: HTTP 200 without an access token in JSON (the stored refresh token is kept)", name)}
	case a.Error == "invalid_client" || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return grantAnswer{}, &grantError{permanent: true, err: fmt.Errorf("refresh stored credential %q: HTTP %d %s: %w", name, resp.StatusCode, said, ErrAppRefused)}
	case resp.StatusCode == http.StatusBadRequest:
		return grantAnswer{}, &grantError{permanent: true, err: fmt.Errorf("refresh stored credential %q: HTTP 400 %s: %w", name, said, ErrReauthorize)}
	}
	return grantAnswer{}, &grantError{err: fmt.Errorf("refresh stored credential %q: HTTP %d %s (the stored refresh token is kept and spent again next time)",
		name, resp.StatusCode, said)}
}

// redactSent replaces every secret in text.
func redactSent(text string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, "[redacted]")
		}
	}
	return text
}

// transportText is a transport error without the URL's query (none is
// sent, but a token URL could carry one).
func transportText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}

// seconds reads expires_in style numbers (JSON number or numeric
// string); 0 when absent or not a positive number.
func seconds(n json.Number) time.Duration {
	s := strings.TrimSpace(n.String())
	if s == "" {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f > 10*365*24*3600 {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// noRedirects makes a client that does not follow redirects: a refresh
// token and client secret go to the token URL and nowhere else.
func noRedirects(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	cp := *c
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cp
}

// TokenFromAnswer reads a token endpoint's JSON answer to an
// authorization (the OAuth install's code exchange) into a Token of kind
// for app, to store with PutToken; expiries count from obtained (taken
// before the request was sent). Errors quote none of the body.
func TokenFromAnswer(kind Kind, app, tokenURL string, body []byte, obtained time.Time) (Token, error) {
	if len(body) > maxGrantBody {
		return Token{}, fmt.Errorf("token answer is longer than %d bytes: %w", maxGrantBody, ErrInvalid)
	}
	var a grantAnswer
	if err := json.Unmarshal(body, &a); err != nil || a.AccessToken == "" {
		return Token{}, fmt.Errorf("token answer holds no access token in JSON: %w", ErrInvalid)
	}
	t := Token{Kind: kind, App: app, TokenURL: tokenURL, AccessToken: a.AccessToken, RefreshToken: a.RefreshToken, Scope: a.Scope, ObtainedAt: obtained}
	if d := seconds(a.ExpiresIn); d > 0 {
		t.AccessExpiresAt = obtained.Add(d)
	}
	if d := seconds(a.RefreshTokenExpiresIn); d > 0 {
		t.RefreshExpiresAt = obtained.Add(d)
	}
	return t, nil
}
