package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-resty/resty/v2"
)

// CountOrders implements Counter: getOrders with ListOrders' own
// lastmodifieddate filter and limit=1, whose total is the number of
// orders the filter selects
// (https://developer.ebay.com/api-docs/sell/fulfillment/resources/order/methods/getOrders).
func (c *ebayConnector) CountOrders(ctx context.Context, req CountRequest) (Count, error) {
	if err := checkCountWindow(c.platform, req); err != nil {
		return Count{}, err
	}
	const ms = "2006-01-02T15:04:05.000Z07:00"
	q := map[string]string{
		"filter": fmt.Sprintf("lastmodifieddate:[%s..%s]", req.From.UTC().Truncate(time.Millisecond).Format(ms),
			lastInstantBefore(req.To.UTC(), time.Millisecond).Format(ms)),
		"limit":  "1",
		"offset": "0",
	}
	resp, err := c.tokens.do(ctx, func(token string) (*resty.Response, error) {
		return c.http.R().SetContext(ctx).SetAuthToken(token).SetQueryParams(q).Get(c.url)
	})
	if err != nil {
		return Count{}, asTransportError(c.platform, err)
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return Count{}, err
	}
	var env struct {
		Total *json.Number `json:"total"`
	}
	if err := decodeJSON(c.platform, 0, resp.Body(), &env); err != nil {
		return Count{}, err
	}
	if env.Total == nil {
		return Count{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("getOrders answered without a total")}
	}
	n, err := env.Total.Int64()
	if err != nil || n < 0 || n > 1<<40 {
		return Count{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("getOrders total %.40q is not a count", env.Total.String())}
	}
	return Count{N: int(n), Precision: CountExact}, nil
}
