package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// Kinds the intake serves, as in the URL and the platform's kind.
const (
	KindShopify     = "shopify"
	KindWooCommerce = "woocommerce"
)

// Headers the platforms send.
const (
	ShopifySignatureHeader = "X-Shopify-Hmac-Sha256"
	ShopifyShopHeader      = "X-Shopify-Shop-Domain"
	ShopifyTopicHeader     = "X-Shopify-Topic"
	ShopifyWebhookIDHeader = "X-Shopify-Webhook-Id"
	ShopifyEventIDHeader   = "X-Shopify-Event-Id"
	WooSignatureHeader     = "X-WC-Webhook-Signature"
	WooTopicHeader         = "X-WC-Webhook-Topic"
	WooDeliveryIDHeader    = "X-WC-Webhook-Delivery-ID"
	WooSourceHeader        = "X-WC-Webhook-Source"
)

// Sign is the signature both platforms send: the base64 HMAC-SHA256 of
// body keyed with secret (the simulator and tests sign with it).
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify says whether sig is body's signature with secret, compared in
// constant time on the decoded bytes. An empty secret verifies nothing.
func Verify(secret string, body []byte, sig string) bool {
	if secret == "" {
		return false
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sig))
	if err != nil || len(got) != sha256.Size {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}
