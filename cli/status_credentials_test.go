package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/store"
)

// TestStatusShowsStoredCredentialHealth: `platform status` shows, for a
// platform whose credentials are {stored: NAME} (registered, or in the
// platforms file), the credential's kind, expiries, last refresh, whether
// it needs re-authorization and its last error, clipped; read from the
// store without the keys, never a secret.
func TestStatusShowsStoredCredentialHealth(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dsn := "sqlite://" + filepath.Join(dir, "state.db")
	key, err := credentials.NewKeyEntry(time.Now())
	require.NoError(t, err)
	keys, err := credentials.ParseKeyring(key, "test")
	require.NoError(t, err)

	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	cs, ok := store.CredentialsOf(st)
	require.True(t, ok)
	m := credentials.NewManager(cs, keys, nil, credentials.Options{})
	_, err = m.PutApp(ctx, "app", "cid", "cs-SECRET-1")
	require.NoError(t, err)
	now := time.Now().UTC().Truncate(time.Second)
	_, err = m.PutToken(ctx, "shop-a", credentials.Token{Kind: credentials.KindShopify, App: "app",
		AccessToken: "at-SECRET-2", RefreshToken: "rt-SECRET-3", AccessExpiresAt: now.Add(time.Hour),
		RefreshExpiresAt: now.Add(90 * 24 * time.Hour), ObtainedAt: now, Shop: "acme.myshopify.com"})
	require.NoError(t, err)
	_, err = m.PutToken(ctx, "amazon-eu", credentials.Token{Kind: credentials.KindLWA, App: "app",
		RefreshToken: "rt-SECRET-4", ObtainedAt: now.Add(-time.Hour), TokenURL: "https://api.amazon.com/auth/o2/token"})
	require.NoError(t, err)
	// A refresh the platform refused, as the Manager records it, with an
	// error text longer than status shows.
	r, _, err := cs.Get(ctx, "amazon-eu")
	require.NoError(t, err)
	r.LastError = "refresh token refused: invalid_grant: " + strings.Repeat("x", 300) + "TAIL"
	_, err = cs.Update(ctx, r, r.Generation)
	require.NoError(t, err)

	reg, ok := store.RegistryOf(st)
	require.True(t, ok)
	file, err := config.Parse([]byte(`
platforms:
  reg-shop:
    kind: shopify
    endpoint: https://acme.myshopify.com
    credentials: {stored: shop-a}
  reg-amazon:
    kind: amazon
    endpoint: https://sellingpartnerapi-eu.amazon.com
    credentials: {stored: amazon-eu}
    options: {marketplace_ids: [A1PA6795UKMFR9]}
`))
	require.NoError(t, err)
	for _, p := range file.Platforms {
		e, err := accounts.PlatformEntry(p, accounts.Active)
		require.NoError(t, err)
		_, err = reg.Put(ctx, e, 0)
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	platformsFile := filepath.Join(dir, "platforms.yaml")
	require.NoError(t, os.WriteFile(platformsFile, []byte(`
platforms:
  file-shop:
    kind: shopify
    endpoint: https://other.myshopify.com
    credentials: {stored: never-imported}
  static-shop:
    kind: shopify
    endpoint: https://static.myshopify.com
    credentials: {env: STATIC_TOKEN}
`), 0o600))

	t.Setenv("ORDERSYNC_CREDENTIAL_KEYS", "") // metadata needs no keys
	var out, errOut bytes.Buffer
	app := &App{Out: &out, Err: &errOut, PlatformsFile: platformsFile}
	app.Process.StoreDSN = dsn
	l, err := app.openCredentialLookup(ctx)
	require.NoError(t, err)
	defer l.Close()
	rows := []platformStatus{{Platform: "reg-shop"}, {Platform: "reg-amazon"}, {Platform: "file-shop"}, {Platform: "static-shop"}, {Platform: "unknown"}}
	l.fill(ctx, rows)

	shop := rows[0].Credential
	require.NotNil(t, shop)
	require.Equal(t, platformCredential{Stored: "shop-a", Kind: credentials.KindShopify, AccessExpiresAt: now.Add(time.Hour),
		RefreshExpiresAt: now.Add(90 * 24 * time.Hour), LastRefreshAt: now}, normalize(*shop))
	amazon := rows[1].Credential
	require.True(t, amazon.NeedsReauthorization)
	require.Equal(t, credentials.KindLWA, amazon.Kind)
	require.Contains(t, amazon.LastError, "invalid_grant")
	require.NotContains(t, amazon.LastError, "TAIL", "the last error is clipped")
	require.Contains(t, rows[2].Credential.Error, "not stored")
	require.Nil(t, rows[3].Credential, "a static credential has no stored health")
	require.Nil(t, rows[4].Credential)

	app.Output = "json"
	require.NoError(t, app.renderStatus(rows, now))
	var got []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	c := got[1]["credential"].(map[string]any)
	require.Equal(t, "amazon-eu", c["stored"])
	require.Equal(t, "lwa", c["kind"])
	require.Equal(t, true, c["needs_reauthorization"])
	require.Equal(t, now.Add(time.Hour).Format(time.RFC3339), got[0]["credential"].(map[string]any)["access_expires_at"])
	require.NotContains(t, got[3], "credential")

	out.Reset()
	app.Output = ""
	require.NoError(t, app.renderStatus(rows, now))
	table := out.String()
	require.Regexp(t, `(?m)^PLATFORM\s+CREDENTIAL\s+KIND\s+ACCESS EXPIRES\s+REFRESH EXPIRES\s+LAST REFRESH\s+RE-AUTHORIZE\s+LAST ERROR$`, table)
	require.Regexp(t, `(?m)^reg-shop\s+shop-a\s+shopify\s+\S+ \(in 1h0m0s\)\s+\S+ \(in 90d\)\s+\S+\s+no\s*$`, table)
	require.Regexp(t, `(?m)^reg-amazon\s+amazon-eu\s+lwa\s+-\s+-\s+\S+\s+YES: re-install / re-authorize\s+refresh token refused: invalid_grant`, table)
	require.Regexp(t, `(?m)^file-shop\s+never-imported(\s+-){5}\s+not stored`, table)
	require.NotRegexp(t, `(?m)^static-shop\s+\S+\s+(shopify|-)\s`, strings.SplitN(table, "CREDENTIAL", 2)[1])
	require.NotContains(t, table+errOut.String(), "SECRET")
}

// normalize drops the monotonic clock and location, as JSON would.
func normalize(c platformCredential) platformCredential {
	for _, t := range []*time.Time{&c.AccessExpiresAt, &c.RefreshExpiresAt, &c.LastRefreshAt} {
		*t = t.UTC().Round(0)
	}
	return c
}
