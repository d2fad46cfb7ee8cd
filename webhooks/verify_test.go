package webhooks_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/webhooks"
)

// TestVerify: Shopify's documented example digest checks out, and a wrong
// secret, a changed body, a truncated or non-base64 signature, and an
// empty secret do not.
func TestVerify(t *testing.T) {
	body := []byte(`{"id":820982911946154508,"email":"jon@example.com"}`)
	sig := webhooks.Sign("hush", body)
	require.True(t, webhooks.Verify("hush", body, sig))
	require.True(t, webhooks.Verify("hush", body, " "+sig+" "), "surrounding space is not part of it")
	require.False(t, webhooks.Verify("hash", body, sig))
	require.False(t, webhooks.Verify("hush", append(body, ' '), sig))
	require.False(t, webhooks.Verify("hush", body, sig[:20]))
	require.False(t, webhooks.Verify("hush", body, "not base64!"))
	require.False(t, webhooks.Verify("", body, webhooks.Sign("", body)), "an empty secret verifies nothing")
	// HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog"), base64.
	require.Equal(t, "97yD9DBThCSxMpjmqm+xQ+9NWaFJRhdZl0edvC0aPNg=", webhooks.Sign("key", []byte("The quick brown fox jumps over the lazy dog")))
}

// TestShopDomain: the shop a Shopify account's events must come from.
func TestShopDomain(t *testing.T) {
	require.Equal(t, "acme.myshopify.com", webhooks.ShopDomain("https://ACME.myshopify.com"))
	require.Equal(t, "acme.myshopify.com", webhooks.ShopDomain("http://127.0.0.1:8780/shops/acme"))
	require.Equal(t, "acme.myshopify.com", webhooks.ShopDomain("http://127.0.0.1:8780/shops/acme/"))
}
