package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5/pgconn"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/internal/cluster"
	"github.com/ordersync/ordersync/internal/tserver"
	"github.com/ordersync/ordersync/internal/tsetup"
)

// A stack is what a test runs ordersync on: a Temporal server and an order
// store. The same tests run on two:
//
//   - embedded: the embedded server on SQLite (package devserver, one
//     task-queue partition) and a SQLite store; the development default.
//   - postgres: the production shape (package internal/cluster): Temporal
//     on PostgreSQL with SQL visibility, its schema set up by Temporal's
//     schema tool, 4 task-queue partitions, a namespace prepared by
//     `ordersync setup`'s code, a PostgreSQL store, and `ordersync worker`
//     OS processes. It needs ORDERSYNC_TEST_POSTGRES_DSN (the store's
//     server; a role that may create databases) and uses
//     ORDERSYNC_TEST_TEMPORAL_POSTGRES_DSN for Temporal's databases when
//     set (.ci/postgres.sh prints both: Temporal gets its own role, with
//     CREATEDB and nothing more). It is skipped without them, or fails when
//     ORDERSYNC_TEST_POSTGRES_REQUIRED is set (CI).
type stack struct {
	name string
	// namespace the workflows run in.
	namespace string
	// server starts a Temporal server on fresh data, stopped at cleanup.
	server func(t *testing.T) temporalServer
	// restartable starts one that the test may stop and start again.
	restartable func(t *testing.T) *restartableServer
	// storeDSN names a fresh, empty order store.
	storeDSN func(t *testing.T) string
	// workerProcesses, when above zero, runs the system's workers as that
	// many `ordersync worker` processes instead of in the test process.
	workerProcesses int
	// partitions is the server's partition count per task queue.
	partitions int
	// registry makes the in-process workers follow the store's account
	// registry (as `ordersync worker` processes always do) instead of
	// serving the platforms file's platforms.
	registry bool
	// servedQueues, when set, are the only task queues the workers serve.
	servedQueues []string
}

// temporalServer is either stack's server, as a test sees it (the stack
// stops it at cleanup).
type temporalServer interface {
	FrontendAddress() string
}

// stoppableServer is either stack's server, as a restartableServer drives it.
type stoppableServer interface {
	FrontendAddress() string
	Stop() error
}

var embeddedStack = stack{
	name:      "embedded",
	namespace: "default",
	server: func(t *testing.T) temporalServer {
		srv := startServer(t, "") // in memory: nothing outlives the test
		t.Cleanup(func() { _ = srv.Stop() })
		return srv
	},
	restartable: startEmbedded,
	partitions:  1,
	storeDSN: func(t *testing.T) string {
		return "sqlite://" + filepath.Join(t.TempDir(), "orders.db")
	},
}

// postgresNamespace is the namespace the postgres stack's tests create with
// `ordersync setup`'s code, as an operator would on a new cluster.
const postgresNamespace = "ordersync"

var postgresStack = stack{
	name:            "postgres",
	namespace:       postgresNamespace,
	server:          func(t *testing.T) temporalServer { return startPostgresCluster(t) },
	restartable:     startPostgresCluster,
	storeDSN:        freshPostgresStore,
	workerProcesses: 3,
	partitions:      4,
}

// postgresDSNEnv names the PostgreSQL server for the postgres stack and the
// store tests; postgresRequiredEnv turns its absence into a failure.
const (
	postgresDSNEnv         = "ORDERSYNC_TEST_POSTGRES_DSN"
	temporalPostgresDSNEnv = "ORDERSYNC_TEST_TEMPORAL_POSTGRES_DSN"
	postgresRequiredEnv    = "ORDERSYNC_TEST_POSTGRES_REQUIRED"
)

var (
	pgOnce   sync.Once
	pgReason string
)

// requirePostgres returns the test DSN, or skips the test (fails it when
// PostgreSQL is required) naming what is wrong.
func requirePostgres(t *testing.T) string {
	t.Helper()
	pgOnce.Do(func() {
		dsn := os.Getenv(postgresDSNEnv)
		if dsn == "" {
			pgReason = postgresDSNEnv + " is not set"
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			pgReason = fmt.Sprintf("cannot connect using %s: %v", postgresDSNEnv, err)
			return
		}
		conn.Close(ctx)
	})
	if pgReason == "" {
		sweepOldDatabases(t, os.Getenv(postgresDSNEnv))
	}
	if pgReason != "" {
		msg := "POSTGRESQL NOT AVAILABLE: " + pgReason + "; the PostgreSQL-backed Temporal stack is NOT tested " +
			"(run `eval \"$(bash .ci/postgres.sh | tail -n1)\"` first)"
		if os.Getenv(postgresRequiredEnv) != "" {
			t.Fatalf("%s (and %s is set, so this is a failure)", msg, postgresRequiredEnv)
		}
		t.Skip(msg)
	}
	return os.Getenv(postgresDSNEnv)
}

// temporalPostgres is the DSN Temporal's databases are made with.
func temporalPostgres(t *testing.T) string {
	t.Helper()
	base := requirePostgres(t)
	if dsn := os.Getenv(temporalPostgresDSNEnv); dsn != "" {
		return dsn
	}
	return base
}

// uniqueName is prefix_<unix seconds>_<random>: runs on one server never
// share a database, and sweepOldDatabases can tell an abandoned one.
func uniqueName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%d_%s", prefix, time.Now().Unix(), hex.EncodeToString(b[:]))
}

var sweepOnce sync.Once

// sweepOldDatabases drops the e2e databases of runs that died without their
// cleanup (a server's log.Fatal exits the test process) once they are
// hours old; other runs on the same server are younger.
func sweepOldDatabases(t *testing.T, dsn string) {
	sweepOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname ~ '^e2e_[a-z]+_[0-9]+_[0-9a-f]+'`)
		if err != nil {
			return
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return
		}
		for _, name := range names {
			var prefix string
			var created int64
			if _, err := fmt.Sscanf(strings.ReplaceAll(name, "_", " "), "e2e %s %d", &prefix, &created); err != nil ||
				time.Since(time.Unix(created, 0)) < 3*time.Hour {
				continue
			}
			if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err == nil {
				t.Logf("dropped %s, left behind by an earlier run", name)
			}
		}
	})
}

// dropAtCleanup drops a database (if it exists) when the test ends. A
// process of the test may still be exiting with connections of another
// role open, which FORCE may not terminate (SQLSTATE 42501 without
// pg_signal_backend): the drop is tried again until they are gone.
func dropAtCleanup(t *testing.T, dsn, name string) {
	t.Cleanup(func() {
		stmt := "DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := tryAdminExec(dsn, stmt)
			var pgErr *pgconn.PgError
			if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "42501" || time.Now().After(deadline) {
				require.NoError(t, err, stmt)
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
}

func tryAdminExec(dsn, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt)
	return err
}

func adminExec(t *testing.T, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt)
	require.NoError(t, err, stmt)
}

// withDatabase is dsn naming another database on the same server.
func withDatabase(t *testing.T, dsn, database string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	u.Path = "/" + database
	return u.String()
}

func freshPostgresStore(t *testing.T) string {
	t.Helper()
	base := requirePostgres(t)
	name := uniqueName("e2e_orders")
	adminExec(t, base, "CREATE DATABASE "+name)
	dropAtCleanup(t, base, name)
	return withDatabase(t, base, name)
}

// restartableServer is a Temporal server on a fixed frontend port and its
// own data, so it can be stopped and started again underneath running
// workers, which reconnect by themselves.
type restartableServer struct {
	t      *testing.T
	port   int
	launch func() (stoppableServer, error) // on the same data and ports
	srv    stoppableServer
	starts int
}

func newRestartable(t *testing.T, launch func() (stoppableServer, error), port int) *restartableServer {
	t.Helper()
	rs := &restartableServer{t: t, port: port, launch: launch}
	rs.start()
	t.Cleanup(func() {
		if rs.srv != nil {
			_ = rs.srv.Stop()
		}
	})
	return rs
}

func (rs *restartableServer) start() {
	rs.t.Helper()
	rs.starts++
	var err error
	// The port may linger for a moment after a stop; try a few times.
	for i := 0; i < 20; i++ {
		if rs.srv, err = rs.launch(); err == nil {
			return
		}
		rs.srv = nil // not a typed nil: cleanup stops only a running server
		time.Sleep(500 * time.Millisecond)
	}
	require.NoError(rs.t, err, "start the Temporal server (port %d)", rs.port)
}

func (rs *restartableServer) stop() {
	rs.t.Helper()
	require.NoError(rs.t, rs.srv.Stop())
	rs.srv = nil
}

func (rs *restartableServer) address() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(rs.port))
}

// FrontendAddress lets a restartable server stand where a server does.
func (rs *restartableServer) FrontendAddress() string { return rs.address() }

// startEmbedded starts the embedded server on a SQLite file.
func startEmbedded(t *testing.T) *restartableServer {
	t.Helper()
	dir := t.TempDir()
	// The first start picks the port (and picks again if another process
	// takes it first); restarts keep it, so clients reconnect by themselves.
	port := -1
	rs := newRestartable(t, func() (stoppableServer, error) {
		srv, err := devserver.Start(devserver.Options{
			DatabasePath: filepath.Join(dir, "temporal.db"),
			FrontendPort: port,
			LogFile:      filepath.Join(dir, "temporal.log"),
		})
		if err == nil && port < 0 {
			_, p, _ := net.SplitHostPort(srv.FrontendAddress())
			port, _ = strconv.Atoi(p)
		}
		return srv, err
	}, port)
	rs.port = port
	return rs
}

// startPostgresCluster sets up fresh Temporal databases with the schema
// tool's code, starts the server on them and prepares its namespace with
// `ordersync setup`'s code.
func startPostgresCluster(t *testing.T) *restartableServer {
	t.Helper()
	dsn := temporalPostgres(t)
	pg, err := cluster.PostgresFromDSN(dsn)
	require.NoError(t, err)
	pg.Database = uniqueName("e2e_temporal")
	pg.VisibilityDatabase = pg.Database + "_visibility"
	admin := withDatabase(t, dsn, pg.AdminDatabase) // the DSN's own database may not exist yet
	dropAtCleanup(t, admin, pg.Database)
	dropAtCleanup(t, admin, pg.VisibilityDatabase)
	began := time.Now()
	require.NoError(t, cluster.SetupSchema(pg, nil))
	require.NoError(t, cluster.SetupSchema(pg, nil), "a second schema setup (an upgrade with nothing to apply) must pass")
	t.Logf("postgres stack: Temporal schema set up in %s (databases %s, %s)", time.Since(began).Round(time.Millisecond), pg.Database, pg.VisibilityDatabase)

	dir := t.TempDir()
	opts := cluster.Options{Postgres: pg, FrontendPort: -1, LogFile: filepath.Join(dir, "temporal.log")} // picked at the first start
	var resolved *cluster.Options
	rs := newRestartable(t, func() (stoppableServer, error) {
		o := opts
		if resolved != nil {
			o = *resolved // the same service ports as before the restart
			// but the metrics port: the server's Prometheus reporter does
			// not close its listener when the server stops in-process, so
			// that port stays held by the stopped server.
			o.Ports.Metrics = tserver.Pick
		}
		srv, err := cluster.Start(o)
		if err == nil && resolved == nil {
			r := srv.Options()
			resolved = &r
		}
		return srv, err
	}, opts.FrontendPort)
	rs.port = resolved.FrontendPort
	t.Logf("postgres stack: Temporal server up %s after the schema; log %s", time.Since(began).Round(time.Millisecond), opts.LogFile)

	c, err := client.Dial(client.Options{HostPort: rs.address(), Namespace: postgresNamespace, Logger: quietLogger{}})
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	report, err := tsetup.Run(ctx, tsetup.Services{Workflow: c.WorkflowService(), Operator: c.OperatorService()},
		tsetup.Options{Namespace: postgresNamespace})
	require.NoError(t, err, "setup: %+v", report)
	require.True(t, report.Complete(), "setup: %+v", report)
	t.Logf("postgres stack: namespace %s set up %s after the schema", postgresNamespace, time.Since(began).Round(time.Millisecond))
	return rs
}

// stackEnv is the environment an `ordersync` process needs to join a
// system on the stack.
func (st stack) env(temporalAddress, storeDSN, platformsPath string) []string {
	return []string{
		"ORDERSYNC_TEMPORAL_ADDRESS=" + temporalAddress,
		"ORDERSYNC_TEMPORAL_NAMESPACE=" + st.namespace,
		"ORDERSYNC_STORE_DSN=" + storeDSN,
		"ORDERSYNC_PLATFORMS_FILE=" + platformsPath,
		"ORDERSYNC_METRICS_ADDRESS=127.0.0.1:0",
		"ORDERSYNC_LOG_LEVEL=info",
	}
}

// partitionsPolled counts the partitions of a task queue that had pollers
// in the last minutes: the SDK's polls spread over every partition the
// server has, so after a while that is the server's partition count.
func partitionsPolled(t *testing.T, c client.Client, taskQueue string) int {
	t.Helper()
	n := 0
	for i := range 8 {
		name := taskQueue
		if i > 0 {
			name = fmt.Sprintf("/_sys/%s/%d", taskQueue, i) // how the server names partition i
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.DescribeTaskQueue(ctx, name, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		cancel()
		require.NoError(t, err, name)
		if len(resp.GetPollers()) > 0 {
			n++
		}
	}
	return n
}
