package store

import (
	"context"
	"time"
)

// PageProgress keeps one page's partial work between the attempts of its
// activity, keyed by the caller (platform, slice, window and page token),
// so a retry resumes the page instead of fetching it again (issue 23: a
// Shopify page whose follow-up queries could not all run within one
// attempt was fetched from scratch forever). The data holds order data and
// stays in the store, never in Temporal history. Both stores implement it
// (table page_progress, migration 0004).
type PageProgress interface {
	// SavePageProgress keeps data under key until expires, replacing what
	// was kept, and deletes every expired entry.
	SavePageProgress(ctx context.Context, key string, data []byte, expires time.Time) error
	// LoadPageProgress returns what is kept under key, nil when nothing is
	// or it has expired.
	LoadPageProgress(ctx context.Context, key string) ([]byte, error)
	// DeletePageProgress forgets key.
	DeletePageProgress(ctx context.Context, key string) error
}
