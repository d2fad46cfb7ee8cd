package config

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWatchedFileFollowsEditsAndKeepsTheLastGoodVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "platforms.yaml")
	write := func(content string, mod time.Time) {
		t.Helper()
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		require.NoError(t, os.Chtimes(path, mod, mod))
	}
	file := func(endpoint string) string {
		return "platforms:\n  x:\n    kind: sim\n    endpoint: " + endpoint + "\n    credentials: {env: T}\n"
	}
	endpoint := func(w *WatchedFile) string {
		p, ok := w.Get("x")
		require.True(t, ok)
		return p.Endpoint
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	write(file("https://a/shops/x"), t0)

	var logs bytes.Buffer
	w, err := WatchFile(path, 5*time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	now := time.Now()
	w.now = func() time.Time { return now }
	require.Equal(t, "https://a/shops/x", endpoint(w))

	write(file("https://b/shops/x"), t0.Add(time.Second))
	require.Equal(t, "https://a/shops/x", endpoint(w), "not looked at again within the interval")
	now = now.Add(5 * time.Second)
	require.Equal(t, "https://b/shops/x", endpoint(w), "re-read after the interval")
	require.Contains(t, logs.String(), "platforms file re-read")

	write(file("https://c/shops/x"), t0.Add(2*time.Second))
	w.Refresh()
	require.Equal(t, "https://c/shops/x", endpoint(w), "Refresh looks at once")

	logs.Reset()
	write(file("ftp://d"), t0.Add(3*time.Second))
	for range 3 {
		now = now.Add(5 * time.Second)
		require.Equal(t, "https://c/shops/x", endpoint(w), "an invalid file keeps the last good version")
	}
	require.Equal(t, 1, strings.Count(logs.String(), "does not load"), "logged once per change: %s", logs.String())
	require.Contains(t, logs.String(), `is not an http(s) URL`)

	require.NoError(t, os.Remove(path))
	now = now.Add(5 * time.Second)
	require.Equal(t, "https://c/shops/x", endpoint(w), "a removed file keeps the last good version")
	require.Contains(t, logs.String(), "platforms file is gone")

	write(file("https://e/shops/x"), t0.Add(4*time.Second))
	now = now.Add(5 * time.Second)
	require.Equal(t, "https://e/shops/x", endpoint(w), "a fixed file is read again")

	_, err = WatchFile(filepath.Join(t.TempDir(), "none.yaml"), 0, nil)
	require.ErrorContains(t, err, "no such file")
}
