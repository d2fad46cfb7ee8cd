package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ordersync/ordersync/credentials"
)

// postgresCredentials is the PostgreSQL store's credentials.Store. Every
// write is one statement whose WHERE clause is the compare-and-swap, so
// no transaction is needed: PostgreSQL re-checks the clause on the row's
// newest version when a concurrent writer held it.
type postgresCredentials struct{ s *postgresStore }

// Credentials returns the store's stored credentials (see CredentialsOf).
func (s *postgresStore) Credentials() credentials.Store { return postgresCredentials{s} }

// Get implements credentials.Store.
func (c postgresCredentials) Get(ctx context.Context, name string) (credentials.Record, bool, error) {
	return getCredential(ctx, c.read, `SELECT `+credentialColumns+` FROM credentials WHERE name = $1`, name)
}

// Create implements credentials.Store.
func (c postgresCredentials) Create(ctx context.Context, r credentials.Record) (int64, error) {
	if err := checkCredential("create", r); err != nil {
		return 0, err
	}
	tag, err := c.s.pool.Exec(ctx, `INSERT INTO credentials (`+credentialColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, '', NULL, $9, $10) ON CONFLICT (name) DO NOTHING`,
		r.Name, string(r.Kind), r.App, nullTime(r.AccessExpiresAt), nullTime(r.RefreshExpiresAt),
		nullTime(r.LastRefreshAt), r.LastError, r.KeyID, c.s.now(), r.Sealed)
	if err != nil {
		return 0, wrapCredentialErr("create", r.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, fmt.Errorf("create stored credential %q: the name is taken: %w", r.Name, credentials.ErrConflict)
	}
	return 1, nil
}

// Update implements credentials.Store.
func (c postgresCredentials) Update(ctx context.Context, r credentials.Record, expect int64) (int64, error) {
	if err := checkCredential("update", r); err != nil {
		return 0, err
	}
	tag, err := c.s.pool.Exec(ctx, `UPDATE credentials SET kind = $1, app = $2, access_expires_at = $3, refresh_expires_at = $4,
			last_refresh_at = $5, last_error = $6, generation = generation + 1, key_id = $7, updated_at = $8, sealed = $9
		WHERE name = $10 AND generation = $11`,
		string(r.Kind), r.App, nullTime(r.AccessExpiresAt), nullTime(r.RefreshExpiresAt),
		nullTime(r.LastRefreshAt), r.LastError, r.KeyID, c.s.now(), r.Sealed, r.Name, expect)
	if err != nil {
		return 0, wrapCredentialErr("update", r.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, updateConflict(r.Name, expect)
	}
	return expect + 1, nil
}

// TryLease implements credentials.Store. The lease's expiry is judged by
// this process's clock, like the until it is given.
func (c postgresCredentials) TryLease(ctx context.Context, name, owner string, until time.Time) (bool, error) {
	if err := checkCredentialName("lease", name); err != nil {
		return false, err
	}
	if err := checkLeaseOwner(name, owner); err != nil {
		return false, err
	}
	// One statement: whether the row exists and whether the lease was
	// taken, without a second read racing a Delete.
	var exists, got bool
	err := c.s.pool.QueryRow(ctx, `WITH t AS (
			UPDATE credentials SET lease_owner = $1, lease_until = $2
			WHERE name = $3 AND (lease_owner = '' OR lease_owner = $1 OR lease_until <= $4)
			RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM credentials WHERE name = $3), EXISTS (SELECT 1 FROM t)`,
		owner, until.UTC(), name, c.s.now()).Scan(&exists, &got)
	if err != nil {
		return false, wrapCredentialErr("lease", name, err)
	}
	if !exists && !got {
		return false, fmt.Errorf("lease stored credential %q: no credential has that name: %w", name, credentials.ErrConflict)
	}
	return got, nil
}

// ReleaseLease implements credentials.Store.
func (c postgresCredentials) ReleaseLease(ctx context.Context, name, owner string) error {
	if err := checkCredentialName("release lease of", name); err != nil {
		return err
	}
	if _, err := c.s.pool.Exec(ctx, `UPDATE credentials SET lease_owner = '', lease_until = NULL WHERE name = $1 AND lease_owner = $2`,
		name, owner); err != nil {
		return wrapCredentialErr("release lease of", name, err)
	}
	return nil
}

// List implements credentials.Store. Names compare in byte order (COLLATE
// "C") as on SQLite, so pages agree on both stores.
func (c postgresCredentials) List(ctx context.Context, after string, limit int) ([]credentials.Record, error) {
	return listCredentials(ctx, c.read, `SELECT `+credentialMeta+` FROM credentials WHERE name COLLATE "C" > $1 ORDER BY name COLLATE "C" LIMIT $2`, after, limit)
}

// Delete implements credentials.Store.
func (c postgresCredentials) Delete(ctx context.Context, name string) (bool, error) {
	if err := checkCredentialName("delete", name); err != nil {
		return false, err
	}
	tag, err := c.s.pool.Exec(ctx, `DELETE FROM credentials WHERE name = $1`, name)
	if err != nil {
		return false, wrapCredentialErr("delete", name, err)
	}
	return tag.RowsAffected() > 0, nil
}

// Stale implements credentials.Store.
func (c postgresCredentials) Stale(ctx context.Context, current, after string, limit int) ([]credentials.Record, error) {
	return staleCredentials(ctx, c.read, `SELECT `+credentialColumns+` FROM credentials
		WHERE key_id <> $1 AND name COLLATE "C" > $2 ORDER BY name COLLATE "C" LIMIT $3`, current, after, limit)
}

// read runs a query selecting credentialColumns (sealed: true) or
// credentialMeta.
func (c postgresCredentials) read(ctx context.Context, sealed bool, query string, args ...any) ([]credentials.Record, error) {
	rows, err := c.s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var out []credentials.Record
	var r credentials.Record
	var kind string
	var access, refresh, last, lease *time.Time
	var updated time.Time
	var seal []byte
	dest := []any{&r.Name, &kind, &r.App, &access, &refresh, &last, &r.LastError,
		&r.Generation, &r.KeyID, &r.LeaseOwner, &lease, &updated}
	if sealed {
		dest = append(dest, &seal)
	}
	_, err = pgx.ForEachRow(rows, dest, func() error {
		x := r
		x.Kind = credentials.Kind(kind)
		x.AccessExpiresAt, x.RefreshExpiresAt, x.LastRefreshAt = fromNullTime(access), fromNullTime(refresh), fromNullTime(last)
		x.LeaseUntil, x.UpdatedAt = fromNullTime(lease), updated.UTC()
		if sealed {
			x.Sealed = append([]byte(nil), seal...)
		}
		out = append(out, x)
		return nil
	})
	return out, err
}
