package sim

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func getOrder(t *testing.T, base, shop, access, id, included string) (int, []byte) {
	t.Helper()
	u := base + "/shops/" + shop + "/amazon/orders/2026-01-01/orders/" + id
	if included != "" {
		u += "?includedData=" + included
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	req.Header.Set("x-amz-access-token", access)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// TestAmazonGetOrder: getOrder answers one order with the datasets asked
// for (BUYER and RECIPIENT only then), 404 for an id the seller does not
// have, 400 for a dataset the API does not know, 403 without a token.
func TestAmazonGetOrder(t *testing.T) {
	clk := newFakeClock()
	_, ts := startTest(t, testConfig(5, clk))
	access := amazonAccess(t, ts.URL, "acme", "acme-token")

	code, body := getOrder(t, ts.URL, "acme", access, "1000000001", "FULFILLMENT,PROCEEDS,PACKAGES")
	require.Equal(t, http.StatusOK, code, string(body))
	require.Contains(t, string(body), `{"order":{"orderId":"1000000001"`)
	require.NotContains(t, string(body), `"buyer"`)
	require.NotContains(t, string(body), `"recipient"`)
	split, packages := 0, 0
	for i := 1; i <= 30; i++ {
		code, body := getOrder(t, ts.URL, "acme", access, fmt.Sprintf("10000000%02d", i), "FULFILLMENT,PROCEEDS,PACKAGES")
		require.Equal(t, http.StatusOK, code, string(body))
		if strings.Contains(string(body), `"breakdowns":[{"type":"ITEM"`) {
			split++ // a first version's total: its items and shipping
		}
		if strings.Contains(string(body), `"trackingNumber":"00340434`) {
			packages++
			require.Contains(t, string(body), `"fulfillmentStatus":"SHIPPED"`)
		}
	}
	require.Positive(t, split)
	require.Positive(t, packages)

	code, body = getOrder(t, ts.URL, "acme", access, "1000000001", "BUYER,RECIPIENT")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"buyer":{"buyerName"`)
	require.Contains(t, string(body), `"recipient":{"deliveryAddress"`)
	require.NotContains(t, string(body), `"proceeds"`)

	code, body = getOrder(t, ts.URL, "acme", access, "1000999999", "")
	require.Equal(t, http.StatusNotFound, code)
	require.JSONEq(t, `{"errors":[{"code":"NotFound","message":"The resource specified does not exist.","details":""}]}`, string(body))

	code, body = getOrder(t, ts.URL, "acme", access, "1000000001", "BUYERS")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, string(body), `Invalid includedData value \"BUYERS\".`)

	code, _ = getOrder(t, ts.URL, "acme", "nope", "1000000001", "")
	require.Equal(t, http.StatusForbidden, code)
}
