// Package onboarding connects a merchant's account by OAuth, from the
// merchant's browser, on the same `ordersync serve` as the accounts API:
//
//   - Shopify's app install (authorization code grant): Shopify sends the
//     merchant to /oauth/shopify/install with an HMAC-signed query; the
//     handler checks it, sends the merchant to the shop's consent page with
//     a single-use state, and on /oauth/shopify/callback checks the HMAC
//     and state again, exchanges the code for an expiring offline token
//     (expiring=1), checks the granted scopes, stores the token pair as a
//     stored credential and registers (or re-credentials) the platform.
//   - Amazon's SP-API website authorization: /oauth/amazon/start sends the
//     seller to Seller Central's consent page with a single-use state;
//     /oauth/amazon/callback exchanges spapi_oauth_code at Login with
//     Amazon for the seller's refresh token and does the same.
//
// # Trust
//
// These routes carry no bearer token (a merchant's browser calls them), so
// every input is hostile until checked: the HMAC over the query with the
// app's client secret (constant-time), the shop domain (*.myshopify.com
// only), the state (issued here, bound to the browser by a cookie, used
// once, expires after StateTTL), and no redirect ever goes to a host the
// handler did not build itself. Secrets (codes, tokens, client secrets)
// never reach logs, errors or the page shown to the merchant.
package onboarding
