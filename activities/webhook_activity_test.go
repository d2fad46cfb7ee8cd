package activities

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/store"
)

// TestWebhookActivityReadsTheStoresLog: the pacing check reads the
// platform's last accepted event and count from the store's webhook log,
// only that platform's; a platform with none, or a store without a log,
// answers the zero value (not live).
func TestWebhookActivityReadsTheStoresLog(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	at := time.Date(2026, 11, 26, 10, 8, 31, 0, time.UTC)
	for i, id := range []string{"d-1", "d-2", "d-2"} { // the redelivery is not counted
		_, err := st.RecordWebhookDelivery(ctx, "shopify-acme", id, at.Add(time.Duration(i)*time.Second), time.Hour)
		require.NoError(t, err)
	}
	a := &Activities{Store: st}

	got, err := a.WebhookActivity(ctx, "shopify-acme")
	require.NoError(t, err)
	require.Equal(t, api.WebhookActivity{LastEventAt: at.Add(time.Second), Events: 2}, got)

	got, err = a.WebhookActivity(ctx, "woo-shop")
	require.NoError(t, err)
	require.Equal(t, api.WebhookActivity{}, got)

	got, err = (&Activities{Store: nil}).WebhookActivity(ctx, "shopify-acme")
	require.NoError(t, err)
	require.Equal(t, api.WebhookActivity{}, got)
}
