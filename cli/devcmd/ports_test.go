package devcmd

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/cli"
)

// TestDevNamesATakenPortAndTheFlagThatMovesIt: `ordersync dev` with one
// of its ports held by another process (7233 is, whenever `temporal
// server start-dev` runs) exits non-zero with a message naming the port
// and the flag or variable that moves it, before it starts anything.
func TestDevNamesATakenPortAndTheFlagThatMovesIt(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}
	for _, tt := range []struct {
		name   string
		args   func(taken string) []string
		env    func(taken string) string // ORDERSYNC_METRICS_ADDRESS
		change string
	}{
		{"frontend", func(taken string) []string { return []string{"--port", port(taken)} }, nil, "--port"},
		{"web UI", func(taken string) []string { return []string{"--ui-port", port(taken)} }, nil, "--ui-port"},
		{"simulator", func(taken string) []string { return []string{"--sim-listen", taken} }, nil, "--sim-listen"},
		{"receiver", func(taken string) []string { return []string{"--receiver-listen", taken} }, nil, "--receiver-listen"},
		{"metrics", nil, func(taken string) string { return taken }, "ORDERSYNC_METRICS_ADDRESS"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			held, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer held.Close()
			taken := held.Addr().String()

			t.Setenv("ORDERSYNC_DATA_DIR", t.TempDir())
			t.Setenv("ORDERSYNC_METRICS_ADDRESS", "127.0.0.1:0")
			if tt.env != nil {
				t.Setenv("ORDERSYNC_METRICS_ADDRESS", tt.env(taken))
			}
			// Every other port free, so the taken one is what stops it. On
			// a busy machine another process may take one of the free ports
			// before dev binds it: then dev rightly names that one, and the
			// run is tried again with fresh ports.
			var code int
			var out, errOut bytes.Buffer
			for try := 0; ; try++ {
				args := []string{"dev", "--port", port(free()), "--ui-port", port(free()),
					"--sim-listen", free(), "--receiver-listen", free()}
				if tt.args != nil {
					args = append(args, tt.args(taken)...)
				}
				out.Reset()
				errOut.Reset()
				app := &cli.App{Out: &out, Err: &errOut}
				root := cli.NewRootCommand(app)
				root.AddCommand(New(app))
				done := make(chan int, 1)
				go func() { done <- cli.Execute(root, args, &errOut) }()
				select {
				case code = <-done:
				case <-time.After(time.Minute):
					t.Fatal("ordersync dev did not stop on a taken port")
				}
				if strings.Contains(errOut.String(), "cannot listen on "+taken) || try == 2 {
					break
				}
				t.Logf("another process took a free port meanwhile: %s", errOut.String())
			}
			require.NotEqual(t, cli.ExitOK, code)
			require.Contains(t, errOut.String(), "cannot listen on "+taken)
			require.Contains(t, errOut.String(), "choose another with "+tt.change)
			require.NotContains(t, out.String(), "Temporal frontend:", "nothing started")
		})
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return strconv.Itoa(n)
}
