package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/internal/verify"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

const adminToken = "e2e-admin"

// startServer starts an embedded Temporal server on free ports with its
// database in dbPath (empty: in memory), logging to the test's temp dir.
func startServer(t *testing.T, dbPath string) *devserver.Server {
	t.Helper()
	srv, err := devserver.Start(devserver.Options{
		DatabasePath: dbPath,
		FrontendPort: -1,
		LogFile:      filepath.Join(t.TempDir(), "temporal.log"),
	})
	require.NoError(t, err)
	return srv
}

func dial(t *testing.T, srv *devserver.Server) client.Client {
	t.Helper()
	return dialAt(t, srv.FrontendAddress(), srv.Namespace())
}

func dialAt(t *testing.T, address, namespace string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: address, Namespace: namespace, Logger: quietLogger{}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// system is a running ordersync: server, simulator, store, worker.
type system struct {
	t       *testing.T
	stack   stack
	srv     temporalServer
	client  client.Client
	sim     *sim.Simulator
	simSrv  *sim.Server
	store   store.Store
	workers *worker.Workers // in the test process, or
	procs   []*workerProc   // `ordersync worker` processes (stack.workerProcesses)
	file    *config.File
	// platformsPath and storeDSN let CLI commands see the same system.
	platformsPath string
	storeDSN      string
	// cliWaited is how long the last runCLI waited for other tests' CLI
	// commands (they share the environment).
	cliWaited time.Duration
}

// startSystem starts everything on the embedded stack; platformsYAML may
// use {{SIM}} for the simulator's base URL. Shop tokens are put in
// ORDERSYNC_E2E_<SHOP>_TOKEN.
func startSystem(t *testing.T, simCfg sim.Config, platformsYAML string) *system {
	t.Helper()
	return startSystemOn(t, embeddedStack, simCfg, platformsYAML)
}

// startSystemOn starts everything on the given stack.
func startSystemOn(t *testing.T, st stack, simCfg sim.Config, platformsYAML string) *system {
	t.Helper()
	s := &system{t: t, stack: st}
	if st.workerProcesses > 0 {
		// Build before the simulator's clock starts: its history begins
		// then, and cursors that start later by a build's time miss its
		// first orders (their start is relative to when they start).
		ordersyncBinary(t)
	}
	s.srv = st.server(t)
	s.client = dialAt(t, s.srv.FrontendAddress(), st.namespace)

	simCfg.AdminToken = adminToken
	for _, shop := range simCfg.Shops {
		setenv(t, "ORDERSYNC_E2E_"+strings.ToUpper(shop.Name)+"_TOKEN", shop.Token)
	}
	var err error
	s.sim, err = sim.New(simCfg)
	require.NoError(t, err)
	s.simSrv, err = s.sim.Start("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.simSrv.Close() })

	yaml := strings.ReplaceAll(platformsYAML, "{{SIM}}", s.simSrv.URL)
	s.file, err = config.Parse([]byte(yaml))
	require.NoError(t, err)
	s.platformsPath = filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(s.platformsPath, []byte(yaml), 0o644))
	s.storeDSN = st.storeDSN(t)
	s.store, err = store.Open(context.Background(), s.storeDSN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.store.Close() })
	if st.workerProcesses > 0 {
		env := st.env(s.srv.FrontendAddress(), s.storeDSN, s.platformsPath)
		args := []string{"--stop-timeout", "5s"}
		if len(st.servedQueues) > 0 {
			args = append(args, "--task-queues", strings.Join(st.servedQueues, ","))
		}
		for i := range st.workerProcesses {
			w := startWorkerProc(t, fmt.Sprintf("worker-%d", i+1), env, args...)
			require.True(t, w.waitRunning(45*time.Second), "worker-%d did not start:\n%s", i+1, w.tail(4000))
			s.procs = append(s.procs, w)
		}
		return s
	}
	s.startWorkers()
	return s
}

// startWorkers starts the system's worker: its platforms and, when the
// file has any, its destinations, fed by the store's change feed.
func (s *system) startWorkers() {
	s.t.Helper()
	var err error
	opts := worker.Options{Client: s.client, Store: s.store, Platforms: s.file.Platforms, StopTimeout: 5 * time.Second,
		Feed: s.store, Destinations: s.file.Destinations, TaskQueues: s.stack.servedQueues}
	if s.stack.registry {
		reg, ok := store.RegistryOf(s.store)
		require.True(s.t, ok, "the store keeps a registry")
		opts.Platforms, opts.Registry, opts.RegistryPollInterval = nil, reg, time.Second
	}
	s.workers, err = worker.Start(opts)
	require.NoError(s.t, err)
	ws := s.workers
	s.t.Cleanup(ws.Stop)
}

func (s *system) startCursors() {
	_, err := starter.EnsureCursors(context.Background(), s.client, s.file.Platforms, time.Now())
	require.NoError(s.t, err)
}

// status queries the platform's cursor. A query waits for a worker's
// workflow task slot; on a machine busy with other tests it may take
// longer than one 10 s try, so it is asked up to three times.
func (s *system) status(platform string) api.CursorStatus {
	s.t.Helper()
	var err error
	for try := 1; try <= 3; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var v converter.EncodedValue
		v, err = s.client.QueryWorkflow(ctx, api.CursorWorkflowID(platform), "", api.QueryStatus)
		timedOut := ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)
		cancel()
		if err == nil {
			var st api.CursorStatus
			require.NoError(s.t, v.Get(&st))
			return st
		}
		if !timedOut {
			break
		}
		s.t.Logf("status of %s: try %d timed out (a busy machine); asking again", platform, try)
	}
	require.NoError(s.t, err)
	return api.CursorStatus{}
}

// waitWatermark waits until the platform's watermark reaches at least t.
func (s *system) waitWatermark(platform string, t time.Time, timeout time.Duration) api.CursorStatus {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := s.status(platform)
		if !st.Watermark.Before(t) {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: watermark %s did not reach %s within %s; status: %+v", platform, st.Watermark, t, timeout, st)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// verify compares the store with the simulator's ground truth for one
// shop, lines included (the sim connector gives lines their position as id).
func (s *system) verify(platform, shop string) verify.Report {
	s.t.Helper()
	admin := &sim.AdminClient{BaseURL: s.simSrv.URL, Token: adminToken}
	truth, err := admin.TruthWithLines(context.Background(), shop, time.Time{})
	require.NoError(s.t, err)
	expected := make([]verify.Expected, len(truth.Orders))
	for i, o := range truth.Orders {
		lines := make([]connectors.OrderLine, len(o.Lines))
		for j, l := range o.Lines {
			lines[j] = connectors.OrderLine{ID: connectors.PositionLineID(j), SKU: l.SKU, Title: l.Title, Quantity: l.Quantity,
				UnitPrice: l.UnitPrice, Currency: l.Currency}
		}
		expected[i] = verify.Expected{ID: o.ID, UpdatedAt: o.UpdatedAt, HasLines: true, Lines: lines}
	}
	stored, err := s.store.OrderLines(context.Background(), platform)
	require.NoError(s.t, err)
	return verify.CompareLines(platform, expected, stored)
}

type quietLogger struct{}

func (quietLogger) Debug(string, ...interface{}) {}
func (quietLogger) Info(string, ...interface{})  {}

// Warn and Error are shown with ORDERSYNC_E2E_VERBOSE=1: the chaos in these
// tests makes activities fail on purpose, and the SDK logs every failure.
func (quietLogger) Warn(msg string, kv ...interface{})  { verbose("WARN", msg, kv) }
func (quietLogger) Error(msg string, kv ...interface{}) { verbose("ERROR", msg, kv) }

func verbose(level, msg string, kv []interface{}) {
	if os.Getenv("ORDERSYNC_E2E_VERBOSE") != "" {
		fmt.Fprintln(os.Stderr, append([]interface{}{level, msg}, kv...)...)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "platforms.yaml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}
