package devcmd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/cluster"
	"github.com/ordersync/ordersync/internal/tsetup"
)

// NewCluster returns the cluster command.
func NewCluster(app *cli.App) *cobra.Command {
	var o clusterOptions
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run the production-shaped stack locally: Temporal on PostgreSQL, setup, 3 worker processes",
		Long: `Starts the stack the PostgreSQL end-to-end tests run on, for a person to look at:
  - Temporal's databases on PostgreSQL (--postgres; the path names the main
    database, visibility gets <name>_visibility), created and migrated with
    temporal-sql-tool's code (create-database, setup-schema, update-schema);
  - the Temporal server on them (SQL visibility, 4 task-queue partitions,
    4 history shards) with its Web UI;
  - ` + "`ordersync setup`" + ` for the namespace (ORDERSYNC_TEMPORAL_NAMESPACE);
  - the simulator with the demo shops, and the demo webhook receiver;
  - --workers ` + "`ordersync worker`" + ` processes on the order store (ORDERSYNC_STORE_DSN,
    a PostgreSQL database is created when missing) and the demo cursors.
Everything stays in PostgreSQL across restarts; logs go to $ORDERSYNC_DATA_DIR/cluster/.
--server-only stops after ` + "`ordersync setup`" + `: the schema, the server and the
namespace, no simulator, workers or cursors (the benchmark's PostgreSQL case
runs the server so, to measure its process apart).
--server-nodes N (2 to 9) runs the server as N processes on the same databases,
one ring through the cluster_membership table, behind a TCP load balancer on
--port that every client dials: node n listens around --port+10n (--port 0 picks
every port), and when one dies the others take its shards and task queues.
` + "`make cluster`" + ` runs it on the PostgreSQL that .ci/postgres.sh sets up.`,
		Example: "  ordersync cluster --postgres postgres://temporal:temporal@127.0.0.1:5432/temporal -f examples/demo-platforms.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.postgres == "" {
				return cli.Usage(errors.New("--postgres is required (a role that may create databases; .ci/postgres.sh prints one)"))
			}
			if o.workers < 1 {
				return cli.Usage(fmt.Errorf("--workers %d: want at least 1", o.workers))
			}
			if o.serverNodes < 1 || o.serverNodes > maxServerNodes {
				return cli.Usage(fmt.Errorf("--server-nodes %d: want 1 to %d", o.serverNodes, maxServerNodes))
			}
			if o.frontendPort == 0 && o.serverNodes == 1 {
				return cli.Usage(errors.New("--port 0 (pick a port) needs --server-nodes 2 or more: a single server keeps its ports across restarts"))
			}
			ctx, stop := cli.SignalContext()
			defer stop()
			return runCluster(ctx, app, o)
		},
	}
	cmd.Flags().StringVar(&o.postgres, "postgres", os.Getenv("ORDERSYNC_CLUSTER_POSTGRES_DSN"), "PostgreSQL URL for Temporal's databases (default $ORDERSYNC_CLUSTER_POSTGRES_DSN)")
	o.stackFlags.register(cmd, "simulator address")
	cmd.Flags().IntVar(&o.workers, "workers", 3, "how many ordersync worker processes to run")
	cmd.Flags().BoolVar(&o.serverOnly, "server-only", false, "run only the schema setup, the Temporal server (and Web UI) and ordersync setup; no simulator, store, workers or cursors")
	cmd.Flags().IntVar(&o.serverNodes, "server-nodes", 1, "how many Temporal server processes to run, behind a load balancer on --port (1: the server in this process)")
	cmd.AddCommand(newClusterNode(app))
	return cmd
}

func runCluster(ctx context.Context, app *cli.App, o clusterOptions) error {
	pg, err := cluster.PostgresFromDSN(o.postgres)
	if err != nil {
		return cli.Usage(fmt.Errorf("--postgres: %w", err))
	}
	// Checked before the server starts, so a mistake costs no schema setup.
	var file *config.File
	var platformsPath string
	if !o.serverOnly {
		if !strings.HasPrefix(app.Process.StoreDSN, "postgres") {
			return cli.Usage(fmt.Errorf("ORDERSYNC_STORE_DSN must be a postgres:// URL for the cluster (got %s)", app.Process.StoreDSN))
		}
		if file, err = app.LoadPlatforms(); err != nil {
			return err
		}
		if platformsPath, err = filepath.Abs(file.Path); err != nil {
			return err
		}
	}
	dir := filepath.Join(app.Process.DataDir, "cluster")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}

	ports := listenPorts(app, o.stackFlags, o.serverOnly, false)
	if o.serverNodes > 1 {
		ports = append(ports, nodeListenPorts(o.frontendPort, o.serverNodes)...)
	}
	if err := checkPorts(ports); err != nil {
		return err
	}
	began := time.Now()
	if err := cluster.SetupSchema(pg, nil); err != nil {
		return err
	}
	fmt.Fprintf(app.Out, "Temporal schema:   %s and %s on %s, up to date (%s)\n", pg.Database, pg.VisibilityDatabase, pg.Addr, time.Since(began).Round(time.Millisecond))
	var srv temporalServer
	if o.serverNodes > 1 {
		nodes, err := startServerNodes(ctx, app, o, dir)
		if err != nil {
			return err
		}
		defer stopServer(app, nodes, "Temporal server nodes")
		useServer(app, nodes, fmt.Sprintf("a load balancer in front of %d server nodes; 4 partitions per task queue, %d history shards", o.serverNodes, cluster.DefaultHistoryShards))
		nodes.print(ctx)
		srv = nodes
	} else {
		one, err := cluster.Start(cluster.Options{Postgres: pg, FrontendPort: o.frontendPort, UIPort: o.uiPort,
			Ports:            cluster.StandardPorts(o.frontendPort), // a restart finds its own membership entries
			DefaultNamespace: app.Process.TemporalNamespace, LogFile: filepath.Join(dir, "temporal.log")})
		if err != nil {
			return serverPortError(err, ports, "--port (the services' ports follow it: history --port+1, matching +2, worker +6, membership --port-300 to -294, metrics +767)")
		}
		defer stopServer(app, one, "Temporal server")
		useServer(app, one, fmt.Sprintf("4 partitions per task queue, %d history shards", cluster.DefaultHistoryShards))
		fmt.Fprintf(app.Out, "Temporal metrics:  %s\n", one.MetricsAddress())
		fmt.Fprintf(app.Out, "Temporal log:      %s\n", filepath.Join(dir, "temporal.log"))
		srv = one
	}

	// The operator's step, as against any cluster.
	if err := app.RunSetup(ctx, tsetup.Options{Namespace: app.Process.TemporalNamespace}); err != nil {
		return fmt.Errorf("ordersync setup: %w", err)
	}
	if o.serverOnly {
		fmt.Fprintf(app.Out, "Ready: namespace %s on %s\n", app.Process.TemporalNamespace, srv.FrontendAddress())
		runUntilInterrupted(ctx, app)
		return nil
	}

	simSrv, err := startDemoSimulator(app, o.simListen, filepath.Join(dir, "sim-start"))
	if err != nil {
		return err
	}
	defer simSrv.Close()
	stopReceiver, err := startDemoReceiver(ctx, app, o.rcvListen)
	if err != nil {
		return err
	}
	defer func() { _ = stopReceiver() }()
	if err := config.CheckCredentials(file.Path, file.Platforms); err != nil {
		return cli.Usage(err)
	}
	if err := config.CheckDestinationSecrets(file.Path, file.Destinations); err != nil {
		return cli.Usage(err)
	}
	if err := ensureStoreDatabase(ctx, app.Process.StoreDSN); err != nil {
		return err
	}
	fmt.Fprintf(app.Out, "Orders store:      %s\n", redactDSN(app.Process.StoreDSN))

	procs, err := startWorkerProcesses(ctx, app, o.workers, dir, platformsPath)
	defer stopWorkerProcesses(procs)
	if err != nil {
		return err
	}
	c, err := app.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := startCursors(ctx, app, c, file.Platforms); err != nil {
		return err
	}
	if err := ensureDeliveries(ctx, app, c, nil, file.Destinations); err != nil {
		return err
	}
	// The hint must be pasteable, and the store's DSN carries a password:
	// printed, it would sit in the terminal's scrollback and CI logs. So
	// the settings go to an env file only its owner reads, and the hint
	// sources it. Without ORDERSYNC_STORE_DSN, verify, changes and
	// deliveries would read the default SQLite store (make run's) and
	// report on the wrong orders.
	envFile := filepath.Join(dir, "env")
	if err := writeEnvFile(envFile, [][2]string{
		{"ORDERSYNC_TEMPORAL_ADDRESS", srv.FrontendAddress()},
		{"ORDERSYNC_TEMPORAL_NAMESPACE", app.Process.TemporalNamespace},
		{"ORDERSYNC_PLATFORMS_FILE", platformsPath},
		{"ORDERSYNC_STORE_DSN", app.Process.StoreDSN},
	}); err != nil {
		return err
	}
	fmt.Fprintf(app.Out, "\nIn another shell (the env file sets the Temporal address, namespace, platforms file and store DSN; mode 0600, it holds the store's password):\n"+
		"  . %s\n  ./bin/ordersync platform status --watch\n", shellQuote(absOr(envFile)))
	runUntilInterrupted(ctx, app)
	return nil
}

// workerProcess is one `ordersync worker` child.
type workerProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startWorkerProcesses(ctx context.Context, app *cli.App, n int, dir, platformsPath string) ([]*workerProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find the ordersync binary: %w", err)
	}
	var procs []*workerProcess
	for i := range n {
		logPath := filepath.Join(dir, fmt.Sprintf("worker-%d.log", i+1))
		logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return procs, fmt.Errorf("open %s: %w", logPath, err)
		}
		metricsAddr := fmt.Sprintf("127.0.0.1:%d", 9464+i)
		cmd := exec.Command(self, "worker")
		// The demo tokens are in this process's environment already.
		cmd.Env = append(os.Environ(),
			"ORDERSYNC_TEMPORAL_ADDRESS="+app.Process.TemporalAddress,
			"ORDERSYNC_TEMPORAL_NAMESPACE="+app.Process.TemporalNamespace,
			"ORDERSYNC_STORE_DSN="+app.Process.StoreDSN,
			"ORDERSYNC_PLATFORMS_FILE="+platformsPath,
			"ORDERSYNC_METRICS_ADDRESS="+metricsAddr,
		)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			logFile.Close()
			return procs, fmt.Errorf("start worker %d: %w", i+1, err)
		}
		p := &workerProcess{cmd: cmd, done: make(chan struct{})}
		go func() {
			err := cmd.Wait()
			logFile.Close()
			close(p.done)
			if ctx.Err() == nil {
				app.Logger.Error("worker process exited", "worker", i+1, "error", err, "log", logPath)
			}
		}()
		procs = append(procs, p)
		fmt.Fprintf(app.Out, "Worker %d:          pid %d, metrics http://%s/metrics, log %s\n", i+1, cmd.Process.Pid, metricsAddr, logPath)
	}
	return procs, nil
}

// stopWorkerProcesses drains every worker (SIGTERM) before the server stops.
func stopWorkerProcesses(procs []*workerProcess) {
	for _, p := range procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// ensureStoreDatabase creates the store's database when it does not exist,
// so one PostgreSQL role is all `make cluster` needs.
func ensureStoreDatabase(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("ORDERSYNC_STORE_DSN: %w", err)
	}
	name := cfg.Database
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL %s:%d to create the store database: %w", cfg.Host, cfg.Port, err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return fmt.Errorf("look for the store database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create the store database %s: %w", name, err)
	}
	return nil
}

// redactDSN hides the password when the DSN is printed.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparseable DSN)"
	}
	return u.Redacted()
}

// writeEnvFile writes `export NAME='value'` lines that a POSIX shell
// sources, readable by the owner only (a value may be a password).
func writeEnvFile(path string, vars [][2]string) error {
	var b strings.Builder
	b.WriteString("# written by ordersync cluster: source it (. FILE) to point the CLI at this cluster\n")
	for _, kv := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", kv[0], shellQuote(kv[1]))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// WriteFile keeps the mode of a file that exists.
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell: in single quotes, each quote
// closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// absOr is path made absolute, or path when that fails.
func absOr(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
