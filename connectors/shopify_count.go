package connectors

import (
	"context"
	"fmt"

	"github.com/ordersync/ordersync/internal/textclip"
)

// shopifyCountOperation counts a window's orders: ordersCount with the
// page query's own updated_at filter, so it selects exactly the orders the
// pages list. limit: null lifts the default cap of 10,000
// (https://shopify.dev/docs/api/admin-graphql/latest/queries/ordersCount);
// precision says whether Shopify counted them all (EXACT) or stopped at a
// limit (AT_LEAST). Available from API version 2024-07.
const shopifyCountOperation = "OrdersCountInWindow"

const shopifyCountQuery = `query OrdersCountInWindow($query: String!) {
  ordersCount(query: $query, limit: null) { count precision }
}`

// shopifyCountCost is what the count query requests: one object. It is
// booked on the Meter like every other query and settled with the actual
// cost Shopify reports.
const shopifyCountCost = 1

// CountOrders implements Counter through ordersCount.
func (c *shopifyGraphQL) CountOrders(ctx context.Context, req CountRequest) (Count, error) {
	if err := checkCountWindow(c.platform, req); err != nil {
		return Count{}, err
	}
	body, err := c.query(ctx, PageRequest{From: req.From, To: req.To, Meter: req.Meter}, shopifyCountOperation, shopifyCountQuery,
		map[string]any{"query": shopifySearchWindow(req.From, req.To)}, shopifyCountCost)
	if err != nil {
		return Count{}, err
	}
	var env struct {
		Data struct {
			OrdersCount *struct {
				Count     *int   `json:"count"`
				Precision string `json:"precision"`
			} `json:"ordersCount"`
		} `json:"data"`
	}
	if err := decodeJSON(c.platform, 0, body, &env); err != nil {
		return Count{}, err
	}
	oc := env.Data.OrdersCount
	if oc == nil || oc.Count == nil || *oc.Count < 0 {
		return Count{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("ordersCount has no count (or a negative one)")}
	}
	switch oc.Precision {
	case "EXACT":
		return Count{N: *oc.Count, Precision: CountExact}, nil
	case "AT_LEAST":
		return Count{N: *oc.Count, Precision: CountAtLeast}, nil
	}
	return Count{}, &MalformedError{Platform: c.platform, Offset: -1, Err: fmt.Errorf("ordersCount precision %q is neither EXACT nor AT_LEAST", textclip.Value(oc.Precision))}
}
