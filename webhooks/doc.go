// Package webhooks is the fast path of ordersync: the intake of platform
// webhooks on `ordersync serve` (Shopify orders/create, orders/updated,
// orders/cancelled; WooCommerce order.created, order.updated, ...) and the
// upkeep of the Shopify subscriptions that send them.
//
// # Intake
//
// A platform posts to Prefix + <kind>/<platform name>, e.g.
// /webhooks/shopify/shopify-acme. The route is public (platforms call it)
// and checked instead of the bearer token by the platform's signature: a
// base64 HMAC-SHA256 of the raw body, compared in constant time, with the
// account's webhook secret (Secrets). The steps, each refusing with its own
// status and counted (metrics.Webhooks):
//
//  1. the account: an active platform of that kind and name (404);
//  2. the body, read whole before anything parses it, at most MaxBody
//     bytes (413);
//  3. the signature (401 unsigned or forged);
//  4. Shopify: X-Shopify-Shop-Domain is the account's shop (401), since one
//     app's secret signs the events of every shop that installed it;
//  5. the order id in the body and the delivery id header (400);
//  6. the delivery id, recorded in the store's webhook log: a redelivery is
//     answered 200 and does nothing;
//  7. the order, queued for a refetch; the answer is 200 at once, before
//     any Temporal work. A full queue answers 503 (and forgets the
//     delivery id), so the platform retries: an accepted event is never
//     dropped silently.
//
// An event is a hint, never data: its body is not stored. Workers take the
// queue and start the order's Refetch workflow by signal-with-start
// (orderops.RefetchRequest.Again), so the stored version is what the
// platform's API says, the account's rate limit holds, and a burst of
// events for one order is one fetch (one queue entry per order, one
// workflow per order) plus at most one more for events that arrived while
// it fetched.
//
// # Subscriptions
//
// Sync creates the Shopify subscriptions (Topics) that point at the
// account's intake URL through the Admin GraphQL API, and creates again
// one Shopify deleted (Shopify deletes a subscription after 8 consecutive
// failed deliveries). SyncWoo does the same for WooCommerce webhooks
// (WooTopics) through the REST API, activating one WooCommerce disabled.
// Polling stays the no-loss guarantee: the fast path only makes changes
// arrive sooner.
package webhooks
