package connectors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckShopifyFragment(t *testing.T) {
	for _, tt := range []struct {
		in      string
		objects int
		err     string
	}{
		{in: "", objects: 0},
		{in: "poNumber sourceName", objects: 0},
		{in: "poNumber, channelInformation { channelId app { id title } }", objects: 2},
		{in: "purchasingEntity { ... on Customer { id } ... on PurchasingCompany { company { id } } }", objects: 2},
		{in: "poNumber(first: 1)", err: `byte 8: arguments are not allowed ("(")`},
		{in: "a: poNumber", err: `byte 1: aliases are not allowed`},
		{in: "poNumber @include(if: $x)", err: `byte 9: directives are not allowed`},
		{in: "lineItems { nodes { id } }", err: `byte 12: nodes: connections cannot be added`},
		{in: "...Extra", err: `byte 3: named fragment spread ...Extra`},
		{in: "query { orders }", err: `byte 0: query: an operation or fragment definition`},
		{in: "} poNumber {", err: `byte 0: } without its {`},
		{in: "customer { }", err: `byte 11: an empty selection { }`},
		{in: "customer { id", err: `ends with 1 selection(s) still open`},
		{in: "a { b { c { d { e { f { g } } } } } }", err: `nested deeper than 5`},
		{in: "note # }", err: `comments are not allowed`},
		{in: "__parentId", err: `__parentId is a bulk result's`},
		{in: "{ id }", err: `{ without a field`},
	} {
		n, err := CheckShopifyFragment(tt.in)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.objects, n, tt.in)
	}
	long := make([]byte, ShopifyMaxFragment+1)
	for i := range long {
		long[i] = 'a'
	}
	_, err := CheckShopifyFragment(string(long))
	require.ErrorContains(t, err, "more than 2000")
}
