package connectors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
)

// Kind amazon lists a seller's orders through the SP-API Orders API, in one
// of two versions (options.api_version):
//
//   - 2026-01-01 (the default): searchOrders, every order with its items
//     (amazon_2026.go);
//   - v0 (legacy, removed by Amazon on AmazonV0Removal): getOrders,
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
	tokens       authorizer
	now          func() time.Time
}

// newAmazon builds the connector of kind "amazon". The credential is a JSON
// object {"client_id","client_secret","refresh_token"} of an LWA app; the
// endpoint is the region's SP-API host, e.g.
// https://sellingpartnerapi-eu.amazon.com.
func newAmazon(p config.Platform, o *AmazonOptions, src credentials.Source) (Connector, error) {
	base, err := httpEndpoint(p)
	if err != nil {
		return nil, err
	}
	opts := *o
	fields := []string{"client_id", "client_secret", "refresh_token"}
	if err := checkStaticSecret(p, src, func(raw string) error {
		_, err := jsonSecret(p.Name, p.Credentials, raw, fields...)
		return err
	}); err != nil {
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
	a.tokens = newAuthorizer(p, src, func(ctx context.Context, raw string) (string, time.Duration, error) {
		secret, err := jsonSecret(p.Name, p.Credentials, raw, fields...)
		if err != nil {
			return "", 0, err
		}
		// LWA takes the client in the form ("Use the refresh token to get new tokens").
		return fetchToken(ctx, a.http, p.Name, tokenRequest{url: opts.TokenURL, credential: p.Credentials, form: map[string]string{
			"grant_type": "refresh_token", "refresh_token": secret["refresh_token"],
			"client_id": secret["client_id"], "client_secret": secret["client_secret"],
		}})
	})
	if opts.APIVersion == AmazonAPIV0 {
		return &amazonV0{amazonAPI: a, url: base + "/orders/v0/orders"}, nil
	}
	return &amazon2026{amazonAPI: a, url: base + amazon2026Path, included: amazon2026Included(opts)}, nil
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

// An unusable pagination token (expired, or refused for any reason about
// the token) restarts the window from its start. The connector never sends
// that second request itself: it answers the page with no orders and a
// restart token, so the next page is a request of its own, sent only after
// the activity booked it a request slot (never two requests for one slot),
// and a retry never sends the dead token again (the slice follows the
// restart token, not the dead one). Both API versions read a restart token
// as "no token". It names the dead token by a short digest and the time of
// the restart, so a slice that restarts twice never sees the same token
// twice (workflows treat a repeated token as a paging cycle). Orders read
// twice are harmless (newest version wins). A window whose tokens are
// always refused still ends: each restart uses up pages, so the slice
// splits at max_pages into windows that need fewer pages, and at the
// smallest span the runaway bound dead-letters it.
const amazonRestartPrefix = "amzn-restart."

// After a restart the window's pages are listed again, and Amazon may hand
// out the very tokens it handed out before (the same query, the same
// page): a slice that followed them once would take the second time for a
// paging cycle and dead-letter the window as permanent. So every token
// issued after a restart carries the restart's generation
// ("amzn-g<generation>.<token>"), passed on from page to page and taken
// off before the token is sent, and each restart has a generation of its
// own (the time of the restart).
const amazonGenerationPrefix = "amzn-g"

// amazonGeneration splits a token into the generation it carries (the
// restart it follows, "" before any restart) and the token to read: a
// restart token starts its own generation and reads as "no token".
func amazonGeneration(token string) (gen, rest string) {
	if r, ok := strings.CutPrefix(token, amazonRestartPrefix); ok {
		gen, _, _ = strings.Cut(r, ".")
		return gen, ""
	}
	if r, ok := strings.CutPrefix(token, amazonGenerationPrefix); ok {
		if g, t, ok := strings.Cut(r, "."); ok && g != "" {
			return g, t
		}
	}
	return "", token
}

// withGeneration marks a next-page token with the generation of the
// restart it follows.
func withGeneration(gen, token string) string {
	if gen == "" || token == "" || strings.HasPrefix(token, amazonRestartPrefix) {
		return token
	}
	return amazonGenerationPrefix + gen + "." + token
}

// amazonRestartToken is the next-page token that restarts a window whose
// token dead was refused at now.
func amazonRestartToken(dead string, now time.Time) string {
	sum := sha256.Sum256([]byte(dead))
	return amazonRestartPrefix + strconv.FormatInt(now.UnixNano(), 10) + "." + hex.EncodeToString(sum[:6])
}

// amazonUnusableToken says whether a 400 answered to a request that
// carried a pagination token (paginationToken, NextToken) is about that
// token, whatever its text: a message or details that mention a token
// ("The paginationToken has expired.", "The paginationToken you have
// submitted is not valid…", "We could not decode your NextToken…", "Token
// is not valid, token duration is 25 minutes."), an InvalidInput without a
// message (getOrders answers {"message": null, "code": "InvalidInput"}), or
// one of the generic invalid-input texts that name no parameter (the
// models' "Invalid Input", sellers' "The input you have submitted is not
// valid…": on a request that repeats an accepted first page with a token,
// such a 400 can only be about the token). Any other 400 (a bad date, too
// many marketplaces) is about the request and stays permanent.
func amazonUnusableToken(status int, body []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var env struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details string `json:"details"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &env) != nil || len(env.Errors) == 0 {
		return false
	}
	for _, e := range env.Errors {
		text := strings.ToLower(e.Message + " " + e.Details)
		if strings.Contains(text, "token") {
			return true
		}
		if strings.TrimSpace(e.Message) == "" && strings.EqualFold(e.Code, "InvalidInput") {
			return true
		}
		msg := strings.ToLower(strings.TrimRight(strings.TrimSpace(e.Message), ".…! "))
		if msg == "invalid input" || strings.HasPrefix(msg, "the input you have submitted is not valid") {
			return true
		}
	}
	return false
}
