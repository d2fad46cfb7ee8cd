package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/internal/cluster"
)

// The production-shaped stack, as the PostgreSQL end-to-end tests run it
// (e2e/stack_test.go): the Temporal server of internal/cluster (PostgreSQL
// persistence and SQL visibility, schema by temporal-sql-tool's code, the
// server's default 4 partitions per task queue) as its own process
// (`ordersync cluster --server-only`, which also runs `ordersync setup`), a
// PostgreSQL order store and several `ordersync worker` processes. Every
// run gets fresh databases, dropped at its end.

// The same variables the PostgreSQL tests read; .ci/postgres.sh prints both.
const (
	postgresDSNEnv         = "ORDERSYNC_TEST_POSTGRES_DSN"
	temporalPostgresDSNEnv = "ORDERSYNC_TEST_TEMPORAL_POSTGRES_DSN"
	// pgNamespace is the namespace `ordersync setup` prepares, as in the tests.
	pgNamespace = "ordersync"
)

// pgStackOptions say where the stack's databases go and how many workers run.
type pgStackOptions struct {
	// storeDSN is a role that may create (and drop) databases: the order
	// store's database is made with it, and every database is dropped with it.
	storeDSN string
	// temporalDSN is the role Temporal's databases are made with (its schema
	// tool creates them).
	temporalDSN string
	workers     int
}

// pgStackFromEnv reads the DSNs; the reason says what is missing when the
// stack cannot run.
func pgStackFromEnv(ctx context.Context, workers int) (*pgStackOptions, string) {
	dsn := os.Getenv(postgresDSNEnv)
	if dsn == "" {
		return nil, fmt.Sprintf("no PostgreSQL: %s is not set (run `eval \"$(bash .ci/postgres.sh | tail -n1)\"` first)", postgresDSNEnv)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, dsn)
	if err != nil {
		return nil, fmt.Sprintf("no PostgreSQL: cannot connect using %s: %v", postgresDSNEnv, err)
	}
	conn.Close(cctx)
	o := &pgStackOptions{storeDSN: dsn, temporalDSN: os.Getenv(temporalPostgresDSNEnv), workers: workers}
	if o.temporalDSN == "" {
		o.temporalDSN = dsn
	}
	return o, ""
}

// pgStack is the running stack's server process and its databases.
type pgStack struct {
	server    *childProcess
	adminDSN  string   // the store's role, on its DSN's database
	databases []string // to drop at the end
	temporal  cluster.Postgres
	storeDB   string
}

// describe is the stack as the results state it.
func (o *pgStackOptions) describe() string {
	return fmt.Sprintf("Temporal v1.32.0 of internal/cluster (PostgreSQL persistence + SQL visibility, 4 task-queue partitions, %d history shards) as its own process (`ordersync cluster --server-only`); PostgreSQL order store; %d `ordersync worker` processes",
		cluster.DefaultHistoryShards, o.workers)
}

func uniqueDatabase(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s_%d_%s", prefix, time.Now().Unix(), hex.EncodeToString(b[:]))
}

// withDatabase is dsn naming another database on the same server.
func withDatabase(dsn, database string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", errors.New("PostgreSQL DSN is not a URL")
	}
	u.Path = "/" + database
	return u.String(), nil
}

func adminExec(ctx context.Context, dsn, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt)
	return err
}

// startPostgresStack starts the server process on fresh Temporal databases,
// creates a fresh store database and starts the worker processes.
func (s *system) startPostgresStack(ctx context.Context, o systemOptions) error {
	po := o.postgres
	if o.childBin == "" {
		return errors.New("the PostgreSQL stack runs the server and the workers as processes: it needs -ordersync")
	}
	if po.workers < 1 {
		return fmt.Errorf("the PostgreSQL stack needs at least 1 worker process (got %d)", po.workers)
	}
	pg := &pgStack{adminDSN: po.storeDSN}
	s.pg = pg
	var err error
	if pg.temporal, err = cluster.PostgresFromDSN(po.temporalDSN); err != nil {
		return fmt.Errorf("%s: %w", temporalPostgresDSNEnv, err)
	}
	pg.temporal.Database = uniqueDatabase("bench_temporal")
	pg.temporal.VisibilityDatabase = pg.temporal.Database + "_visibility"
	pg.storeDB = uniqueDatabase("bench_orders")
	pg.databases = []string{pg.temporal.Database, pg.temporal.VisibilityDatabase, pg.storeDB}
	if err := adminExec(ctx, pg.adminDSN, "CREATE DATABASE "+pg.storeDB); err != nil {
		return fmt.Errorf("create the store database %s: %w", pg.storeDB, err)
	}
	if s.storeURL, err = withDatabase(po.storeDSN, pg.storeDB); err != nil {
		return err
	}
	temporalDSN, err := withDatabase(po.temporalDSN, pg.temporal.Database)
	if err != nil {
		return err
	}

	// The membership ports lie below the frontend's (cluster.StandardPorts)
	// and must stay below 32768, so the frontend's is picked here.
	port, err := clusterPort()
	if err != nil {
		return err
	}
	// The DSN goes in the environment, not on a command line anyone may read.
	args := []string{"cluster", "--server-only", "--port", strconv.Itoa(port), "--ui-port", "0"}
	env := []string{"ORDERSYNC_CLUSTER_POSTGRES_DSN=" + temporalDSN, "ORDERSYNC_DATA_DIR=" + s.dir,
		"ORDERSYNC_TEMPORAL_NAMESPACE=" + pgNamespace, "ORDERSYNC_LOG_LEVEL=warn"}
	if pg.server, err = startServerChild(ctx, o.childBin, s.dir, args, env, pgNamespace, "Ready: ", 3*time.Minute); err != nil {
		return err
	}
	s.namespace = pgNamespace
	if s.client, err = client.Dial(client.Options{HostPort: pg.server.address, Namespace: s.namespace, Logger: quietLogger{}}); err != nil {
		return err
	}
	if err := s.startStore(ctx, o); err != nil {
		return err
	}
	for i := range po.workers {
		if err := s.startChild(o.childBin, pg.server.address, fmt.Sprintf("worker-%d.log", i+1)); err != nil {
			return err
		}
	}
	return nil
}

// clusterPort is a frontend port whose standard service ports
// (cluster.StandardPorts) are all free and below 32768.
func clusterPort() (int, error) {
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		l.Close()
		// Map the kernel's pick into 20300-31000, where every derived port fits.
		port := 20300 + l.Addr().(*net.TCPAddr).Port%10700
		p := cluster.StandardPorts(port)
		if portsFree(port, p.FrontendMembership, p.History, p.HistoryMembership, p.Matching,
			p.MatchingMembership, p.Worker, p.WorkerMembership, p.Metrics) {
			return port, nil
		}
	}
	return 0, errors.New("no free set of ports for the Temporal server below 32768")
}

func portsFree(ports ...int) bool {
	for _, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// stop stops the server process and drops the run's databases.
func (pg *pgStack) stop() {
	pg.server.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, db := range pg.databases {
		_ = adminExec(ctx, pg.adminDSN, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
	}
}

// postgresStats are the CPU of the PostgreSQL backends serving some
// databases, over the measurement window. Backends are processes of the
// PostgreSQL server, so this needs PostgreSQL on this host. Their memory is
// mostly PostgreSQL's shared buffers, so it is not summed here.
type postgresStats struct {
	What      string   `json:"what"`
	Databases []string `json:"databases"`
	// Backends is the most backends seen at once.
	Backends int     `json:"backends_max"`
	CPUCores float64 `json:"cpu_cores"`
	Note     string  `json:"note,omitempty"`
	// cpu at the backend's first sample (0 for one born in the window) and now.
	first, last map[int]float64
	started     time.Time
	ended       time.Time
}

func newPostgresStats(what string, dbs ...string) *postgresStats {
	return &postgresStats{What: what, Databases: dbs, first: map[int]float64{}, last: map[int]float64{}}
}

// sample reads the CPU of every backend on the databases. The first call
// starts the window.
func (ps *postgresStats) sample(ctx context.Context, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = ANY($1)", ps.Databases)
	if err != nil {
		ps.Note = "list backends: " + err.Error()
		return
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		ps.Note = "list backends: " + err.Error()
		return
	}
	cpu := map[int]float64{}
	for _, pid := range pids {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(int(pid)))); err != nil {
			ps.Note = "PostgreSQL's backends are not processes of this host: their CPU is not measured"
			return
		}
		cpu[int(pid)] = procCPU(int(pid))
	}
	ps.record(time.Now(), cpu)
}

// record adds one sample: the CPU seconds of each backend now. Backends
// first seen after the first sample were born in the window and count
// whole; one that ends between samples loses its last few seconds.
func (ps *postgresStats) record(now time.Time, cpu map[int]float64) {
	initial := ps.started.IsZero()
	if initial {
		ps.started = now
	}
	ps.ended = now
	ps.Backends = max(ps.Backends, len(cpu))
	for pid, c := range cpu {
		if _, seen := ps.first[pid]; !seen {
			ps.first[pid] = 0
			if initial {
				ps.first[pid] = c
			}
		}
		ps.last[pid] = c
	}
	var used float64
	for pid, c := range ps.last {
		used += c - ps.first[pid]
	}
	if d := ps.ended.Sub(ps.started).Seconds(); d > 0 {
		ps.CPUCores = used / d
	}
}

// partitionsPolled counts the partitions of a task queue that had pollers
// lately: the SDK's polls spread over every partition the server has, so
// on a busy queue that is the server's partition count.
func partitionsPolled(ctx context.Context, c client.Client, taskQueue string) (int, error) {
	n := 0
	for i := range 8 {
		name := taskQueue
		if i > 0 {
			name = fmt.Sprintf("/_sys/%s/%d", taskQueue, i) // how the server names partition i
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := c.DescribeTaskQueue(cctx, name, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		cancel()
		if err != nil {
			return n, err
		}
		if len(resp.GetPollers()) > 0 {
			n++
		}
	}
	return n, nil
}
