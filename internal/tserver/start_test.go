package tserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiopts "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "modernc.org/sqlite"
)

// testOptions are a server on an in-memory SQLite database, every port
// picked, no UI.
func testOptions(t *testing.T) Options {
	t.Helper()
	return Options{
		IP:           DefaultIP,
		FrontendPort: Pick,
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores: map[string]config.DataStore{sqliteplugin.PluginName: {SQL: &config.SQL{
				PluginName:        sqliteplugin.PluginName,
				ConnectAttributes: map[string]string{"mode": "memory", "cache": "shared"},
				DatabaseName:      fmt.Sprintf("tserver-test-%d", time.Now().UnixNano()),
			}}},
		},
		LogLevel: "error",
		LogFile:  filepath.Join(t.TempDir(), "temporal.log"),
	}
}

// squatter is "another process": it takes the n-th port the server picks
// (counting from 1) the moment it is picked, before the server binds it.
type squatter struct {
	t      *testing.T
	n      int
	mu     sync.Mutex
	picks  int
	taken  int
	holder net.Listener
}

func (s *squatter) pick(ip string) (int, error) {
	p, err := FreePort(ip)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.picks++
	if s.picks == s.n {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
		require.NoError(s.t, err)
		s.t.Cleanup(func() { l.Close() })
		s.taken, s.holder = p, l
	}
	return p, nil
}

// requireServes checks the frontend answers a gRPC call.
func requireServes(t *testing.T, s *Server) {
	t.Helper()
	conn, err := grpc.NewClient(s.FrontendAddress(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = workflowservice.NewWorkflowServiceClient(conn).GetSystemInfo(ctx, &workflowservice.GetSystemInfoRequest{})
	require.NoError(t, err)
}

// TestStartPicksAgainWhenAPickedPortIsTaken: another process takes a port
// the server picked before the server binds it (the n-th pick of the
// first start-up: a service's gRPC port, a membership port, the metrics
// port). The server does not end the process: it starts again on fresh
// ports, and serves. A metrics port taken is found once the server runs:
// it is stopped, and the frontend port the caller chose is free again for
// the next start-up.
func TestStartPicksAgainWhenAPickedPortIsTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Temporal servers")
	}
	for _, tt := range []struct {
		name     string
		chosen   bool // the frontend port is the caller's
		nthPick  int
		wantWhat string
	}{
		{"history gRPC", false, 3, "history gRPC"},
		{"worker membership", false, 8, "worker membership"},
		{"metrics, frontend port chosen", true, 8, "metrics"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(t)
			if tt.chosen {
				p, err := FreePort(o.IP)
				require.NoError(t, err)
				o.FrontendPort = p
			}
			sq := &squatter{t: t, n: tt.nthPick}
			o.PickPort = sq.pick
			s, err := Start(o)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Stop() })
			require.NotZero(t, sq.taken, "the squatter took a port")
			require.Greater(t, sq.picks, tt.nthPick, "the ports were picked again")
			got := s.Options()
			for _, np := range got.ports() {
				require.NotEqual(t, sq.taken, *np.p, "the %s is on the taken port", np.what)
				if np.what == tt.wantWhat {
					require.NotZero(t, *np.p)
				}
			}
			if tt.chosen {
				require.Equal(t, o.FrontendPort, got.FrontendPort, "the chosen frontend port is kept")
			}
			requireServes(t, s)
		})
	}
}

// TestStartNamesAChosenPortThatIsTaken: a port the caller chose (the
// frontend's, the UI's) that another process holds is an error naming the
// port and what it is for; nothing is retried and the process lives.
func TestStartNamesAChosenPortThatIsTaken(t *testing.T) {
	for _, what := range []string{"frontend gRPC", "Web UI"} {
		t.Run(what, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer l.Close()
			port := l.Addr().(*net.TCPAddr).Port
			o := testOptions(t)
			if what == "Web UI" {
				o.UIPort = port
			} else {
				o.FrontendPort = port
			}
			_, err = Start(o)
			var inUse *PortInUseError
			require.True(t, errors.As(err, &inUse), "%v", err)
			require.Equal(t, what, inUse.What)
			require.Equal(t, port, inUse.Port)
			require.False(t, inUse.Picked)
			require.True(t, inUse.InUse())
			require.ErrorContains(t, err, fmt.Sprintf("port %d on 127.0.0.1 (%s) is not free", port, what))
		})
	}
}

// TestUIServerHoldsAnEcho: startUI hands the UI server a listener through
// its echo server; an upgrade of the UI server that moves it fails here,
// not in a user's `ordersync dev`.
func TestUIServerHoldsAnEcho(t *testing.T) {
	ui := uiserver.NewServer(uiopts.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: "127.0.0.1:7233", Host: "127.0.0.1", Port: 8233, EnableUI: true, HideLogs: true,
	}))
	e, err := uiEcho(ui)
	require.NoError(t, err)
	require.NotNil(t, e)
}
