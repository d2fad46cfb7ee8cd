package connectors

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
)

func init() { register("amazon", newAmazon) }

// Kind amazon lists a seller's orders through the SP-API Orders API, in one
// of two versions (options.api_version):
//
//   - 2026-01-01 (the default): searchOrders, every order with its items
//     (amazon_2026.go);
//   - v0 (legacy, removed by Amazon on config.AmazonV0Removal): getOrders,
//     orders without items (amazon_v0.go).
//
// Both send an LWA access token in x-amz-access-token (SP-API needs no AWS
// Signature v4 since October 2023), both forbid windows ending less than
// two minutes before now, and both report the usage plan in
// x-amzn-RateLimit-Limit. Order ids are the same in both, so a platform can
// move from one to the other without losing or duplicating an order.

// amazonMinSettle is how far behind now a window must end: getOrders and
// searchOrders want lastUpdatedBefore "at least 2 minutes before the time of
// the request", and most order data is visible two minutes after an update
// (ordersV0.json and orders_2026-01-01.json in amzn/selling-partner-api-models).
const amazonMinSettle = 2 * time.Minute

// amazonRateHeader carries the usage plan's requests/s on SP-API responses.
const amazonRateHeader = "x-amzn-RateLimit-Limit"

// amazonAPI is what both versions share: the platform, the LWA token
// source, the HTTP client and the request criteria every page repeats.
type amazonAPI struct {
	platform     string
	cred         config.CredentialRef
	marketplaces string // comma-separated, as SP-API takes arrays in a query
	pageSize     int
	http         *resty.Client
	tokens       *tokenSource
	now          func() time.Time
}

// newAmazon builds the connector of kind "amazon". The credential is a JSON
// object {"client_id","client_secret","refresh_token"} of an LWA app; the
// endpoint is the region's SP-API host, e.g.
// https://sellingpartnerapi-eu.amazon.com.
func newAmazon(p config.Platform) (Connector, error) {
	base, err := httpEndpoint(p)
	if err != nil {
		return nil, err
	}
	opts, err := config.KindOptions[config.AmazonOptions](p)
	if err != nil {
		return nil, &PermanentError{Platform: p.Name, Msg: err.Error()}
	}
	fields := []string{"client_id", "client_secret", "refresh_token"}
	if _, err := jsonSecret(p, fields...); err != nil {
		return nil, err
	}
	a := &amazonAPI{
		platform:     p.Name,
		cred:         p.Credentials,
		marketplaces: strings.Join(opts.MarketplaceIDs, ","),
		pageSize:     p.PageSize,
		http:         newHTTPClient(p),
		now:          time.Now,
	}
	a.tokens = &tokenSource{platform: p.Name, now: time.Now, refresh: func(ctx context.Context) (string, time.Duration, error) {
		secret, err := jsonSecret(p, fields...) // re-read: a rotated secret applies at the next refresh
		if err != nil {
			return "", 0, err
		}
		// LWA takes the client in the form ("Use the refresh token to get new tokens").
		return fetchToken(ctx, a.http, p.Name, tokenRequest{url: opts.TokenURL, credential: p.Credentials, form: map[string]string{
			"grant_type": "refresh_token", "refresh_token": secret["refresh_token"],
			"client_id": secret["client_id"], "client_secret": secret["client_secret"],
		}})
	}}
	if opts.APIVersion == config.AmazonAPIV0 {
		return &amazonV0{amazonAPI: a, url: base + "/orders/v0/orders"}, nil
	}
	return &amazon2026{amazonAPI: a, url: base + amazon2026Path, included: amazon2026Included(opts.IncludedData)}, nil
}

func (a *amazonAPI) runtimeSecrets() []string { return a.tokens.issuedTokens() }

// checkSettled refuses a window whose inclusive upper bound before lies less
// than amazonMinSettle before now, with a TransientError rather than a
// clamp: clamping would silently shorten the window and lose the orders of
// its last minutes, while a retry a little later succeeds. Config
// validation keeps settle >= 2m, so this only guards reprocessing and clock
// skew.
func (a *amazonAPI) checkSettled(before time.Time, operation, layout string) error {
	if latest := a.now().Add(-amazonMinSettle); before.After(latest) {
		return &TransientError{Platform: a.platform, Msg: fmt.Sprintf(
			"window end %s is less than %s before now, which %s rejects; retry in %s",
			before.Format(layout), amazonMinSettle, operation, before.Sub(latest).Round(time.Second))}
	}
	return nil
}

// get sends one GET with the access token and classifies a failure to get
// any response; the caller classifies the status.
func (a *amazonAPI) get(ctx context.Context, url string, q map[string]string) (*resty.Response, error) {
	resp, err := a.tokens.do(ctx, func(token string) (*resty.Response, error) {
		return a.http.R().SetContext(ctx).SetHeader("x-amz-access-token", token).SetQueryParams(q).Get(url)
	})
	if err != nil {
		return nil, asTransportError(a.platform, err)
	}
	return resp, nil
}
