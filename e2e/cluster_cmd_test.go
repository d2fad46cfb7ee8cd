package e2e

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/internal/cluster"
	"github.com/ordersync/ordersync/internal/tsetup"
)

// `ordersync cluster --server-only` is what the benchmark's PostgreSQL case
// measures as the server: the schema, the server and `ordersync setup`, and
// nothing else: no store (a SQLite DSN and no platforms file are fine), no
// simulator, no workers. It runs until SIGTERM and then exits cleanly.
func TestClusterServerOnly(t *testing.T) {
	parallel(t, heavyPostgres)
	if testing.Short() {
		t.Skip("starts a Temporal server on PostgreSQL")
	}
	dsn := temporalPostgres(t)
	pg, err := cluster.PostgresFromDSN(dsn)
	require.NoError(t, err)
	db := uniqueName("e2e_temporal")
	admin := withDatabase(t, dsn, pg.AdminDatabase)
	dropAtCleanup(t, admin, db)
	dropAtCleanup(t, admin, db+"_visibility")

	// The ports are free when picked, but another process may take one
	// before the server listens on it: the command then stops, naming the
	// port, and starts again on others.
	var (
		port   int
		cmd    *exec.Cmd
		out    []string
		exited chan error
	)
	for attempt := 1; ; attempt++ {
		port = clusterFrontendPort(t)
		var ended bool
		cmd, out, exited, ended = startClusterServerOnly(t, dsn, db, port)
		if !ended {
			break
		}
		if attempt >= 5 || !strings.Contains(strings.Join(out, "\n"), "cannot listen on ") {
			t.Fatalf("ordersync cluster --server-only ended before it was ready:\n%s", strings.Join(out, "\n"))
		}
		t.Logf("attempt %d: a port was taken, trying others:\n%s", attempt, strings.Join(out, "\n"))
	}
	for _, l := range out {
		for _, not := range []string{"Simulator:", "Worker 1:", "Orders store:", "Cursor "} {
			require.NotContains(t, l, not, "--server-only runs the server and setup only")
		}
	}

	// setup ran: a check-only setup finds nothing to do.
	c, err := client.Dial(client.Options{HostPort: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Namespace: postgresNamespace, Logger: quietLogger{}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	report, err := tsetup.Run(ctx, tsetup.Services{Workflow: c.WorkflowService(), Operator: c.OperatorService()},
		tsetup.Options{Namespace: postgresNamespace, DryRun: true})
	require.NoError(t, err)
	require.True(t, report.Complete(), "namespace not set up: %+v", report)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit after SIGTERM")
	case <-time.After(time.Minute):
		t.Fatal("ordersync cluster --server-only did not exit within a minute of SIGTERM")
	}
}

// startClusterServerOnly starts `ordersync cluster --server-only` on
// Temporal databases db and frontend port, and waits until it is ready.
// ended says it stopped before (out then has its stdout and stderr).
func startClusterServerOnly(t *testing.T, dsn, db string, port int) (cmd *exec.Cmd, out []string, exited chan error, ended bool) {
	t.Helper()
	dir := t.TempDir()
	cmd = exec.Command(ordersyncBinary(t), "cluster", "--server-only", "--postgres", withDatabase(t, dsn, db),
		"--port", strconv.Itoa(port), "--ui-port", "0")
	cmd.Env = append(environ(),
		"ORDERSYNC_DATA_DIR="+dir,
		"ORDERSYNC_TEMPORAL_NAMESPACE="+postgresNamespace,
		"ORDERSYNC_STORE_DSN=sqlite://"+filepath.Join(dir, "orders.db"),
		"ORDERSYNC_PLATFORMS_FILE="+filepath.Join(dir, "no-such-platforms.yaml"),
	)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	require.NoError(t, err)
	defer stderr.Close()
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string, 1000) // never full: the reader must not block the process
	exited = make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	ready := "Ready: namespace " + postgresNamespace + " on 127.0.0.1:" + strconv.Itoa(port)
	deadline := time.After(3 * time.Minute)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				b, _ := os.ReadFile(stderr.Name())
				<-exited
				return cmd, append(out, string(b)), exited, true
			}
			out = append(out, line)
			if line == ready {
				break wait
			}
		case <-deadline:
			t.Fatalf("no %q within 3 minutes:\n%s", ready, strings.Join(out, "\n"))
		}
	}
	return cmd, out, exited, false
}

// clusterFrontendPort is a frontend port for `ordersync cluster`, which lays
// its other ports out around it (cluster.StandardPorts): all free, and all
// below 32768 (the membership table's SMALLINT).
func clusterFrontendPort(t *testing.T) int {
	t.Helper()
	free := func(port int) bool {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			l.Close()
		}
		return err == nil
	}
	for range 200 {
		port := 20300 + freeTCPPort(t)%10700
		p := cluster.StandardPorts(port)
		ok := true
		for _, q := range []int{port, p.FrontendMembership, p.History, p.HistoryMembership, p.Matching, p.MatchingMembership, p.Worker, p.WorkerMembership, p.Metrics} {
			ok = ok && free(q)
		}
		if ok {
			return port
		}
	}
	t.Fatal("no free set of ports below 32768 for ordersync cluster")
	return 0
}
