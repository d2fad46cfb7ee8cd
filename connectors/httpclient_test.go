package connectors_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

func TestNextLink(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"shopify, previous and next", []string{`<https://acme.myshopify.com/admin/api/2026-10/orders.json?limit=2&page_info=cHJl>; rel="previous", <https://acme.myshopify.com/admin/api/2026-10/orders.json?limit=2&page_info=bmV4>; rel="next"`},
			"https://acme.myshopify.com/admin/api/2026-10/orders.json?limit=2&page_info=bmV4"},
		{"commas in the target", []string{`</orders?fields=id,name&after=5>; rel=next`}, "/orders?fields=id,name&after=5"},
		{"several headers and relations", []string{`</a>; rel="first"`, `</b>; title="x"; rel="prefetch next"`}, "/b"},
		{"only previous", []string{`</a>; rel="previous"`}, ""},
		{"none", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("Link", v)
			}
			require.Equal(t, tc.want, connectors.NextLink(h))
		})
	}
}
