package connectors

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

func amazonPlatform(t *testing.T, version string) config.Platform {
	t.Helper()
	f, err := config.Parse([]byte("platforms:\n  amz:\n    kind: amazon\n    endpoint: https://sellingpartnerapi-eu.amazon.com\n    credentials: {env: A}\n    options: {api_version: " + version + ", marketplace_ids: [A1F83G8C2ARO7P]}\n"))
	require.NoError(t, err)
	p, _ := f.Get("amz")
	return p
}

// The getOrder example of orders_2026-01-01.json, through searchOrders'
// decoding (getOrder's order is searchOrders' Order).
func TestCanonicalGoldenAmazon2026(t *testing.T) {
	raw := readRaw(t, "amazon-2026-01-01")
	var ao amazon2026Order
	require.NoError(t, json.Unmarshal(raw, &ao))
	o, err := (&amazon2026{amazonAPI: &amazonAPI{platform: "amz"}}).order(ao, raw)
	require.NoError(t, err)
	c := goldenCanonical(t, amazonPlatform(t, "2026-01-01"), o, "amazon-2026-01-01")
	require.Equal(t, order.StatusCompleted, c.Status)
	require.Equal(t, "SHIPPED", c.PlatformStatus)
	require.Equal(t, order.Totals{Subtotal: "89.97", Shipping: "10.00", Tax: "4.00", Total: "103.97"}, c.Totals)
	require.Equal(t, "Manchester", c.ShippingAddress.City)
	require.Equal(t, "James Wilson", c.Customer.Name)
}

// The getOrder example of ordersV0.json with getOrderItems' example items,
// as GetOrder stores them.
func TestCanonicalGoldenAmazonV0(t *testing.T) {
	raw := readRaw(t, "amazon-v0")
	var ao amazonOrder
	require.NoError(t, json.Unmarshal(raw, &ao))
	o, err := (&amazonV0{amazonAPI: &amazonAPI{platform: "amz"}}).order(ao, raw)
	require.NoError(t, err)
	c := goldenCanonical(t, amazonPlatform(t, "v0"), o, "amazon-v0")
	require.Equal(t, order.StatusOpen, c.Status)
	require.Equal(t, order.FinancialPending, c.FinancialStatus)
	require.Equal(t, "Pending", c.PlatformStatus)
	require.Len(t, c.Lines, 2)
	require.Equal(t, "17.95", c.Lines[1].Total)
	require.Empty(t, c.Lines[1].UnitPrice, "17.95 for 2 is no whole cent: a unit price is never rounded")
	require.Equal(t, "25.99", c.Lines[0].UnitPrice, "one unit: the line price")
}
