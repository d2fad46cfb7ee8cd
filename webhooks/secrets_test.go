package webhooks_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/webhooks"
)

// TestStoredSecrets: the stored app webhooks-<platform> wins for any kind;
// a Shopify account with a stored token falls back to its app's client
// secret; an account with neither gets ErrNoSecret naming what to set;
// without keys nothing can be read; a read is cached for TTL.
func TestStoredSecrets(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "orders.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	cs, ok := store.CredentialsOf(st)
	require.True(t, ok)
	entry, err := credentials.NewKeyEntry(time.Now())
	require.NoError(t, err)
	keys, err := credentials.ParseKeyring(entry, "test")
	require.NoError(t, err)
	m := credentials.NewManager(cs, keys, nil, credentials.Options{})

	_, err = m.PutApp(ctx, "shopify-app", "client-id", "shpss_app_secret")
	require.NoError(t, err)
	_, err = m.PutApp(ctx, webhooks.SecretAppName("woo-shop"), "woocommerce", "woo-hook-secret")
	require.NoError(t, err)
	_, err = m.PutToken(ctx, "acme-token", credentials.Token{Kind: credentials.KindShopify, App: "shopify-app", AccessToken: "a", RefreshToken: "r", Shop: "acme.myshopify.com"})
	require.NoError(t, err)

	now := time.Now()
	s := &webhooks.StoredSecrets{Manager: m, Now: func() time.Time { return now }}
	acme := config.Platform{Name: "shopify-acme", Kind: "shopify", Credentials: config.CredentialRef{Stored: "acme-token"}}
	got, err := s.WebhookSecret(ctx, acme)
	require.NoError(t, err)
	require.Equal(t, "shpss_app_secret", got, "the app of its stored token")

	got, err = s.WebhookSecret(ctx, config.Platform{Name: "woo-shop", Kind: "woocommerce", Credentials: config.CredentialRef{Env: "WOO"}})
	require.NoError(t, err)
	require.Equal(t, "woo-hook-secret", got)

	_, err = s.WebhookSecret(ctx, config.Platform{Name: "shopify-static", Kind: "shopify", Credentials: config.CredentialRef{Env: "TOKEN"}})
	require.ErrorIs(t, err, webhooks.ErrNoSecret)
	require.ErrorContains(t, err, "credentials app set webhooks-shopify-static")

	// The explicit app wins over the token's app; seen after the TTL.
	_, err = m.PutApp(ctx, webhooks.SecretAppName("shopify-acme"), "client-id", "shpss_explicit")
	require.NoError(t, err)
	got, err = s.WebhookSecret(ctx, acme)
	require.NoError(t, err)
	require.Equal(t, "shpss_app_secret", got, "cached")
	now = now.Add(2 * time.Minute)
	got, err = s.WebhookSecret(ctx, acme)
	require.NoError(t, err)
	require.Equal(t, "shpss_explicit", got)

	_, err = (&webhooks.StoredSecrets{}).WebhookSecret(ctx, acme)
	require.ErrorIs(t, err, webhooks.ErrNoSecret)
	require.ErrorContains(t, err, "ORDERSYNC_CREDENTIAL_KEYS")
}
