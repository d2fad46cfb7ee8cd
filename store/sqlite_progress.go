package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SavePageProgress implements PageProgress.
func (s *sqliteStore) SavePageProgress(ctx context.Context, key string, data []byte, expires time.Time) error {
	if data == nil {
		data = []byte{}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.withPool(ctx, func(p *sqlitePool) error {
		tx, err := p.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, `DELETE FROM page_progress WHERE expires_at <= ?`, s.now().UnixMicro()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO page_progress (key, data, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at`,
			key, data, expires.UnixMicro()); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("save page progress: %w", err)
	}
	return nil
}

// LoadPageProgress implements PageProgress.
func (s *sqliteStore) LoadPageProgress(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	err := s.withPool(ctx, func(p *sqlitePool) error {
		err := p.db.QueryRowContext(ctx, `SELECT data FROM page_progress WHERE key = ? AND expires_at > ?`,
			key, s.now().UnixMicro()).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			data = nil
			return nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load page progress: %w", err)
	}
	return data, nil
}

// DeletePageProgress implements PageProgress.
func (s *sqliteStore) DeletePageProgress(ctx context.Context, key string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	err := s.withPool(ctx, func(p *sqlitePool) error {
		_, err := p.db.ExecContext(ctx, `DELETE FROM page_progress WHERE key = ?`, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete page progress: %w", err)
	}
	return nil
}
