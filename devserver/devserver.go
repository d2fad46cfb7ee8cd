// Package devserver runs a complete single-node Temporal server inside the
// ordersync process: SQLite persistence in one file, the Web UI, the ordersync
// namespace with a long retention and the project's search attributes.
//
// It is for development, demos and end-to-end tests. Production deployments
// point ordersync at a real Temporal cluster instead (see the README).
package devserver

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiopts "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives/timestamp"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", also used by the server's own plugin

	"github.com/ordersync/ordersync/internal/searchattr"
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
}

const (
	DefaultFrontendPort = 7233
	DefaultUIPort       = 8233
	DefaultRetention    = 30 * 24 * time.Hour
)

// Server is a running embedded Temporal server.
type Server struct {
	opts     Options
	temporal temporal.Server
	ui       *uiserver.Server
	uiErr    chan error
}

func (o *Options) applyDefaults() error {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.FrontendPort == 0 {
		o.FrontendPort = DefaultFrontendPort
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	var err error
	if o.FrontendPort < 0 {
		if o.FrontendPort, err = freePort(o.IP); err != nil {
			return err
		}
	}
	if o.UIPort < 0 {
		if o.UIPort, err = freePort(o.IP); err != nil {
			return err
		}
	}
	return nil
}

// Start creates the database if needed, registers the namespace and search
// attributes, and starts the server and the UI. It returns once the frontend
// accepts connections.
func Start(opts Options) (*Server, error) {
	if err := opts.applyDefaults(); err != nil {
		return nil, err
	}
	cfg, err := buildConfig(&opts)
	if err != nil {
		return nil, err
	}
	sqlCfg := cfg.Persistence.DataStores[sqliteplugin.PluginName].SQL
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
	if err := createNamespace(&opts, sqlCfg, cfg.ClusterMetadata.CurrentClusterName); err != nil {
		return nil, err
	}

	logger, err := buildLogger(&opts)
	if err != nil {
		return nil, err
	}
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("claim mapper: %w", err)
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(singleNodeDynamicConfig()),
	)
	if err != nil {
		return nil, fmt.Errorf("create Temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start Temporal server: %w", err)
	}
	s := &Server{opts: opts, temporal: srv}
	if opts.UIPort > 0 {
		s.startUI()
	}
	return s, nil
}

// FrontendAddress is the host:port SDK clients and the Temporal CLI dial.
func (s *Server) FrontendAddress() string {
	return net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.FrontendPort))
}

// UIAddress is the Web UI URL, or "" when the UI is disabled.
func (s *Server) UIAddress() string {
	if s.opts.UIPort <= 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.UIPort))
}

// Namespace is the namespace the server created at start.
func (s *Server) Namespace() string { return s.opts.Namespace }

// Stop shuts the UI and the server down; the database file stays.
func (s *Server) Stop() error {
	if s.ui != nil {
		s.ui.Stop()
	}
	return s.temporal.Stop()
}

func (s *Server) startUI() {
	uiCfg := &uiconfig.Config{
		TemporalGRPCAddress: s.FrontendAddress(),
		Host:                s.opts.IP,
		Port:                s.opts.UIPort,
		EnableUI:            true,
		DefaultNamespace:    s.opts.Namespace,
		DisableNewsFetch:    true, // the machine may have no internet; the UI must not wait on it
		CORS:                uiconfig.CORS{CookieInsecure: true},
		// No banner and no access-log line per request on our stdout: they
		// drowned the worker's log under `ordersync dev`.
		HideLogs: true,
	}
	s.ui = uiserver.NewServer(uiopts.WithConfigProvider(uiCfg))
	s.uiErr = make(chan error, 1)
	go func() { s.uiErr <- s.ui.Start() }()
}

func buildConfig(opts *Options) (*config.Config, error) {
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
	ports := make([]int, 8)
	for i := range ports {
		p, err := freePort(opts.IP)
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	service := func(grpcPort, membershipPort int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpcPort, MembershipPort: membershipPort, BindOnIP: opts.IP}}
	}
	frontendAddr := net.JoinHostPort(opts.IP, strconv.Itoa(opts.FrontendPort))
	cfg := &config.Config{}
	cfg.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: opts.IP}
	cfg.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
		ListenAddress: net.JoinHostPort(opts.IP, strconv.Itoa(ports[7])),
		HandlerPath:   "/metrics",
	}}
	cfg.Persistence = config.Persistence{
		DefaultStore:     sqliteplugin.PluginName,
		VisibilityStore:  sqliteplugin.PluginName,
		NumHistoryShards: 1,
		DataStores:       map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
	}
	cfg.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        "active",
		CurrentClusterName:       "active",
		ClusterInformation: map[string]cluster.ClusterInformation{
			"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
		},
	}
	cfg.DCRedirectionPolicy = config.DCRedirectionPolicy{Policy: "noop"}
	cfg.Services = map[string]config.Service{
		"frontend": service(opts.FrontendPort, ports[0]),
		"history":  service(ports[1], ports[2]),
		"matching": service(ports[3], ports[4]),
		"worker":   service(ports[5], ports[6]),
	}
	cfg.Archival = config.Archival{
		History:    config.HistoryArchival{State: "disabled"},
		Visibility: config.VisibilityArchival{State: "disabled"},
	}
	cfg.NamespaceDefaults = config.NamespaceDefaults{Archival: config.ArchivalNamespaceDefaults{
		History:    config.HistoryArchivalNamespaceDefaults{State: "disabled"},
		Visibility: config.VisibilityArchivalNamespaceDefaults{State: "disabled"},
	}}
	cfg.PublicClient = config.PublicClient{HostPort: frontendAddr}
	return cfg, nil
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
// server's SQLite visibility is written with the workflow).
func singleNodeDynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		dynamicconfig.VersionDrainageStatusVisibilityGracePeriod.Key():         drainageCheckInterval,
		dynamicconfig.VersionDrainageStatusRefreshInterval.Key():               drainageCheckInterval,
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():                 1,
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key():                1,
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key():            true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecution.Key():              true,
		dynamicconfig.FrontendEnableUpdateWorkflowExecutionAsyncAccepted.Key(): true,
	}
}

// drainageCheckInterval is how soon, and how often, the dev server checks
// whether a worker deployment version that lost its current role still
// has pinned workflows.
const drainageCheckInterval = 5 * time.Second

func buildLogger(opts *Options) (log.Logger, error) {
	lc := log.Config{Level: opts.LogLevel, Stdout: opts.LogFile == ""}
	if opts.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(opts.LogFile), 0o755); err != nil {
			return nil, fmt.Errorf("create directory for %s: %w", opts.LogFile, err)
		}
		lc.OutputFile = opts.LogFile
	}
	return log.NewZapLogger(log.BuildZapLogger(lc)), nil
}

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

func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
