package connectors

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOriginOf(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
		show string // a's origin as shown in errors
	}{
		{"https://shop.example", "https://shop.example:443/admin?x=1", true, "https://shop.example"},
		{"http://shop.example/", "http://shop.example:80", true, "http://shop.example"},
		{"HTTPS://Shop.Example/a", "https://shop.example/b", true, "https://shop.example"},
		{"https://user:pw@shop.example", "https://shop.example", true, "https://shop.example"},
		{"http://127.0.0.1:38001", "http://127.0.0.1:38002", false, "http://127.0.0.1:38001"},
		{"http://shop.example", "https://shop.example", false, "http://shop.example"},
		{"https://shop.example:80", "http://shop.example:80", false, "https://shop.example:80"},
		{"http://shop.example", "http://localhost", false, "http://shop.example"},
		{"https://[::1]:8443/x", "https://[::1]:8443/y", true, "https://[::1]:8443"},
		{"https://[::1]", "https://[::1]:443", true, "https://[::1]"},
	}
	for _, tc := range tests {
		t.Run(tc.a+" "+tc.b, func(t *testing.T) {
			a, b := originOf(mustURL(t, tc.a)), originOf(mustURL(t, tc.b))
			require.Equal(t, tc.same, a == b)
			require.Equal(t, tc.show, a.String(), "no user info, path or query")
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
