package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConformanceWebhookDeliveries: both stores record a platform's
// webhook delivery id once (a redelivery, from this handle or another, is
// not first), keep ids per platform, move the platform's last event time
// on first deliveries only, forget an id on request (a 503'd event's
// retry counts as new), delete ids past the retention, and refuse ids no
// platform sends.
func TestConformanceWebhookDeliveries(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			skipUnavailable(t, b)
			dsn := b.fresh(t)
			s, other := openStore(t, dsn), openStore(t, dsn)
			ctx := context.Background()
			t0 := time.Now().UTC().Truncate(time.Microsecond)
			const keep = 48 * time.Hour

			_, ok, err := s.WebhookActivity(ctx, "shopify-acme")
			require.NoError(t, err)
			require.False(t, ok, "no event yet")

			first, err := s.RecordWebhookDelivery(ctx, "shopify-acme", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", t0, keep)
			require.NoError(t, err)
			require.True(t, first)
			first, err = other.RecordWebhookDelivery(ctx, "shopify-acme", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", t0.Add(time.Second), keep)
			require.NoError(t, err)
			require.False(t, first, "a redelivery, seen by another handle")
			first, err = s.RecordWebhookDelivery(ctx, "woo-shop", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", t0.Add(time.Second), keep)
			require.NoError(t, err)
			require.True(t, first, "the same id from another platform is another delivery")

			a, ok, err := other.WebhookActivity(ctx, "shopify-acme")
			require.NoError(t, err)
			require.True(t, ok)
			require.True(t, a.LastEventAt.Equal(t0), "the duplicate did not move the last event: %s", a.LastEventAt)
			require.EqualValues(t, 1, a.Events)

			first, err = s.RecordWebhookDelivery(ctx, "shopify-acme", "2", t0.Add(time.Minute), keep)
			require.NoError(t, err)
			require.True(t, first)
			a, _, err = s.WebhookActivity(ctx, "shopify-acme")
			require.NoError(t, err)
			require.True(t, a.LastEventAt.Equal(t0.Add(time.Minute)))
			require.EqualValues(t, 2, a.Events)

			require.NoError(t, other.ForgetWebhookDelivery(ctx, "shopify-acme", "2"))
			first, err = s.RecordWebhookDelivery(ctx, "shopify-acme", "2", t0.Add(2*time.Minute), keep)
			require.NoError(t, err)
			require.True(t, first, "a forgotten delivery counts as new when it comes again")

			// Past the retention the first id is gone: a delivery that late
			// is acted on again (a refetch, harmless).
			first, err = s.RecordWebhookDelivery(ctx, "shopify-acme", "3", t0.Add(keep+time.Second), keep)
			require.NoError(t, err)
			require.True(t, first)
			first, err = s.RecordWebhookDelivery(ctx, "shopify-acme", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", t0.Add(keep+2*time.Second), keep)
			require.NoError(t, err)
			require.True(t, first, "deleted after the retention")

			_, err = s.RecordWebhookDelivery(ctx, "shopify-acme", "", t0, keep)
			require.ErrorContains(t, err, "no delivery id")
			_, err = s.RecordWebhookDelivery(ctx, "shopify-acme", strings.Repeat("x", MaxWebhookDeliveryIDBytes+1), t0, keep)
			require.ErrorContains(t, err, "at most 256")
		})
	}
}
