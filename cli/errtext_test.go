package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCauseFirst(t *testing.T) {
	const id = "slice/sim-broken/20261122T084039.597171Z-20261122T090039.597171Z"
	for _, tc := range []struct{ in, want string }{
		{"slice " + id + " dead-lettered: fetch page 1 of " + id + ": sim-broken: HTTP 401: invalid or missing bearer token",
			"HTTP 401: invalid or missing bearer token (page 1)"},
		{"fetch page 12 of " + id + ": sim-broken: request timed out", "request timed out (page 12)"},
		{"slice " + id + ": child workflow could not start", "child workflow could not start"},
		{"config signal: settings are not valid", "config signal: settings are not valid"},
		{"", ""},
	} {
		require.Equal(t, tc.want, causeFirst(tc.in, "sim-broken"), tc.in)
	}
}
