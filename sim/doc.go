// Package sim is a platform simulator: an HTTP server that plays N shops of
// one e-commerce platform, so ordersync can be tested and demonstrated without
// a real account. Orders are created and updated over time, become visible
// late, are listed by update time with cursor paging, and the server answers
// with rate limits (429) and injected faults. An admin API returns the ground
// truth so tests and `ordersync verify` can prove that no order was lost.
//
// # Determinism
//
// The world is derived from Config.Seed and the clock readings alone; it is
// advanced lazily to Config.Clock on every request. Creation times and order
// seeds come from one random stream per shop in time order, and everything
// else about an order (its updates, visibility delays, line items, customer)
// is re-derived from the order's own seed, so the world at time t is the same
// whichever readings led there. Every time-dependent behaviour (world, rate
// limit, request-rate statistics) reads Config.Clock, so a test with a fake
// clock gets the same answers on every run; only hangs sleep in real time,
// because their purpose is to trip a real client timeout.
//
// # Orders and visibility
//
// Each order gets 0..MaxUpdates updates within UpdateSpread of its creation
// (pending -> paid -> shipped -> delivered, with cancellations and refunds;
// the total may change). Every version has visible_at = updated_at +
// rand[0, Late], clamped so an order's versions become visible in order. The
// list shows, for each order, its newest visible version, with that version's
// updated_at: a late version appears in an older window than the time it
// became visible, which is what overlapping requests are for.
//
// # HTTP API
//
//	GET /shops/{shop}/orders?updated_from=T&updated_to=T[&limit=N][&page_token=P]
//	    Authorization: Bearer <shop token>
//	    200 {"orders":[{"id","status","created_at","updated_at","currency","total",
//	         "line_items":[{"sku","title","qty","price"}],
//	         "customer":{"name","email","phone","address":{"street","city","zip","country"}}}],
//	         "next_page_token":"..."}   (token absent on the last page)
//	    Orders whose shown version has updated_at in [updated_from, updated_to),
//	    sorted by (updated_at, id); ids are fixed-width decimal strings. T is
//	    RFC3339 (nanoseconds allowed), limit is 1..MaxPageSize (default 50).
//	    The token carries the window and the last (updated_at, id) returned; the
//	    next page continues strictly after it.
//	    400 bad window, limit or token; 401 bad token; 404 unknown shop;
//	    429 with Retry-After (whole seconds) and X-RateLimit-Limit (requests/s);
//	    faults: 503, a hang, a malformed 200 body, an empty page with a token.
//	    Every error body is {"error":"..."}.
//
//	POST /shops/{shop}/admin/api/{version}/graphql.json
//	    X-Shopify-Access-Token: <shop token>
//	    Shopify's GraphQL Admin API as ordersync's shopify connector uses it,
//	    over the same orders: queries of orders ($first, $after, $query with
//	    updated_at ranges in quoted dates, compared in whole seconds) or
//	    order(id:) (null for an unknown id), answered with exactly the
//	    fields selected from the full order (customer, addresses, shipping
//	    lines, taxes, discounts, notes, refunds, fulfilments: shopify_order.go)
//	    and charged Shopify's cost for them; over 1,000 points is
//	    MAX_COST_EXCEEDED, an unknown field undefinedField. Ids are global
//	    ids (gid://shopify/Order/<id>), nested line pages hold at most
//	    ShopifyLinePage lines, every answer carries extensions.cost, and a
//	    per-shop bucket of points (ShopifyCost) answers THROTTLED (HTTP 200)
//	    when it cannot hold a query's requested cost. Details in shopify.go.
//	    Also webhookSubscriptionCreate, webhookSubscriptions and
//	    webhookSubscriptionDelete: with Config.Webhooks.Secret set, signed
//	    orders/create, updated and cancelled deliveries to each
//	    subscription, retried, deleted after failures, with duplicates,
//	    drops, delays and forgeries (webhooks.go).
//
//	GET /admin/shops/{shop}/truth[?as_of=T][&lines=true]   Authorization: Bearer <AdminToken>
//	    200 {"shop","as_of","orders":[{"id","updated_at","status","total"}]} by id:
//	    every order's newest version visible at as_of (default: now; not in the future).
//	    lines=true adds each order's "lines":[{"sku","title","quantity","unit_price","currency"}],
//	    in the list's order (a line's id is its 1-based position).
//
//	GET /admin/stats                             Authorization: Bearer <AdminToken>
//	    200 {"as_of","shops":{"<shop>":{"requests","rate_limited","throttled","unauthorized",
//	         "bad_requests","pages","orders_served",
//	         "faults":{"err_5xx","hang","malformed","empty_page"},
//	         "orders","visible_orders","versions","peak_requests_per_second"}}}
//
// An empty AdminToken disables the admin API (403).
//
// # Amazon surface
//
// Every shop is also an Amazon seller account speaking SP-API Orders
// v2026-01-01 (amazon.go), so kind amazon can be tested end to end:
//
//	POST /shops/{shop}/amazon/auth/o2/token      Login with Amazon
//	    form grant_type=refresh_token&refresh_token=<shop token>&client_id=..&client_secret=..
//	    200 {"access_token":"Atza|...","token_type":"bearer","expires_in":3600}
//	    400 {"error":"invalid_grant","error_description":...}; 401 invalid_client
//
//	GET /shops/{shop}/amazon/orders/2026-01-01/orders?lastUpdatedAfter=T[&lastUpdatedBefore=T]
//	        [&marketplaceIds=A,B][&maxResultsPerPage=N][&includedData=D,E][&paginationToken=P]
//	    x-amz-access-token: <access token>
//	    200 {"orders":[{"orderId","createdTime","lastUpdatedTime","salesChannel",
//	         "orderItems":[{"orderItemId","quantityOrdered","product":{"asin","title","sellerSku",
//	         "price":{"unitPrice":{"amount","currencyCode"}}}}], ...}],
//	         "pagination":{"nextToken"}, "lastUpdatedBefore"}
//	    The same orders as the shop's own API, same ids and update times;
//	    both bounds inclusive; T is ISO 8601 in UTC. lastUpdatedBefore must
//	    lie 2 minutes before now (default: now - 2m). includedData adds
//	    "fulfillment" (FULFILLMENT: status PENDING, UNSHIPPED, SHIPPED,
//	    CANCELLED), "proceeds" (PROCEEDS: grandTotal = the sim's total, with
//	    ITEM and SHIPPING breakdowns for a first version), "packages"
//	    (PACKAGES: a shipped order's parcel and tracking number), "buyer"
//	    (BUYER) and "recipient" (RECIPIENT); other datasets are accepted and
//	    add nothing. A shop sells in one marketplace, by its
//	    currency (AmazonMarketplaceIDs, Simulator.AmazonMarketplace); asking
//	    for others lists nothing. Later pages repeat lastUpdatedAfter (and
//	    lastUpdatedBefore, if the first page had it) with paginationToken,
//	    which expires Config.AmazonTokenTTL after it was issued.
//	    400 {"errors":[{"code":"InvalidInput","message","details"}]} for a bad
//	    request, a token of another search, or an expired token (the text
//	    Config.AmazonTokenError selects: "The paginationToken has
//	    expired.", "…is not valid…", "Invalid Input", a null message);
//	    403 Unauthorized, also for an access token older than
//	    Config.AmazonAccessTTL although expires_in says an hour; 429
//	    QuotaExceeded without Retry-After; x-amzn-RateLimit-Limit on every
//	    answer; the same faults as the list endpoint.
//
//	GET /shops/{shop}/amazon/orders/2026-01-01/orders/{orderId}[?includedData=D,E]
//	    getOrder: 200 {"order":{...}} as searchOrders renders it, on the same
//	    bucket; 404 NotFound "The resource specified does not exist." for an
//	    id the seller does not have; 400, 403 and 429 as above.
//
// # OAuth: installs, token endpoints and their worst cases
//
// Both surfaces also play their platform's authorization (shopify_oauth.go,
// amazon_oauth.go, oauth.go), so a credential manager that refreshes
// stored tokens can be tested against documented behaviour. Apps are
// registered first (Simulator.RegisterShopifyApp / RegisterAmazonApp, or
// the admin API); the merchant or seller approves at once.
//
//	GET  /shops/{shop}/admin/oauth/authorize?client_id&scope&redirect_uri&state
//	     302 to redirect_uri with code, hmac, host, shop, state, timestamp
//	     (hmac: ShopifyQueryHMAC, keyed with the client secret).
//	     Simulator.ShopifyInstallURL gives the install request (app URL
//	     with hmac, host, shop, timestamp).
//	POST /shops/{shop}/admin/oauth/access_token   JSON or form
//	     code [+ expiring=1] | grant_type=refresh_token | token exchange
//	     (urn:ietf:params:oauth:grant-type:token-exchange, subject_token =
//	     a non-expiring offline token, expiring=1)
//	     -> access_token, scope[, expires_in, refresh_token, refresh_token_expires_in]
//	     A refresh rotates both tokens; the previous refresh token stays
//	     valid until the replacement is used (a retry returns the same
//	     replacement), then answers 400 invalid_grant. Wrong client
//	     credentials: 401 invalid_client.
//	GET  /shops/{shop}/admin/oauth/access_scopes.json, /shops/{shop}/admin/api/{version}/shop.json
//	     REST Admin API calls; with GraphQL they answer an expired, revoked
//	     or unknown token 401 {"errors":"[API] Invalid API key or access
//	     token (unrecognized login or wrong password)"}.
//	GET  /shops/{shop}/amazon/apps/authorize/consent?application_id&state[&version=beta][&redirect_uri]
//	     302 to the redirect URI with state, selling_partner_id,
//	     spapi_oauth_code (five minutes, once); MD1000, MD5101, MD5110 pages.
//	POST /shops/{shop}/amazon/auth/o2/token
//	     grant_type=authorization_code (code, redirect_uri, client_id,
//	     client_secret) or refresh_token -> access_token, refresh_token,
//	     token_type, expires_in; a revoked refresh token: 400 invalid_grant.
//	     SP-API answers an expired access token 403 Unauthorized "The
//	     access token you provided has expired.".
//
// Lifetimes: Config.ShopifyAccessTTL (1h), ShopifyRefreshTTL (90 days),
// AmazonAccessTTL (1h, while expires_in still says 3600); SetTokenTTL
// changes them for tokens issued from then on. Worst cases, per surface
// (SurfaceShopify, SurfaceAmazon), from Go or the admin API
// (/admin/oauth/..., AdminClient):
//
//   - SetTokenFaults(TokenFaults{RateLimited, Err5xx, DropAnswers}): the
//     next N token requests answer 429 or 503, or issue their tokens and
//     drop the connection (the lost refresh answer);
//   - ExpireAccessTokens: every access token lapses now, mid-window;
//   - RevokeRefreshToken, RevokeShopifyInstall (uninstall: every token of
//     the app, or with client "" also the shop's static token),
//     RevokeAmazonAuthorization.
//
// Accounting: AuthStats (tokens issued, grants by type, retries, faults,
// 401/403 answers to issued tokens and to tokens a refresh issued, and per
// refresh token by TokenFingerprint how often it was spent) and
// RefreshSpent(token).
package sim
