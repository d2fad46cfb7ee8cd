package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
)

func init() { Register("amazon", NewAmazon) }

// AmazonMinSettle is how far behind now a window must end: getOrders wants
// LastUpdatedBefore "at least 2 minutes before the current time", and most
// order data is visible two minutes after an update (ordersV0.json in
// amzn/selling-partner-api-models; "Get orders with filtering criteria").
const AmazonMinSettle = 2 * time.Minute

// amazonRateHeader carries the usage plan's requests/s on SP-API responses.
const amazonRateHeader = "x-amzn-RateLimit-Limit"

// amazonConnector lists a seller's orders through SP-API Orders v0:
// GET <endpoint>/orders/v0/orders with an LWA access token in
// x-amz-access-token (SP-API needs no AWS Signature v4 since October 2023).
type amazonConnector struct {
	platform     string
	cred         config.CredentialRef
	url          string
	marketplaces string
	pageSize     int
	http         *resty.Client
	tokens       *tokenSource
	now          func() time.Time
}

// NewAmazon builds the connector of kind "amazon". The credential is a JSON
// object {"client_id","client_secret","refresh_token"} of an LWA app; the
// endpoint is the region's SP-API host, e.g.
// https://sellingpartnerapi-eu.amazon.com.
func NewAmazon(p config.Platform) (Connector, error) {
	base, err := httpEndpoint(p)
	if err != nil {
		return nil, err
	}
	opts, err := p.AmazonOptions()
	if err != nil {
		return nil, &PermanentError{Platform: p.Name, Msg: err.Error()}
	}
	fields := []string{"client_id", "client_secret", "refresh_token"}
	if _, err := jsonSecret(p, fields...); err != nil {
		return nil, err
	}
	c := &amazonConnector{
		platform:     p.Name,
		cred:         p.Credentials,
		url:          base + "/orders/v0/orders",
		marketplaces: strings.Join(opts.MarketplaceIDs, ","),
		pageSize:     p.PageSize,
		http:         NewHTTPClient(p),
		now:          time.Now,
	}
	c.tokens = &tokenSource{platform: p.Name, now: time.Now, refresh: func(ctx context.Context) (string, time.Duration, error) {
		secret, err := jsonSecret(p, fields...) // re-read: a rotated secret applies at the next refresh
		if err != nil {
			return "", 0, err
		}
		// LWA takes the client in the form ("Use the refresh token to get new tokens").
		return fetchToken(ctx, c.http, p.Name, tokenRequest{url: opts.TokenURL, credential: p.Credentials, form: map[string]string{
			"grant_type": "refresh_token", "refresh_token": secret["refresh_token"],
			"client_id": secret["client_id"], "client_secret": secret["client_secret"],
		}})
	}}
	return c, nil
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
//
// Both bounds of getOrders are inclusive and times have whole seconds, so
// the request covers [floor(From), last second before To]. A window ending
// less than AmazonMinSettle before now is refused with a TransientError
// rather than clamped: clamping would silently shorten the window and lose
// the orders of its last minutes, while a retry a little later succeeds.
// Config validation keeps settle >= 2m, so this only guards reprocessing
// and clock skew.
func (c *amazonConnector) runtimeSecrets() []string { return c.tokens.issuedTokens() }

func (c *amazonConnector) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := CheckWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	before := LastInstantBefore(req.To.UTC(), time.Second)
	if latest := c.now().Add(-AmazonMinSettle); before.After(latest) {
		return Page{}, &TransientError{Platform: c.platform, Msg: fmt.Sprintf(
			"window end %s is less than %s before now, which getOrders rejects; retry in %s",
			before.Format(time.RFC3339), AmazonMinSettle, before.Sub(latest).Round(time.Second))}
	}
	q := map[string]string{"MarketplaceIds": c.marketplaces}
	if req.Token != "" {
		// "If NextToken is present, that will be used to retrieve the orders
		// instead of other criteria": only the token and the required
		// MarketplaceIds go with it.
		q["NextToken"] = req.Token
	} else {
		q["LastUpdatedAfter"] = req.From.UTC().Truncate(time.Second).Format(time.RFC3339)
		q["LastUpdatedBefore"] = before.Format(time.RFC3339)
		if size := pageSize(req, c.pageSize); size > 0 {
			q["MaxResultsPerPage"] = strconv.Itoa(size)
		}
	}
	resp, err := c.tokens.do(ctx, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetHeader("x-amz-access-token", token).SetQueryParams(q).Get(c.url)
	})
	if err != nil {
		return Page{}, asTransportError(c.platform, err)
	}
	if err := ResponseError(c.platform, c.cred, resp, amazonRateHeader); err != nil {
		return Page{}, err
	}
	page, err := c.decodePage(resp.Body(), req.Page)
	page.RateLimit = HeaderFloat(resp.Header(), amazonRateHeader)
	return page, err
}

// amazonOrder is the part of an SP-API Order the connector reads.
type amazonOrder struct {
	AmazonOrderID  string `json:"AmazonOrderId"`
	PurchaseDate   string `json:"PurchaseDate"`
	LastUpdateDate string `json:"LastUpdateDate"`
	OrderStatus    string `json:"OrderStatus"`
	OrderTotal     *struct {
		CurrencyCode string `json:"CurrencyCode"`
		Amount       string `json:"Amount"`
	} `json:"OrderTotal"`
	NumberOfItemsShipped   int `json:"NumberOfItemsShipped"`
	NumberOfItemsUnshipped int `json:"NumberOfItemsUnshipped"`
}

func (c *amazonConnector) decodePage(body []byte, page int) (Page, error) {
	items, err := DecodeArrayPath(c.platform, page, body, []string{"payload", "Orders"})
	if err != nil {
		return Page{}, err
	}
	var env struct {
		Payload struct {
			NextToken string `json:"NextToken"`
		} `json:"payload"`
	}
	if err := DecodeJSON(c.platform, page, body, &env); err != nil {
		return Page{}, err
	}
	orders, err := DecodeItems(c.platform, page, items, c.order)
	if err != nil {
		return Page{}, err
	}
	return Page{Orders: orders, NextToken: env.Payload.NextToken}, nil
}

// order normalises one SP-API order. Pending orders carry no OrderTotal
// (the total is then ""); getOrders lists no line items, so LineCount is the
// number of units, shipped plus unshipped.
func (c *amazonConnector) order(ao amazonOrder, raw json.RawMessage) (Order, error) {
	if ao.AmazonOrderID == "" {
		return Order{}, errors.New("missing AmazonOrderId")
	}
	updated, err := time.Parse(time.RFC3339Nano, ao.LastUpdateDate)
	if err != nil {
		return Order{}, fmt.Errorf("id %s: LastUpdateDate %q is not an ISO 8601 time", ao.AmazonOrderID, ao.LastUpdateDate)
	}
	var created time.Time
	if ao.PurchaseDate != "" {
		if created, err = time.Parse(time.RFC3339Nano, ao.PurchaseDate); err != nil {
			return Order{}, fmt.Errorf("id %s: PurchaseDate %q is not an ISO 8601 time", ao.AmazonOrderID, ao.PurchaseDate)
		}
	}
	o := Order{Platform: c.platform, ID: ao.AmazonOrderID, Status: ao.OrderStatus, CreatedAt: created.UTC(),
		UpdatedAt: updated.UTC(), LineCount: ao.NumberOfItemsShipped + ao.NumberOfItemsUnshipped, Raw: raw}
	if t := ao.OrderTotal; t != nil {
		if !ValidDecimal(t.Amount) {
			return Order{}, fmt.Errorf("id %s: OrderTotal.Amount %q is not a decimal number", ao.AmazonOrderID, t.Amount)
		}
		o.Currency, o.Total = t.CurrencyCode, t.Amount
	}
	return o, nil
}
