package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
)

// OAuth refresh-token plumbing shared by the Amazon (Login with Amazon) and
// eBay connectors: the secret is a JSON object, access tokens are cached
// until shortly before they expire, and concurrent callers share one refresh.

// jsonSecret reads a credential that is a JSON object such as
// {"client_id":"..","client_secret":"..","refresh_token":".."}, raw as the
// source gave it, and returns the named fields. Errors name the reference
// and the missing fields, never a value (not even a JSON syntax error,
// which quotes a character).
func jsonSecret(platform string, ref fmt.Stringer, raw string, fields ...string) (map[string]string, error) {
	want := fmt.Sprintf("a JSON object with %s", strings.Join(fields, ", "))
	var m map[string]any
	if json.Unmarshal([]byte(raw), &m) != nil || m == nil {
		return nil, &PermanentError{Platform: platform, Msg: fmt.Sprintf("credentials %s: the secret must be %s", ref, want)}
	}
	out := make(map[string]string, len(fields))
	var missing []string
	for _, f := range fields {
		s, _ := m[f].(string)
		if strings.TrimSpace(s) == "" {
			missing = append(missing, f)
		}
		out[f] = strings.TrimSpace(s)
	}
	if len(missing) > 0 {
		return nil, &PermanentError{Platform: platform, Msg: fmt.Sprintf("credentials %s: the secret must be %s; missing or empty: %s", ref, want, strings.Join(missing, ", "))}
	}
	return out, nil
}

// tokenRequest is one refresh: a form POSTed to the token endpoint with HTTP
// Basic client authentication (eBay) or with the client in the form (LWA).
type tokenRequest struct {
	url        string
	form       map[string]string
	basicUser  string
	basicPass  string
	credential config.CredentialRef
}

// fetchToken performs a refresh and returns the access token and its
// lifetime. A rejected refresh (400/401/403: invalid_grant, invalid_client)
// is an authError; 429 and 5xx are retryable like any other request.
func fetchToken(ctx context.Context, c *resty.Client, platform string, tr tokenRequest) (string, time.Duration, error) {
	r := c.R().SetContext(ctx).SetFormData(tr.form)
	if tr.basicUser != "" {
		r.SetBasicAuth(tr.basicUser, tr.basicPass)
	}
	resp, err := r.Post(tr.url)
	if err != nil {
		return "", 0, transportError(platform, err)
	}
	switch code := resp.StatusCode(); {
	case code == http.StatusBadRequest || code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "", 0, authError(platform, tr.credential, code, "token refresh rejected: "+errorMessage(code, resp.Body()))
	case code < 200 || code > 299:
		return "", 0, responseError(platform, tr.credential, resp, "")
	}
	var body struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(resp.Body(), &body); err != nil {
		return "", 0, &MalformedError{Platform: platform, Offset: jsonErrorOffset(err, len(resp.Body())), Err: fmt.Errorf("token response from %s: %w", tr.url, err)}
	}
	if body.AccessToken == "" {
		return "", 0, &MalformedError{Platform: platform, Offset: -1, Err: fmt.Errorf("token response from %s has no access_token", tr.url)}
	}
	return body.AccessToken, tokenTTL(platform, body.ExpiresIn), nil
}

// Bounds on an access token's lifetime as a token endpoint states it
// (expires_in). Login with Amazon states 3600 s, eBay 7200 s. A lifetime
// of 0 or less states nothing usable (the token would be refreshed before
// every request): it is used for defaultTokenTTL. Above maxTokenTTL a
// token is trusted longer than any real one lives (a huge value also
// overflowed the duration). A short positive lifetime is kept: the token
// really expires then.
const (
	defaultTokenTTL = time.Minute
	maxTokenTTL     = 24 * time.Hour
)

// tokenTTL is the lifetime a stated expires_in (seconds) is used as, with
// a warning naming the platform when it is out of range.
func tokenTTL(platform string, expiresIn int64) time.Duration {
	var ttl time.Duration
	switch {
	case expiresIn <= 0:
		ttl = defaultTokenTTL
	case expiresIn > int64(maxTokenTTL/time.Second):
		ttl = maxTokenTTL
	default:
		return time.Duration(expiresIn) * time.Second
	}
	slog.Warn("token endpoint stated an access token lifetime out of range; using the nearest bound",
		"platform", platform, "expires_in_seconds", expiresIn, "used", ttl.String(),
		"range", "1s.."+maxTokenTTL.String())
	return ttl
}

// authorizer sends a request with an access token and lists the tokens
// it handed out (for redaction).
type authorizer interface {
	do(ctx context.Context, send func(token string) (*resty.Response, error)) (*resty.Response, error)
	issuedTokens() []string
}

// newAuthorizer is how an OAuth connector gets its access tokens. With an
// {env} or {file} reference the source's secret is the app's JSON keys
// and refresh token, and a tokenSource mints access tokens from it (mint).
// A {stored} reference's source yields the access token itself (the
// credential store refreshes it, once for all workers), so it is sent as
// it comes.
func newAuthorizer(p config.Platform, src credentials.Source, mint func(ctx context.Context, secret string) (string, time.Duration, error)) authorizer {
	if p.Credentials.Stored != "" {
		return sourceAuth{platform: p.Name, src: src}
	}
	return &tokenSource{platform: p.Name, src: src, mint: mint, now: time.Now}
}

// sourceAuth sends the source's secret as the access token.
type sourceAuth struct {
	platform string
	src      credentials.Source
}

func (a sourceAuth) do(ctx context.Context, send func(token string) (*resty.Response, error)) (*resty.Response, error) {
	return sendWithSecret(ctx, a.platform, a.src, send)
}

// issuedTokens is empty: the source's Recent lists what it handed out.
func (a sourceAuth) issuedTokens() []string { return nil }

// tokenSource caches an access token until shortly before it expires, or
// until the secret it was minted from (src's JSON) changes: a rotated
// client secret or refresh token is used at once, not after the cached
// token lapses. Callers that find no valid token wait for one shared
// refresh, which runs without their cancellation (the HTTP client's
// timeout bounds it), so one caller giving up does not fail the others.
type tokenSource struct {
	platform string
	src      credentials.Source
	mint     func(ctx context.Context, secret string) (string, time.Duration, error)
	now      func() time.Time

	mu      sync.Mutex
	token   string
	from    string // the secret token was minted from
	expiry  time.Time
	pending *tokenCall
	// issued keeps the last few tokens handed out, for redaction: a
	// request may still fail with one after it was replaced.
	issued []string
}

// keptTokens is how many issued tokens the redactor still knows.
const keptTokens = 4

// issuedTokens lists the recently issued access tokens.
func (ts *tokenSource) issuedTokens() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]string(nil), ts.issued...)
}

type tokenCall struct {
	done  chan struct{}
	token string
	from  string
	err   error
}

// tokenMargin is how long before its expiry a token is replaced: a tenth of
// its lifetime, at most a minute, so a request never leaves with a token
// about to lapse.
func tokenMargin(ttl time.Duration) time.Duration { return min(ttl/10, time.Minute) }

// get returns a valid token and the secret it was minted from; fresh says
// it was just fetched for this call.
func (ts *tokenSource) get(ctx context.Context) (token, from string, fresh bool, err error) {
	secret, err := ts.src.Secret(ctx)
	if err != nil {
		return "", "", false, secretError(ts.platform, ts.src.String(), err)
	}
	ts.mu.Lock()
	if ts.token != "" && ts.from == secret && ts.now().Before(ts.expiry) {
		token, from = ts.token, ts.from
		ts.mu.Unlock()
		return token, from, false, nil
	}
	call := ts.pending
	if call == nil {
		call = &tokenCall{done: make(chan struct{})}
		ts.pending = call
		go ts.run(context.WithoutCancel(ctx), call, secret)
	}
	ts.mu.Unlock()
	select {
	case <-call.done:
		return call.token, call.from, true, call.err
	case <-ctx.Done():
		return "", "", false, transportError(ts.platform, ctx.Err())
	}
}

// run mints a token from secret. A refused refresh (invalid_grant,
// invalid_client) reads the secret's origin again: when it changed (the
// refresh token or client secret was just replaced there), the refresh is
// tried once more with the new one.
func (ts *tokenSource) run(ctx context.Context, call *tokenCall, secret string) {
	token, ttl, err := ts.mint(ctx, secret)
	if refusedRefresh(err) {
		changed, rerr := ts.src.Refused(ctx, secret)
		switch {
		case rerr != nil:
			err = secretError(ts.platform, ts.src.String(), rerr)
		case changed:
			if secret, rerr = ts.src.Secret(ctx); rerr != nil {
				err = secretError(ts.platform, ts.src.String(), rerr)
			} else {
				token, ttl, err = ts.mint(ctx, secret)
			}
		}
	}
	ts.mu.Lock()
	if err == nil {
		ts.token, ts.from, ts.expiry = token, secret, ts.now().Add(ttl-tokenMargin(ttl))
		if len(token) >= minSecretLen {
			ts.issued = append(ts.issued, token)
			if len(ts.issued) > keptTokens {
				ts.issued = ts.issued[len(ts.issued)-keptTokens:]
			}
		}
	}
	ts.pending = nil
	ts.mu.Unlock()
	call.token, call.from, call.err = token, secret, err
	close(call.done)
}

// refusedRefresh says a refresh failed because the token endpoint refused
// the secret (fetchToken's authError).
func refusedRefresh(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe) && (pe.Status == http.StatusBadRequest || refusedStatus(pe.Status))
}

// invalidate drops token if it is still the cached one.
func (ts *tokenSource) invalidate(token string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.token == token {
		ts.token = ""
	}
}

// do sends a request with a token. A 401/403 answered to a cached token
// (revoked, or expired early on the platform's side) drops it and tries
// once more with a fresh one. A fresh token refused tells the source:
// when the secret it was minted from changed meanwhile, once more with a
// token minted from the new one; else the refusal is final.
func (ts *tokenSource) do(ctx context.Context, send func(token string) (*resty.Response, error)) (*resty.Response, error) {
	for retried := false; ; retried = true {
		token, from, fresh, err := ts.get(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := send(token)
		if err != nil || retried || !refusedStatus(resp.StatusCode()) {
			return resp, err
		}
		if fresh {
			changed, err := ts.src.Refused(ctx, from)
			if err != nil {
				return nil, secretError(ts.platform, ts.src.String(), err)
			}
			if !changed {
				return resp, nil
			}
		}
		ts.invalidate(token)
	}
}
