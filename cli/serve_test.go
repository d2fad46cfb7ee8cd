package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// serve refuses to start (exit 2) without a usable token or on an address
// other machines reach, before it opens the store or dials Temporal.
func TestServeRefusesToStart(t *testing.T) {
	good := "0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name, token, listenEnv string
		args                   []string
		want                   []string
	}{
		{name: "no token", want: []string{"ORDERSYNC_API_TOKEN", "ORDERSYNC_API_TOKEN_FILE"}},
		{name: "short token", token: "secret", want: []string{"at least 16"}},
		{name: "all interfaces", token: good, args: []string{"--listen", ":8790"}, want: []string{"every interface", "plaintext", "--allow-remote"}},
		{name: "remote flag", token: good, args: []string{"--listen", "10.1.2.3:8790"}, want: []string{"10.1.2.3", "TLS"}},
		{name: "remote env", token: good, listenEnv: "0.0.0.0:8790", want: []string{"0.0.0.0", "--allow-remote"}},
		{name: "bad address", token: good, args: []string{"--listen", "localhost"}, want: []string{"host:port"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("ORDERSYNC_API_TOKEN", c.token)
			t.Setenv("ORDERSYNC_API_TOKEN_FILE", "")
			t.Setenv("ORDERSYNC_API_LISTEN", c.listenEnv)
			if c.listenEnv == "" {
				t.Setenv("ORDERSYNC_API_LISTEN", "127.0.0.1:8790")
			}
			code, _, stderr := runCommand(t, nil, append([]string{"serve"}, c.args...)...)
			require.Equal(t, ExitUsage, code, stderr)
			for _, w := range c.want {
				require.Contains(t, stderr, w)
			}
			if c.token != "" {
				require.NotContains(t, stderr, c.token, "the token is never printed")
			}
		})
	}
}

func TestCheckListen(t *testing.T) {
	for listen, ok := range map[string]bool{
		"127.0.0.1:8790": true, "[::1]:8790": true, "localhost:8790": true, "127.0.0.2:80": true,
		":8790": false, "0.0.0.0:8790": false, "[::]:8790": false, "192.168.1.5:8790": false, "example.com:8790": false,
	} {
		err := checkListen(listen, false)
		require.Equal(t, ok, err == nil, "%s: %v", listen, err)
		require.NoError(t, checkListen(listen, true), "--allow-remote allows %s", listen)
	}
	err := checkListen("0.0.0.0:1", false)
	require.True(t, strings.Contains(err.Error(), "plaintext"), "says why: %v", err)
}
