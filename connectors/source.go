package connectors

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
)

// A connector asks its credentials.Source for the secret of each request,
// never once at construction: a token fixed or rotated in its file, or a
// stored OAuth token the credential store refreshed, is used by the next
// request without a restart. A 401/403 tells the source, which reads its
// origin again; when it has another secret by then, the request goes once
// more with it before the attempt counts as failed (so fixing the file and
// retrying a dead letter works on a running worker).

// Option tunes New.
type Option func(*newOptions)

type newOptions struct {
	stored func(name string) (credentials.Source, error)
}

// WithStoredCredentials lets New serve {stored} references: resolve
// returns the Source of a stored credential by name (a worker passes
// its credentials.Manager's Source). Without it a {stored} reference is
// a permanent error.
func WithStoredCredentials(resolve func(name string) (credentials.Source, error)) Option {
	return func(o *newOptions) { o.stored = resolve }
}

// sourceOf is the Source of p's credential reference: credentials.Static
// for {env} and {file}, the store's for {stored}.
func sourceOf(p config.Platform, o newOptions) (credentials.Source, error) {
	ref := p.Credentials
	if ref.Stored == "" {
		return credentials.Static(ref), nil
	}
	if o.stored == nil {
		return nil, &PermanentError{Platform: p.Name, Msg: fmt.Sprintf(
			"credentials %s: the credential is in the credential store, and this worker has no credential store keys (set ORDERSYNC_CREDENTIAL_KEYS)", ref)}
	}
	src, err := o.stored(ref.Stored)
	if err != nil {
		// Naming a Source reads nothing: its failure is a bad name or no keys.
		return nil, &PermanentError{Platform: p.Name, Msg: fmt.Sprintf("credentials %s: %v", ref, err)}
	}
	return src, nil
}

// transientSecret is implemented by a Source's errors that may pass on
// their own (the credential store unreachable, a token refresh answered
// 5xx): such a failure is retried like a transient request.
type transientSecret interface{ Transient() bool }

// secretError classifies a failure to get a secret: permanent (a file
// missing, empty, malformed; the fix is the operator's), unless the error
// is a cancellation, a connector error already, or says it is transient.
// The message names the reference, never a secret (Sources never quote
// one).
func secretError(platform, ref string, err error) error {
	var rl *RateLimitError
	var te *TransientError
	var pe *PermanentError
	var me *MalformedError
	var ts transientSecret
	switch {
	case errors.As(err, &rl) || errors.As(err, &te) || errors.As(err, &pe) || errors.As(err, &me):
		return err
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return transportError(platform, err)
	case errors.As(err, &ts) && ts.Transient():
		return &TransientError{Platform: platform, Msg: "credentials " + ref, Err: err}
	}
	return &PermanentError{Platform: platform, Msg: fmt.Sprintf("credentials %s: %v", ref, err)}
}

// refusedStatus is an answer that refuses the credential.
func refusedStatus(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden
}

// sendWithSecret sends a request with the source's current secret. An
// answer refusing it (401/403) is told to the source; when the source has
// another secret now, the request is sent once more with that one. The
// refusal that stands is returned as the response, for the caller to
// classify (its authError names the reference). A secret that cannot be
// read is a classified error (secretError); a send's own error is
// returned as it is.
func sendWithSecret(ctx context.Context, platform string, src credentials.Source, send func(secret string) (*resty.Response, error)) (*resty.Response, error) {
	secret, err := src.Secret(ctx)
	if err != nil {
		return nil, secretError(platform, src.String(), err)
	}
	resp, err := send(secret)
	if err != nil || !refusedStatus(resp.StatusCode()) {
		return resp, err
	}
	changed, err := src.Refused(ctx, secret)
	if err != nil {
		// The origin cannot be read now (the file was removed while
		// being replaced): that is what to fix, more than the refusal.
		return nil, secretError(platform, src.String(), err)
	}
	if !changed {
		return resp, nil
	}
	if secret, err = src.Secret(ctx); err != nil {
		return nil, secretError(platform, src.String(), err)
	}
	return send(secret)
}

// checkStaticSecret reads an {env} or {file} secret once at construction,
// so a reference that cannot be read (or a secret of the wrong shape,
// check) fails New with a clear error rather than every request. A stored
// secret is not fetched here: it may need a refresh, which is a request's
// business.
func checkStaticSecret(p config.Platform, src credentials.Source, check func(secret string) error) error {
	if p.Credentials.Stored != "" {
		return nil
	}
	secret, err := src.Secret(context.Background())
	if err != nil {
		return secretError(p.Name, src.String(), err)
	}
	if check != nil {
		return check(secret)
	}
	return nil
}
