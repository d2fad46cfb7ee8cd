package connectors

import (
	"context"
	"fmt"
	"time"

	"github.com/ordersync/ordersync/internal/textclip"
)

// CountOrders implements Counter: the list call ListOrders sends, with
// per_page=1, whose X-WP-Total header is the number of orders the window's
// filter selects (https://woocommerce.github.io/woocommerce-rest-api-docs/#pagination).
// The bounds are ListOrders' exactly: (floor(From) - 1s, ceil(To)),
// exclusive, in GMT.
func (c *wooConnector) CountOrders(ctx context.Context, req CountRequest) (Count, error) {
	if err := checkCountWindow(c.platform, req); err != nil {
		return Count{}, err
	}
	q := map[string]string{
		"modified_after":  req.From.UTC().Truncate(time.Second).Add(-time.Second).Format(wooTime),
		"modified_before": ceilTime(req.To.UTC(), time.Second).Format(wooTime),
		"dates_are_gmt":   "true",
		"per_page":        "1",
		"_fields":         "id", // the one order that comes along is not read
	}
	resp, err := c.get(ctx, c.url, q)
	if err != nil {
		return Count{}, err
	}
	if err := responseError(c.platform, c.cred, resp, ""); err != nil {
		return Count{}, err
	}
	h := resp.Header().Get("X-WP-Total")
	n := headerInt(h)
	if n < 0 {
		return Count{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("X-WP-Total %q is not a count", textclip.Value(h))}
	}
	return Count{N: n, Precision: CountExact}, nil
}
