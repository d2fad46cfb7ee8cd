package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/store"
)

// PageProgressTTL bounds how long a page's kept progress is resumed: a page
// retried later than this is listed again from its start. An hour covers
// the attempts and slot waits of a page under the smallest bucket, and no
// platform cursor kept in it is that short-lived in practice; an expired
// cursor is refused and the page is listed again.
const PageProgressTTL = time.Hour

// pageProgress is the page's durable scratch space in the store, when the
// store keeps one (both of ordersync's do), keyed by platform, slice,
// window and page token: the next attempt of the same page finds it, and
// no other page does.
func (a *Activities) pageProgress(in FetchPageInput) connectors.PageProgress {
	ps, ok := a.Store.(store.PageProgress)
	if !ok {
		return nil
	}
	h := sha256.New()
	for _, part := range []string{in.Platform.Name, in.SliceID, in.From.UTC().Format(time.RFC3339Nano), in.To.UTC().Format(time.RFC3339Nano), in.Token} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return storeProgress{s: ps, key: in.Platform.Name + "/" + hex.EncodeToString(h.Sum(nil))}
}

// storeProgress is connectors.PageProgress on the store.
type storeProgress struct {
	s   store.PageProgress
	key string
}

func (p storeProgress) Load(ctx context.Context) ([]byte, error) {
	return p.s.LoadPageProgress(ctx, p.key)
}

func (p storeProgress) Save(ctx context.Context, data []byte) error {
	return p.s.SavePageProgress(ctx, p.key, data, time.Now().Add(PageProgressTTL))
}

func (p storeProgress) Clear(ctx context.Context) error { return p.s.DeletePageProgress(ctx, p.key) }

// StoreProgress is the page progress of key in s, for tests and tools that
// call a connector without the activity.
func StoreProgress(s store.PageProgress, key string) connectors.PageProgress {
	return storeProgress{s: s, key: key}
}

// countPointsWait counts a page attempt that found no room in its
// platform's points bucket.
func (a *Activities) countPointsWait(platform string, err error) {
	var nr *quota.NoRoomError
	if errors.As(err, &nr) {
		a.Metrics.PointsWait(platform, nr.Wait)
	}
}
