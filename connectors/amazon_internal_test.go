package connectors

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAmazon2026TokenAge: a pagination token is resumed only while Amazon
// still honours it (24 hours, minus an hour's margin); older tokens, and
// tokens that are not ours (a v0 NextToken), start the window over.
func TestAmazon2026TokenAge(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	c := &amazon2026{amazonAPI: &amazonAPI{now: func() time.Time { return now }}}
	issued := func(ago time.Duration) string {
		return amazon2026TokenPrefix + strconv.FormatInt(now.Add(-ago).Unix(), 10) + ".AmzTok+/="
	}
	tests := []struct {
		name, token, want string
	}{
		{"the first page", "", ""},
		{"fresh", issued(time.Minute), "AmzTok+/="},
		{"22 hours old", issued(22 * time.Hour), "AmzTok+/="},
		{"23 hours old: too close to its expiry", issued(23 * time.Hour), ""},
		{"25 hours old: expired", issued(25 * time.Hour), ""},
		{"a v0 NextToken", "2YgYW55IGNhcm5hbCBwbGVhc3VyZS4+/a=", ""},
		{"no issue time", amazon2026TokenPrefix + "soon.AmzTok", ""},
		{"no Amazon token", amazon2026TokenPrefix + "1772452800.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, c.resumable(tt.token))
		})
	}
}
