package credentials

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
)

// Kind is what a stored credential holds.
type Kind string

const (
	// KindShopify is a Shopify expiring offline access token with its
	// refresh token; the refresh token rotates on every refresh.
	KindShopify Kind = "shopify"
	// KindLWA is a Login with Amazon refresh token and the access tokens
	// it mints; the refresh token does not rotate.
	KindLWA Kind = "lwa"
	// KindApp is an OAuth app's client id and secret, named by the token
	// credentials (field App) that refresh with it.
	KindApp Kind = "app"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == KindShopify || k == KindLWA || k == KindApp }

// Errors a Store wraps.
var (
	// ErrConflict: Create found the name taken, or Update/Delete found
	// another generation (or no row) than expected.
	ErrConflict = errors.New("the stored credential changed since it was read")
	// ErrInvalid: the record cannot be kept (bad name, kind, text).
	ErrInvalid = errors.New("invalid stored credential")
)

// MaxNameLength bounds a stored credential's name (config's
// credentials.stored allows 128 characters of [A-Za-z0-9._-]).
const MaxNameLength = 128

// MaxLastError bounds the last error kept beside a credential.
const MaxLastError = 512

// MaxPage is the most records List and Stale return at once.
const MaxPage = 500

var credName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckName refuses what is not a stored credential name.
func CheckName(name string) error {
	if !credName.MatchString(name) {
		return fmt.Errorf("%q is not a stored credential name (letters, digits, '.', '_', '-', at most %d): %w", clipStored(name, 64), MaxNameLength, ErrInvalid)
	}
	return nil
}

// Record is one stored credential: metadata in plaintext (what status and
// metrics show) and the secret payload sealed with a keyring key.
type Record struct {
	Name string
	Kind Kind
	// App names the KindApp credential whose client id and secret refresh
	// this token ("" for an app).
	App              string
	AccessExpiresAt  time.Time // zero: unknown or none
	RefreshExpiresAt time.Time // zero: does not expire (or unknown)
	LastRefreshAt    time.Time
	// LastError is the last refresh failure, clipped, never secret text;
	// "" after a successful refresh.
	LastError string
	// Generation is 1 at Create and grows by one on every Update; writes
	// compare-and-swap on it.
	Generation int64
	KeyID      string // the keyring key Sealed is sealed with
	LeaseOwner string // who holds the refresh lease ("" when free)
	LeaseUntil time.Time
	UpdatedAt  time.Time // set by the store
	// Sealed is nonce||ciphertext of the JSON Payload; List leaves it nil.
	Sealed []byte
}

// Check refuses a record a store cannot keep.
func (r Record) Check() error {
	if err := CheckName(r.Name); err != nil {
		return err
	}
	switch {
	case !r.Kind.Valid():
		return fmt.Errorf("stored credential %q: kind %q is not shopify, lwa or app: %w", r.Name, clipStored(string(r.Kind), 32), ErrInvalid)
	case r.Kind == KindApp && r.App != "":
		return fmt.Errorf("stored credential %q: an app names no app: %w", r.Name, ErrInvalid)
	case r.Kind != KindApp && r.App == "":
		return fmt.Errorf("stored credential %q: a %s token names its app: %w", r.Name, r.Kind, ErrInvalid)
	case r.App != "" && CheckName(r.App) != nil:
		return fmt.Errorf("stored credential %q: app %w", r.Name, CheckName(r.App))
	case !keyID.MatchString(r.KeyID):
		return fmt.Errorf("stored credential %q: key id %q is not a key id: %w", r.Name, clipStored(r.KeyID, 64), ErrInvalid)
	case len(r.Sealed) == 0:
		return fmt.Errorf("stored credential %q: no sealed secret: %w", r.Name, ErrInvalid)
	case len(r.LastError) > MaxLastError || !utf8.ValidString(r.LastError):
		return fmt.Errorf("stored credential %q: last error is not clipped UTF-8: %w", r.Name, ErrInvalid)
	}
	for _, b := range []byte(r.LastError) {
		if b == 0 {
			return fmt.Errorf("stored credential %q: last error holds a NUL byte: %w", r.Name, ErrInvalid)
		}
	}
	return nil
}

// Store keeps stored credentials (package store implements it for SQLite
// and PostgreSQL; store.CredentialsOf). Times are UTC at microsecond
// precision.
type Store interface {
	// Get reads one record, Sealed included.
	Get(ctx context.Context, name string) (Record, bool, error)
	// Create adds r at generation 1 (r.Generation is ignored); a taken
	// name is ErrConflict.
	Create(ctx context.Context, r Record) (int64, error)
	// Update overwrites r's metadata and Sealed when the stored
	// generation is expect, and returns the new generation (expect+1).
	// It leaves the lease alone. Another generation or no row is
	// ErrConflict.
	Update(ctx context.Context, r Record, expect int64) (int64, error)
	// TryLease takes the refresh lease for owner until the given time
	// when it is free, expired (by the store's clock) or owner's already,
	// and reports whether owner holds it. A missing row is ErrConflict.
	TryLease(ctx context.Context, name, owner string, until time.Time) (bool, error)
	// ReleaseLease frees the lease if owner holds it.
	ReleaseLease(ctx context.Context, name, owner string) error
	// List pages records in name order after the name after, metadata
	// only (Sealed nil); limit 0 or above MaxPage is MaxPage.
	List(ctx context.Context, after string, limit int) ([]Record, error)
	// Delete removes the record; it reports whether one was there.
	Delete(ctx context.Context, name string) (bool, error)
	// Stale pages the records, Sealed included, not sealed with the key
	// id current, in name order after the name after: what RotateKey
	// re-seals.
	Stale(ctx context.Context, current, after string, limit int) ([]Record, error)
}

// clipStored cuts untrusted or long text to at most max bytes on a rune
// boundary, marking the cut.
func clipStored(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
