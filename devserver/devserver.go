// Package devserver runs a complete single-node Temporal server inside the
// ordersync process: SQLite persistence in one file, the Web UI, the ordersync
// namespace with a long retention and the project's search attributes.
//
// It is for development, demos and end-to-end tests. Production deployments
// point ordersync at a real Temporal cluster instead (see the README).
package devserver

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives/timestamp"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", also used by the server's own plugin

	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/tserver"
)

// Options configures the embedded server. Zero values take the defaults below.
type Options struct {
	// DatabasePath is the SQLite file holding every workflow; a restart on the
	// same file keeps them all. Empty means an in-memory database.
	DatabasePath string
	// IP is the address every listener binds to; loopback by default so a
	// development server is never reachable from the network by accident.
	IP string
	// FrontendPort is the gRPC port clients dial (default 7233; -1 picks a free port).
	FrontendPort int
	// UIPort is the Web UI port (default 8233; 0 disables the UI; -1 picks a free port).
	UIPort int
	// Namespace is created at start (default "default").
	Namespace string
	// Retention keeps closed workflows this long (default 30 days) so failed
	// slices stay visible in the Web UI long after they happened.
	Retention time.Duration
	// LogLevel of the server's own logs (default "warn"); LogFile sends them
	// to a file instead of stderr.
	LogLevel string
	LogFile  string
	// DynamicConfig overrides keys of the single-node dynamic config;
	// ordersync-bench's fairness case turns fairness off or sets the
	// partitions of a cluster to compare. Nil keeps the defaults.
	DynamicConfig dynamicconfig.StaticClient
}

const (
	DefaultFrontendPort = tserver.DefaultFrontendPort
	DefaultUIPort       = 8233
	DefaultRetention    = 30 * 24 * time.Hour
)

// Server is a running embedded Temporal server; FrontendAddress, UIAddress
// and Stop come from tserver.Server.
type Server struct {
	*tserver.Server
	opts Options
}

func (o *Options) applyDefaults() error {
	o.IP = cmp.Or(o.IP, tserver.DefaultIP)
	o.FrontendPort = cmp.Or(o.FrontendPort, DefaultFrontendPort)
	o.Namespace = cmp.Or(o.Namespace, tserver.DefaultNamespace)
	o.Retention = cmp.Or(o.Retention, DefaultRetention)
	o.LogLevel = cmp.Or(o.LogLevel, tserver.DefaultLogLevel)
	// -1 is tserver.Pick: the server picks the port when it starts, and
	// picks again if another process takes it first.
	return nil
}

// Start creates the database if needed, registers the namespace and search
// attributes, and starts the server and the UI. It returns once the frontend
// accepts connections.
func Start(opts Options) (*Server, error) {
	if err := opts.applyDefaults(); err != nil {
		return nil, err
	}
	serverOpts, err := buildConfig(&opts)
	if err != nil {
		return nil, err
	}
	sqlCfg := serverOpts.Persistence.DataStores[sqliteplugin.PluginName].SQL
	if opts.DatabasePath != "" {
		if err := os.MkdirAll(filepath.Dir(opts.DatabasePath), 0o755); err != nil {
			return nil, fmt.Errorf("create directory for %s: %w", opts.DatabasePath, err)
		}
		if _, err := os.Stat(opts.DatabasePath); errors.Is(err, os.ErrNotExist) {
			if err := sqliteschema.SetupSchema(sqlCfg); err != nil {
				return nil, fmt.Errorf("set up Temporal schema in %s: %w", opts.DatabasePath, err)
			}
		} else if err := forgetOldMembers(opts.DatabasePath); err != nil {
			return nil, err
		}
	} // an in-memory database gets its schema from the SQLite plugin itself
	if err := createNamespace(&opts, sqlCfg, tserver.ClusterName); err != nil {
		return nil, err
	}

	srv, err := tserver.Start(serverOpts)
	if err != nil {
		return nil, fmt.Errorf("start Temporal server: %w", err)
	}
	opts.FrontendPort, opts.UIPort = srv.Options().FrontendPort, srv.Options().UIPort
	return &Server{Server: srv, opts: opts}, nil
}

// Namespace is the namespace the server created at start.
func (s *Server) Namespace() string { return s.opts.Namespace }

// buildConfig is the server's configuration: SQLite in opts.DatabasePath
// (or in memory), ports picked at start for the services behind the frontend, and the
// single-node dynamic config.
func buildConfig(opts *Options) (tserver.Options, error) {
	sqlCfg := &config.SQL{
		PluginName: sqliteplugin.PluginName,
		// The SQLite plugin turns every attribute it does not know into a
		// pragma of that exact name, so the keys carry no underscore
		// ("_journal_mode" was silently ignored: a rollback journal with
		// an fsync per commit, 3.5x slower in `make bench`). WAL with
		// synchronous=NORMAL, like the order store: a crashed process
		// loses nothing committed; power loss may lose the last commits.
		ConnectAttributes: map[string]string{"journal_mode": "wal", "synchronous": "1"},
		DatabaseName:      opts.DatabasePath,
	}
	if opts.DatabasePath == "" {
		sqlCfg.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		sqlCfg.DatabaseName = fmt.Sprintf("ordersync-%d", time.Now().UnixNano())
	} else {
		sqlCfg.ConnectAttributes["mode"] = "rwc"
	}
	return tserver.Options{
		IP:           opts.IP,
		FrontendPort: opts.FrontendPort,
		UIPort:       opts.UIPort,
		// Zero: tserver.Start picks every service port, again if taken.
		Ports: tserver.ServicePorts{},
		Persistence: config.Persistence{
			DefaultStore:     sqliteplugin.PluginName,
			VisibilityStore:  sqliteplugin.PluginName,
			NumHistoryShards: 1,
			DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		},
		UINamespace:   opts.Namespace,
		DynamicConfig: singleNodeDynamicConfig(opts.DynamicConfig),
		LogLevel:      opts.LogLevel,
		LogFile:       opts.LogFile,
	}, nil
}

// createNamespace registers the namespace directly in the database before the
// server starts, so workers can connect the moment the frontend is up. An
// existing namespace is left as it is.
func createNamespace(opts *Options, sqlCfg *config.SQL, clusterName string) error {
	attrs := map[string]enumspb.IndexedValueType{}
	for _, a := range searchattr.All {
		attrs[a.Name] = a.Type
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, opts.Namespace, false, attrs)
	if err != nil {
		return fmt.Errorf("namespace %s: %w", opts.Namespace, err)
	}
	ns.Detail.Config.Retention = timestamp.DurationPtr(opts.Retention)
	if err := sqliteschema.CreateNamespaces(sqlCfg, ns); err != nil {
		return fmt.Errorf("create namespace %s: %w", opts.Namespace, err)
	}
	return nil
}

// singleNodeDynamicConfig tunes the server for one process: one task-queue
// partition (measured here: triples dispatch throughput on one node),
// immediate search-attribute visibility, and worker-deployment drainage
// reported within seconds instead of the server's 3-minute grace plus
// 3-minute refresh (they cover visibility lag across a cluster; this
// server's SQLite visibility is written with the workflow); fairness
// across the accounts of a queue (tserver.FairnessDynamicConfig). The
// overrides replace keys of these.
func singleNodeDynamicConfig(overrides dynamicconfig.StaticClient) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		dynamicconfig.VersionDrainageStatusVisibilityGracePeriod.Key():         drainageCheckInterval,
		dynamicconfig.VersionDrainageStatusRefreshInterval.Key():               drainageCheckInterval,
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():                 1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key():                1,
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key():            true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,
	}
	maps.Copy(dc, tserver.FairnessDynamicConfig())
	maps.Copy(dc, overrides)
	return dc
}

// drainageCheckInterval is how soon, and how often, the dev server checks
// whether a worker deployment version that lost its current role still
// has pinned workflows.
const drainageCheckInterval = 5 * time.Second

// forgetOldMembers deletes the cluster membership a previous run left in the
// database. On one node every recorded member is this server's own dead
// past; left there, the new server tries to join them, and when they were
// recent (a quick restart) it gives up after the join timeout and exits.
func forgetOldMembers(path string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.Exec("DELETE FROM cluster_membership"); err != nil {
		return fmt.Errorf("clear old cluster membership in %s: %w", path, err)
	}
	return nil
}
