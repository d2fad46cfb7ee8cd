package onboarding_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/accountstest"
	"github.com/ordersync/ordersync/onboarding"
	"github.com/ordersync/ordersync/sim"
)

// Both flows run against the simulator's install, consent and token
// endpoints, played as Shopify and Amazon document them, with a browser
// that follows every redirect and keeps cookies, as a merchant's does.
func TestFlowsAgainstTheSimulator(t *testing.T) {
	s, err := sim.New(sim.Config{Seed: 7, Shops: []sim.ShopConfig{{Name: "acme", Token: "acme-static-token-0123456789"}}, HistoryOrders: 10, History: time.Hour})
	require.NoError(t, err)
	srv, err := s.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })

	mux := http.NewServeMux()
	front := httptest.NewServer(mux)
	t.Cleanup(front.Close)
	require.NoError(t, s.RegisterShopifyApp(sim.ShopifyApp{ClientID: clientID, ClientSecret: clientSecret, Scopes: []string{"read_orders"},
		AppURL: front.URL + "/oauth/shopify/install", RedirectURIs: []string{front.URL + "/oauth/shopify/callback"}}))
	require.NoError(t, s.RegisterAmazonApp(sim.AmazonApp{ApplicationID: "amzn1.sp.solution.sim", ClientID: clientID, ClientSecret: clientSecret,
		RedirectURIs: []string{front.URL + "/oauth/amazon/callback"}}))

	creds := &fakeCreds{}
	reg := accounts.NewMemory()
	h, err := onboarding.New(onboarding.Config{
		PublicURL: front.URL,
		Shopify:   &onboarding.ShopifyConfig{App: "public-app", ShopURL: srv.URL + "/shops/{handle}"},
		Amazon: &onboarding.AmazonConfig{App: "public-app", ApplicationID: "amzn1.sp.solution.sim", Draft: true,
			ConsentURL: srv.URL + "/shops/acme/amazon/apps/authorize/consent", TokenURL: srv.URL + "/shops/acme/amazon/auth/o2/token",
			Settings: map[string]any{"endpoint": srv.ShopURL("acme") + "/amazon", "options": map[string]any{"marketplace_ids": []any{"ATVPDKIKX0DER"}}}},
	}, creds, &accounts.Service{Registry: reg, Engine: &accountstest.Engine{}})
	require.NoError(t, err)
	mux.Handle(onboarding.Prefix, h)

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	merchant := &http.Client{Jar: jar}

	install, err := s.ShopifyInstallURL(clientID, "acme")
	require.NoError(t, err)
	resp, body := get(t, merchant, install)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	g, ok := creds.grant("shopify-acme")
	require.True(t, ok)
	require.NotEmpty(t, g.RefreshToken, "an expiring offline token, with its refresh token")
	require.Equal(t, time.Hour, g.AccessTTL)
	require.Equal(t, srv.URL+"/shops/acme/admin/oauth/access_token", g.TokenURL)
	_, found, err := reg.Get(context.Background(), accounts.ClassPlatform, "shopify-acme")
	require.NoError(t, err)
	require.True(t, found)

	resp, body = get(t, merchant, front.URL+"/oauth/amazon/start")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	seller := "amazon-" + strings.ToLower(s.SellingPartnerID("acme"))
	g, ok = creds.grant(seller)
	require.True(t, ok, "seller %s stored: %s", seller, body)
	require.Equal(t, "lwa", g.Kind)
	require.NotEmpty(t, g.RefreshToken)

	stats := s.AuthStats()
	require.Zero(t, stats.Shopify.GrantErrors)
	require.Zero(t, stats.Amazon.GrantErrors)
}
