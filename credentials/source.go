package credentials

import "context"

// Source hands a connector the secret for each request. A connector asks
// for it per request (never once per process), so a secret fixed or
// rotated at its origin is used without a restart.
//
// For an {env} or {file} reference the secret is the referenced text
// (re-read when the file changed). For a {stored} reference it is a
// current access token, refreshed before it expires, once per account
// across all workers.
type Source interface {
	// Secret returns the secret to send now.
	Secret(ctx context.Context) (string, error)
	// Refused tells the source that the platform answered 401/403 to
	// secret. The source re-reads its origin (or refreshes a stored
	// token) and reports whether a different secret is now available,
	// so the caller retries once with it before the attempt counts as
	// failed.
	Refused(ctx context.Context, secret string) (changed bool, err error)
	// Recent lists the secrets handed out recently, for redaction: a
	// request may still fail with one after it was replaced.
	Recent() []string
	// String names the reference, never the secret.
	String() string
}
