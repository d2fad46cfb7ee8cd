package connectors_test

import (
	"net/http"
	"testing"
	"time"

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

func TestWindowBounds(t *testing.T) {
	at := func(s string) time.Time {
		return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Add(must(time.ParseDuration(s)))
	}
	require.Equal(t, at("1s"), connectors.CeilTime(at("500ms"), time.Second))
	require.Equal(t, at("1s"), connectors.CeilTime(at("1s"), time.Second))
	require.Equal(t, at("0s"), connectors.LastInstantBefore(at("1s"), time.Second), "inclusive end of [.., 10:00:01)")
	require.Equal(t, at("0s"), connectors.LastInstantBefore(at("500ms"), time.Second), "10:00:00 is before 10:00:00.5")
	require.Equal(t, at("999ms"), connectors.LastInstantBefore(at("1s"), time.Millisecond))
}
