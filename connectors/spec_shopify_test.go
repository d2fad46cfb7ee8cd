package connectors_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

func TestShopifyRESTKeepsItsLimits(t *testing.T) {
	const yaml = "platforms:\n  x:\n    credentials: {env: X}\n    kind: shopify\n    endpoint: https://a.myshopify.com\n    max_pages: 200\n    options: {api: rest}\n"
	f, err := config.Parse([]byte(yaml))
	require.NoError(t, err, "the GraphQL cost and pagination limits are not REST's")
	p, _ := f.Get("x")
	require.Equal(t, 250, p.PageSize)
}

func TestWarnings(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	f, err := config.Parse([]byte(`
platforms:
  legacy:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: A}
    start: "-720h"
    options: {api: rest}
  deep:
    kind: shopify
    endpoint: https://b.myshopify.com
    credentials: {env: B}
    start: "2026-01-01T00:00:00Z"
  recent:
    kind: shopify
    endpoint: https://c.myshopify.com
    credentials: {env: C}
    start: "-1000h"
  other:
    kind: sim
    endpoint: http://127.0.0.1:8780/shops/acme
    credentials: {env: D}
`))
	require.NoError(t, err, "warnings never fail a load")
	get := func(name string) config.Platform { p, _ := f.Get(name); return p }
	lines := func(ps []config.Problem) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.String())
		}
		return out
	}
	require.Equal(t, []string{`platform "legacy": field "options.api": the REST Admin API is legacy (Shopify, October 2024); api: graphql reads the same orders with the same ids, so the platform can move without refetching (docs/connectors.md)`},
		lines(get("legacy").WarningsAt(now)))
	require.Equal(t, []string{`platform "deep": field "start": reaches back 323 days: Shopify lists orders older than 60 days only to apps with the read_all_orders scope, and leaves them out without an error otherwise`},
		lines(get("deep").WarningsAt(now)))
	require.Empty(t, get("recent").WarningsAt(now), "41 days need no read_all_orders")
	require.Empty(t, get("other").WarningsAt(now))
	require.Contains(t, f.Warnings(), get("legacy").WarningsAt(now)[0], "the file's warnings are its platforms'")

	december := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, []string{`platform "recent": field "credentials": env:C holds a static token: from 2027-01-01 Shopify rejects non-expiring offline tokens of public apps (custom apps are exempt); ` +
		`for a public app move the shop to a stored expiring token (ordersync credentials migrate-shopify, or re-install through ordersync serve; docs/credentials.md)`},
		lines(get("recent").WarningsAt(december)), "a month before Shopify's cut-off a static token is named")
	stored := get("recent")
	stored.Credentials = config.CredentialRef{Stored: "c"}
	require.Empty(t, stored.WarningsAt(december), "a stored (expiring) token needs no warning")
	require.Empty(t, get("other").WarningsAt(december), "only Shopify has the cut-off")
}

func TestShopifyBulkDefaults(t *testing.T) {
	f, err := config.Parse([]byte(`
platforms:
  old:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: X}
    options: {api_version: "2025-10"}
  rest:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: X}
    options: {api: rest}
  off:
    kind: shopify
    endpoint: https://a.myshopify.com
    credentials: {env: X}
    options: {bulk_backfill: false, bulk_min_span: 2h}
`))
	require.NoError(t, err)
	get := func(name string) connectors.ShopifyOptions {
		p, ok := f.Get(name)
		require.True(t, ok)
		o, err := config.KindOptions[connectors.ShopifyOptions](p)
		require.NoError(t, err)
		return o
	}
	old := get("old")
	require.Equal(t, 1, old.BulkConcurrency, "one bulk query at a time before 2026-01")
	require.True(t, old.UseBulk(24*time.Hour))
	require.False(t, old.UseBulk(23*time.Hour), "narrower than bulk_min_span")
	require.False(t, get("rest").UseBulk(30*24*time.Hour), "REST has no bulk queries")
	off := get("off")
	require.Equal(t, config.Duration(2*time.Hour), off.BulkMinSpan)
	require.False(t, off.UseBulk(30*24*time.Hour))
}
