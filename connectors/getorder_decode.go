package connectors

import (
	"encoding/json"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
)

// decodeGotOrder reads a get-one answer whose body is the same order
// resource a list page holds (eBay, WooCommerce): 404 is ErrOrderNotFound,
// any other error status is classified as on the list, and the body
// converts with the list's converter, so both paths give the same Order.
func decodeGotOrder[T any](platform string, cred config.CredentialRef, id string, resp *resty.Response, convert func(T, json.RawMessage) (Order, error)) (Order, error) {
	if is404(resp) {
		return Order{}, refetchNotFound(platform, id)
	}
	if err := responseError(platform, cred, resp, ""); err != nil {
		return Order{}, err
	}
	orders, err := decodeOrders(platform, 1, []jsonItem{{Raw: resp.Body()}}, convert)
	if err != nil {
		return Order{}, err
	}
	return orders[0], nil
}
