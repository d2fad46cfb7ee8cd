package connectors

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-resty/resty/v2"
	"github.com/stretchr/testify/require"
)

// A token endpoint's expires_in of 0 or negative is used as one minute,
// one beyond 24 h as 24 h, each with a warning that names the platform
// (issue 24). Before, 0 or negative meant 5 minutes silently, and a huge value overflowed
// time.Duration (math.MaxInt64 seconds became a negative lifetime, a
// token refreshed before every request) or pinned a token for centuries.
func TestTokenLifetimeIsClamped(t *testing.T) {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(prev)

	var expiresIn int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"access_token":"Atza|token","expires_in":%d}`, expiresIn)
	}))
	defer srv.Close()
	for _, c := range []struct {
		in   int64
		want time.Duration
		warn bool
	}{
		{3600, time.Hour, false},
		{60, time.Minute, false},
		{86400, 24 * time.Hour, false},
		{0, time.Minute, true},
		{-5, time.Minute, true},
		{1, time.Second, false}, // short, but stated: the token expires then
		{86401, 24 * time.Hour, true},
		{1e12, 24 * time.Hour, true},
		{math.MaxInt64, 24 * time.Hour, true},
	} {
		logs.Reset()
		expiresIn = c.in
		token, ttl, err := fetchToken(context.Background(), resty.New(), "amazon-eu", tokenRequest{url: srv.URL})
		require.NoError(t, err)
		require.Equal(t, "Atza|token", token)
		require.Equal(t, c.want, ttl, "expires_in %d", c.in)
		if c.warn {
			require.Contains(t, logs.String(), "platform=amazon-eu")
			require.Contains(t, logs.String(), fmt.Sprintf("expires_in_seconds=%d", c.in))
			require.Contains(t, logs.String(), "used="+c.want.String())
		} else {
			require.Empty(t, logs.String())
		}
	}
}
