package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/credentials"
)

// sqliteCredentials is the SQLite store's credentials.Store.
type sqliteCredentials struct{ s *sqliteStore }

// Credentials returns the store's stored credentials (see CredentialsOf).
func (s *sqliteStore) Credentials() credentials.Store { return sqliteCredentials{s} }

// Get implements credentials.Store.
func (c sqliteCredentials) Get(ctx context.Context, name string) (credentials.Record, bool, error) {
	return getCredential(ctx, c.read, `SELECT `+credentialColumns+` FROM credentials WHERE name = ?`, name)
}

// Create implements credentials.Store.
func (c sqliteCredentials) Create(ctx context.Context, r credentials.Record) (int64, error) {
	if err := checkCredential("create", r); err != nil {
		return 0, err
	}
	now := c.s.now().UnixMicro()
	err := c.s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO credentials (`+credentialColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, '', 0, ?, ?) ON CONFLICT (name) DO NOTHING`,
			r.Name, string(r.Kind), r.App, microsOrZero(r.AccessExpiresAt), microsOrZero(r.RefreshExpiresAt),
			microsOrZero(r.LastRefreshAt), r.LastError, r.KeyID, now, r.Sealed)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("create stored credential %q: the name is taken: %w", r.Name, credentials.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return 0, wrapCredentialErr("create", r.Name, err)
	}
	return 1, nil
}

// Update implements credentials.Store.
func (c sqliteCredentials) Update(ctx context.Context, r credentials.Record, expect int64) (int64, error) {
	if err := checkCredential("update", r); err != nil {
		return 0, err
	}
	now := c.s.now().UnixMicro()
	err := c.s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE credentials SET kind = ?, app = ?, access_expires_at = ?, refresh_expires_at = ?,
				last_refresh_at = ?, last_error = ?, generation = generation + 1, key_id = ?, updated_at = ?, sealed = ?
			WHERE name = ? AND generation = ?`,
			string(r.Kind), r.App, microsOrZero(r.AccessExpiresAt), microsOrZero(r.RefreshExpiresAt),
			microsOrZero(r.LastRefreshAt), r.LastError, r.KeyID, now, r.Sealed, r.Name, expect)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return updateConflict(r.Name, expect)
		}
		return nil
	})
	if err != nil {
		return 0, wrapCredentialErr("update", r.Name, err)
	}
	return expect + 1, nil
}

// TryLease implements credentials.Store.
func (c sqliteCredentials) TryLease(ctx context.Context, name, owner string, until time.Time) (bool, error) {
	if err := checkCredentialName("lease", name); err != nil {
		return false, err
	}
	if err := checkLeaseOwner(name, owner); err != nil {
		return false, err
	}
	var got bool
	err := c.s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE credentials SET lease_owner = ?, lease_until = ?
			WHERE name = ? AND (lease_owner = '' OR lease_owner = ? OR lease_until <= ?)`,
			owner, until.UnixMicro(), name, owner, c.s.now().UnixMicro())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 1 {
			got = true
			return nil
		}
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM credentials WHERE name = ?`, name).Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("lease stored credential %q: no credential has that name: %w", name, credentials.ErrConflict)
		} else if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return false, wrapCredentialErr("lease", name, err)
	}
	return got, nil
}

// ReleaseLease implements credentials.Store.
func (c sqliteCredentials) ReleaseLease(ctx context.Context, name, owner string) error {
	if err := checkCredentialName("release lease of", name); err != nil {
		return err
	}
	err := c.s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE credentials SET lease_owner = '', lease_until = 0 WHERE name = ? AND lease_owner = ?`, name, owner)
		return err
	})
	if err != nil {
		return wrapCredentialErr("release lease of", name, err)
	}
	return nil
}

// List implements credentials.Store.
func (c sqliteCredentials) List(ctx context.Context, after string, limit int) ([]credentials.Record, error) {
	return listCredentials(ctx, c.read, `SELECT `+credentialMeta+` FROM credentials WHERE name > ? ORDER BY name LIMIT ?`, after, limit)
}

// Delete implements credentials.Store.
func (c sqliteCredentials) Delete(ctx context.Context, name string) (bool, error) {
	if err := checkCredentialName("delete", name); err != nil {
		return false, err
	}
	var found bool
	err := c.s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM credentials WHERE name = ?`, name)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		found = n > 0
		return err
	})
	if err != nil {
		return false, wrapCredentialErr("delete", name, err)
	}
	return found, nil
}

// Stale implements credentials.Store.
func (c sqliteCredentials) Stale(ctx context.Context, current, after string, limit int) ([]credentials.Record, error) {
	return staleCredentials(ctx, c.read, `SELECT `+credentialColumns+` FROM credentials WHERE key_id <> ? AND name > ? ORDER BY name LIMIT ?`, current, after, limit)
}

// read runs a query selecting credentialColumns (sealed: true) or
// credentialMeta.
func (c sqliteCredentials) read(ctx context.Context, sealed bool, query string, args ...any) ([]credentials.Record, error) {
	return queryAll(ctx, c.s, query, args, func(rows *sql.Rows) (credentials.Record, error) {
		var r credentials.Record
		var kind string
		var access, refresh, last, lease, updated int64
		dest := []any{&r.Name, &kind, &r.App, &access, &refresh, &last, &r.LastError,
			&r.Generation, &r.KeyID, &r.LeaseOwner, &lease, &updated}
		if sealed {
			dest = append(dest, &r.Sealed)
		}
		if err := rows.Scan(dest...); err != nil {
			return r, err
		}
		r.Kind = credentials.Kind(kind)
		r.AccessExpiresAt, r.RefreshExpiresAt, r.LastRefreshAt = timeOrZero(access), timeOrZero(refresh), timeOrZero(last)
		r.LeaseUntil, r.UpdatedAt = timeOrZero(lease), fromMicros(updated)
		return r, nil
	})
}

// updateConflict is Update's error when no row has the expected generation.
func updateConflict(name string, expect int64) error {
	return fmt.Errorf("update stored credential %q: expected generation %d, stored is another or none: %w", name, expect, credentials.ErrConflict)
}

// wrapCredentialErr adds the verb and name to a database error; the
// errors the checks made already carry both.
func wrapCredentialErr(verb, name string, err error) error {
	if errors.Is(err, credentials.ErrConflict) || errors.Is(err, credentials.ErrInvalid) {
		return err
	}
	return fmt.Errorf("%s stored credential %q: %w", verb, name, err)
}
