package connectors_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// TestOrderIDOfTheWrongKind checks that every kind says what it found in
// place of an id, rather than calling the order one without an id.
func TestOrderIDOfTheWrongKind(t *testing.T) {
	for _, f := range kindFixtures {
		for _, tc := range []struct{ raw, kind string }{
			{`{"value":"A-1"}`, "an object"},
			{`["A-1"]`, "an array"},
			{`true`, "a boolean"},
		} {
			t.Run(f.name+"/"+tc.kind, func(t *testing.T) {
				broken := f
				broken.page = f.withID(tc.raw)
				ts := httptest.NewServer(serveKind(broken))
				defer ts.Close()
				_, err := kindPlatform(t, f, ts.URL, ts.URL).ListOrders(context.Background(), kindWindow)
				var me *connectors.MalformedError
				require.ErrorAs(t, err, &me)
				require.ErrorContains(t, err, "order 0: "+fmt.Sprintf(f.badID, tc.kind))
				require.NotContains(t, err.Error(), "missing")
				require.NotContains(t, err.Error(), "Go struct field", "in the platform's terms")
			})
		}
	}
}
