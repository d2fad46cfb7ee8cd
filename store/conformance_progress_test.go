package store

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConformancePageProgress: both stores keep a page's progress under its
// key until it expires, replace it on a new save, forget it on delete, and
// share it between handles (worker processes).
func TestConformancePageProgress(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			skipUnavailable(t, b)
			dsn := b.fresh(t)
			s, other := openStore(t, dsn), openStore(t, dsn)
			now := time.Now().UTC().Truncate(time.Microsecond)
			s.(clockSetter).setClock(func() time.Time { return now })
			other.(clockSetter).setClock(func() time.Time { return now })
			ctx := context.Background()
			p, ok := s.(PageProgress)
			require.True(t, ok, "the %s store keeps page progress", b.name)
			q := other.(PageProgress)

			got, err := p.LoadPageProgress(ctx, "shop/slice/page-1")
			require.NoError(t, err)
			require.Nil(t, got, "nothing kept yet")

			require.NoError(t, p.SavePageProgress(ctx, "shop/slice/page-1", []byte(`{"orders":1}`), now.Add(time.Hour)))
			require.NoError(t, p.SavePageProgress(ctx, "shop/slice/page-2", []byte(`{"orders":2}`), now.Add(time.Minute)))
			got, err = q.LoadPageProgress(ctx, "shop/slice/page-1")
			require.NoError(t, err)
			require.Equal(t, `{"orders":1}`, string(got), "another handle reads it")

			require.NoError(t, q.SavePageProgress(ctx, "shop/slice/page-1", []byte(`{"orders":3}`), now.Add(time.Hour)))
			got, err = p.LoadPageProgress(ctx, "shop/slice/page-1")
			require.NoError(t, err)
			require.Equal(t, `{"orders":3}`, string(got), "a save replaces")

			now = now.Add(2 * time.Minute)
			got, err = p.LoadPageProgress(ctx, "shop/slice/page-2")
			require.NoError(t, err)
			require.Nil(t, got, "an expired entry is never read")

			require.NoError(t, p.DeletePageProgress(ctx, "shop/slice/page-1"))
			got, err = q.LoadPageProgress(ctx, "shop/slice/page-1")
			require.NoError(t, err)
			require.Nil(t, got, "deleted")
			require.NoError(t, p.DeletePageProgress(ctx, "never-saved"), "deleting nothing is fine")
		})
	}
}
