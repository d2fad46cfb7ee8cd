package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SavePageProgress implements PageProgress.
func (s *postgresStore) SavePageProgress(ctx context.Context, key string, data []byte, expires time.Time) error {
	if data == nil {
		data = []byte{}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM page_progress WHERE expires_at <= $1`, s.now()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO page_progress (key, data, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at`, key, data, expires)
		return err
	})
	if err != nil {
		return fmt.Errorf("save page progress: %w", err)
	}
	return nil
}

// LoadPageProgress implements PageProgress.
func (s *postgresStore) LoadPageProgress(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM page_progress WHERE key = $1 AND expires_at > $2`, key, s.now()).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load page progress: %w", err)
	}
	return data, nil
}

// DeletePageProgress implements PageProgress.
func (s *postgresStore) DeletePageProgress(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM page_progress WHERE key = $1`, key); err != nil {
		return fmt.Errorf("delete page progress: %w", err)
	}
	return nil
}
