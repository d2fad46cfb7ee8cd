// Package credentials owns the secrets ordersync sends to platforms: where
// a connector gets the secret for each request (Source), and the stored
// credential kind for rotating OAuth tokens (Shopify's expiring offline
// tokens, Login with Amazon), encrypted at rest with keys the operator
// holds outside the store.
package credentials
