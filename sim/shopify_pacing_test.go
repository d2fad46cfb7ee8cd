package sim

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestShopifyLimitsLoweredMeanwhile: the standard bucket (1,000 points
// restoring 50 a second), then Shopify lowers the shop's limits: the next
// answers state the smaller bucket in throttleStatus, and a query the
// smaller bucket cannot hold is THROTTLED as documented.
func TestShopifyLimitsLoweredMeanwhile(t *testing.T) {
	clk := newFakeClock()
	cfg := testConfig(3, clk)
	cfg.ShopifyCost = ShopifyStandardBucket
	s, ts := startTest(t, cfg)
	vars := map[string]any{"first": 50, "query": window(epoch, farAway), "lines": 4}
	query := func() gqlAnswer {
		code, body := gql(t, ts.URL, "acme", "acme-token", "OrdersUpdatedInWindow", ordersQuery, vars)
		require.Equal(t, http.StatusOK, code)
		return decodeAnswer(t, body)
	}
	a := query()
	require.Empty(t, a.Errors)
	require.Equal(t, shopifyThrottleStatus{MaximumAvailable: 1000, CurrentlyAvailable: float64(1000 - *a.Extensions.Cost.ActualQueryCost), RestoreRate: 50},
		a.Extensions.Cost.ThrottleStatus)

	require.NoError(t, s.SetShopifyCost(CostLimit{RestoreRate: 25, MaxAvailable: 500}))
	require.Error(t, s.SetShopifyCost(CostLimit{RestoreRate: -1}))
	a = query()
	require.Len(t, a.Errors, 1, "852 points never fit a bucket of 500")
	require.Equal(t, "THROTTLED", a.Errors[0].Extensions["code"])
	require.Equal(t, "https://shopify.dev/api/usage/rate-limits", a.Errors[0].Extensions["documentation"])
	require.Nil(t, a.Extensions.Cost.ActualQueryCost)
	require.Equal(t, 852, a.Extensions.Cost.RequestedQueryCost)
	require.Equal(t, 500.0, a.Extensions.Cost.ThrottleStatus.MaximumAvailable)
	require.Equal(t, 25.0, a.Extensions.Cost.ThrottleStatus.RestoreRate)
	require.LessOrEqual(t, a.Extensions.Cost.ThrottleStatus.CurrentlyAvailable, 500.0)
}
