package store

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/credentials"
)

// Both stores keep stored credentials (table credentials, migration 0007).
var (
	_ credentials.Store = sqliteCredentials{}
	_ credentials.Store = postgresCredentials{}
	_ credentialsHolder = (*sqliteStore)(nil)
	_ credentialsHolder = (*postgresStore)(nil)
)

// credentialsHolder is a store that keeps stored credentials.
type credentialsHolder interface {
	Credentials() credentials.Store
}

// CredentialsOf returns the stored credentials kept in the store s, and
// false when s keeps none. Like RegistryOf it is not part of Store, so
// wrappers and fakes need not implement it; a wrapper forwards it by
// defining Credentials() credentials.Store.
func CredentialsOf(s Store) (credentials.Store, bool) {
	h, ok := s.(credentialsHolder)
	if !ok {
		return nil, false
	}
	return h.Credentials(), true
}

// credentialColumns is the column list every read selects, in scan order;
// credentialMeta leaves out the sealed payload (List).
const (
	credentialMeta = `name, kind, app, access_expires_at, refresh_expires_at, last_refresh_at, last_error,
		generation, key_id, lease_owner, lease_until, updated_at`
	credentialColumns = credentialMeta + `, sealed`
)

// checkCredential refuses a record before any database work.
func checkCredential(verb string, r credentials.Record) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("%s stored credential: %w", verb, err)
	}
	return nil
}

// checkCredentialName refuses a name no record can have.
func checkCredentialName(verb, name string) error {
	if err := credentials.CheckName(name); err != nil {
		return fmt.Errorf("%s stored credential: %w", verb, err)
	}
	return nil
}

// checkCredentialPage settles a page's limit and checks its after.
func checkCredentialPage(verb, after string, limit int) (int, error) {
	if limit < 0 {
		return 0, fmt.Errorf("%s stored credentials: limit %d is negative: %w", verb, limit, credentials.ErrInvalid)
	}
	if len(after) > credentials.MaxNameLength {
		return 0, fmt.Errorf("%s stored credentials: after is %d bytes, longer than %d: %w", verb, len(after), credentials.MaxNameLength, credentials.ErrInvalid)
	}
	if err := checkText("after", after); err != nil {
		return 0, fmt.Errorf("%s stored credentials: %w: %w", verb, err, credentials.ErrInvalid)
	}
	if limit == 0 || limit > credentials.MaxPage {
		limit = credentials.MaxPage
	}
	return limit, nil
}

// checkLeaseOwner refuses an empty or absurd lease owner.
func checkLeaseOwner(name, owner string) error {
	if owner == "" || len(owner) > 200 {
		return fmt.Errorf("lease stored credential %q: owner is empty or longer than 200 bytes: %w", name, credentials.ErrInvalid)
	}
	if err := checkText("owner", owner); err != nil {
		return fmt.Errorf("lease stored credential %q: %w: %w", name, err, credentials.ErrInvalid)
	}
	return nil
}

// microsOrZero is a SQLite time column: 0 for the zero time.
func microsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// timeOrZero reads microsOrZero back.
func timeOrZero(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return fromMicros(us)
}

// nullTime is a PostgreSQL time column: NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Microsecond)
	return &u
}

// fromNullTime reads nullTime back.
func fromNullTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// readCredentials is a backend's read: it runs a query selecting
// credentialColumns (sealed: true) or credentialMeta.
type readCredentials func(ctx context.Context, sealed bool, query string, args ...any) ([]credentials.Record, error)

// getCredential is Get over a backend's read; query selects
// credentialColumns of the row named by its one argument.
func getCredential(ctx context.Context, read readCredentials, query, name string) (credentials.Record, bool, error) {
	if err := checkCredentialName("get", name); err != nil {
		return credentials.Record{}, false, err
	}
	rs, err := read(ctx, true, query, name)
	if err != nil {
		return credentials.Record{}, false, fmt.Errorf("get stored credential %q: %w", name, err)
	}
	if len(rs) == 0 {
		return credentials.Record{}, false, nil
	}
	return rs[0], true, nil
}

// listCredentials is List over a backend's read; query selects
// credentialMeta of a page (after, limit) in byte order.
func listCredentials(ctx context.Context, read readCredentials, query, after string, limit int) ([]credentials.Record, error) {
	limit, err := checkCredentialPage("list", after, limit)
	if err != nil {
		return nil, err
	}
	rs, err := read(ctx, false, query, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list stored credentials: %w", err)
	}
	return rs, nil
}

// staleCredentials is Stale over a backend's read; query selects
// credentialColumns of a page (current key, after, limit) in byte order.
func staleCredentials(ctx context.Context, read readCredentials, query, current, after string, limit int) ([]credentials.Record, error) {
	limit, err := checkCredentialPage("list stale", after, limit)
	if err != nil {
		return nil, err
	}
	rs, err := read(ctx, true, query, current, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list stored credentials not sealed with key %s: %w", current, err)
	}
	return rs, nil
}
