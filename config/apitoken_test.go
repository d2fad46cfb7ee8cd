package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadAPIToken(t *testing.T) {
	dir := t.TempDir()
	n := 0
	file := func(content string) string {
		n++
		path := filepath.Join(dir, "token"+strings.Repeat("x", n))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	good := "0123456789abcdef0123456789abcdef"

	tok, err := Process{APIToken: good}.ReadAPIToken()
	require.NoError(t, err)
	require.Equal(t, good, tok)
	tok, err = Process{APITokenFile: file(good + "\n")}.ReadAPIToken()
	require.NoError(t, err)
	require.Equal(t, good, tok, "the file's trailing newline is trimmed")

	for name, c := range map[string]struct {
		p    Process
		want string
	}{
		"none":        {Process{}, "ORDERSYNC_API_TOKEN or ORDERSYNC_API_TOKEN_FILE"},
		"both":        {Process{APIToken: good, APITokenFile: "/x"}, "both set"},
		"short":       {Process{APIToken: "hunter2"}, "at least 16"},
		"spaces":      {Process{APIToken: "0123456789 abcdef0123"}, "white space"},
		"missing":     {Process{APITokenFile: filepath.Join(dir, "nope")}, "ORDERSYNC_API_TOKEN_FILE"},
		"large file":  {Process{APITokenFile: file(strings.Repeat("a", 5000))}, "larger than"},
		"empty file":  {Process{APITokenFile: file("\n")}, "at least 16"},
		"escape char": {Process{APIToken: "0123456789abcdef\x1b[2J"}, "control characters"},
	} {
		_, err := c.p.ReadAPIToken()
		require.ErrorContains(t, err, c.want, name)
		if c.p.APIToken != "" {
			require.NotContains(t, err.Error(), c.p.APIToken, "%s: the token is never quoted", name)
		}
	}
}

func TestLoadProcessAPIListenDefault(t *testing.T) {
	t.Setenv("ORDERSYNC_API_LISTEN", "")
	os.Unsetenv("ORDERSYNC_API_LISTEN")
	p, err := LoadProcess()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:8790", p.APIListen)
}
