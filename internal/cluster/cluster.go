// Package cluster runs the Temporal server the way a production deployment
// does, in one process: PostgreSQL persistence (the postgres12_pgx plugin),
// SQL visibility on PostgreSQL, a schema set up by Temporal's own schema
// tool code (SetupSchema), the server's default of 4 partitions per task
// queue, and no namespace or search attribute made behind the operator's
// back: `ordersync setup` does that through the frontend, as against any
// cluster.
//
// The end-to-end tests run ordersync on it beside the embedded SQLite
// server (package devserver), and `ordersync cluster` starts it for a person
// to look at. It differs from a production cluster only in running the four
// services (frontend, history, matching, worker) in one process on one host;
// the persistence, the schema tooling, the task-queue partitions and the
// way clients see it are the production ones.
package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiopts "github.com/temporalio/ui-server/v2/server/server_options"
	"go.temporal.io/server/common/authorization"
	tcluster "go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/temporal"
)

// DefaultHistoryShards is the shard count of a new cluster. It is fixed
// when the databases are first used; 4 suits one host (production clusters
// pick hundreds, once, for the load they expect).
const DefaultHistoryShards = 4

// Options configures the server. Zero values take the defaults noted.
type Options struct {
	Postgres Postgres
	// IP is what every listener binds to (default loopback).
	IP string
	// FrontendPort is the gRPC port clients dial (default 7233; -1 picks a free port).
	FrontendPort int
	// UIPort is the Web UI's port (0: no UI; -1 picks a free port).
	UIPort int
	// DefaultNamespace is the namespace the Web UI opens (default "default").
	DefaultNamespace string
	// HistoryShards is used when the databases are new (default DefaultHistoryShards).
	HistoryShards int32
	// Ports of the services behind the frontend; zero picks free ones. A
	// restart on the same databases should keep them (Server.Options), so
	// the new process takes over its own old membership entries.
	Ports ServicePorts
	// LogLevel of the server's logs (default "warn"); LogFile sends them
	// to a file instead of stderr.
	LogLevel string
	LogFile  string
}

// ServicePorts are the internal gRPC and membership (ringpop) ports. A
// membership port must be below 32768 (the membership table's column is a
// SMALLINT).
type ServicePorts struct {
	FrontendMembership           int
	History, HistoryMembership   int
	Matching, MatchingMembership int
	Worker, WorkerMembership     int
	// Metrics serves the server's Prometheus metrics at /metrics.
	Metrics int
}

// StandardPorts lays the services out as Temporal's own configurations do
// around frontend port 7233 (history 7234, matching 7235, worker 7239,
// membership 6933-6939, metrics 8000), shifted with the frontend port. A
// node that comes back on the same ports takes over its own membership
// entries at once; on fresh ports it first waits out its old self (about
// half a minute of "Not enough hosts to serve the request").
func StandardPorts(frontend int) ServicePorts {
	return ServicePorts{
		FrontendMembership: frontend - 300,
		History:            frontend + 1, HistoryMembership: frontend - 299,
		Matching: frontend + 2, MatchingMembership: frontend - 298,
		Worker: frontend + 6, WorkerMembership: frontend - 294,
		Metrics: frontend + 767,
	}
}

// Server is a running Temporal server on PostgreSQL.
type Server struct {
	opts     Options
	temporal temporal.Server
	ui       *uiserver.Server
}

// Start starts the server on databases SetupSchema prepared; it returns
// once the frontend accepts connections.
func Start(opts Options) (*Server, error) {
	if err := opts.applyDefaults(); err != nil {
		return nil, err
	}
	cfg := buildConfig(&opts)
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
	)
	if err != nil {
		return nil, fmt.Errorf("create Temporal server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start Temporal server on PostgreSQL %s/%s: %w", opts.Postgres.Addr, opts.Postgres.Database, err)
	}
	s := &Server{opts: opts, temporal: srv}
	if opts.UIPort > 0 {
		s.startUI()
	}
	return s, nil
}

// Options returns the options the server runs with, every port resolved:
// Start(s.Options()) after Stop restarts it as it was.
func (s *Server) Options() Options { return s.opts }

// FrontendAddress is the host:port SDK clients and the Temporal CLI dial.
func (s *Server) FrontendAddress() string {
	return net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.FrontendPort))
}

// UIAddress is the Web UI's URL, or "" without a UI.
func (s *Server) UIAddress() string {
	if s.opts.UIPort <= 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.UIPort))
}

// MetricsAddress is the server's Prometheus endpoint.
func (s *Server) MetricsAddress() string {
	return "http://" + net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.Ports.Metrics)) + "/metrics"
}

// Stop shuts the UI and the server down; the databases stay.
func (s *Server) Stop() error {
	if s.ui != nil {
		s.ui.Stop()
	}
	return s.temporal.Stop()
}

func (o *Options) applyDefaults() error {
	if err := o.Postgres.validate(); err != nil {
		return err
	}
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.FrontendPort == 0 {
		o.FrontendPort = 7233
	}
	if o.DefaultNamespace == "" {
		o.DefaultNamespace = "default"
	}
	if o.HistoryShards == 0 {
		o.HistoryShards = DefaultHistoryShards
	}
	if o.LogLevel == "" {
		o.LogLevel = "warn"
	}
	p := &o.Ports
	for _, port := range []*int{&o.FrontendPort, &o.UIPort, &p.FrontendMembership, &p.History, &p.HistoryMembership,
		&p.Matching, &p.MatchingMembership, &p.Worker, &p.WorkerMembership, &p.Metrics} {
		if *port < 0 || (*port == 0 && port != &o.UIPort) {
			free, err := freePort(o.IP)
			if err != nil {
				return err
			}
			*port = free
		}
	}
	return nil
}

func buildConfig(o *Options) *config.Config {
	const mainStore, visibilityStore = "postgres-default", "postgres-visibility"
	service := func(grpcPort, membershipPort int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpcPort, MembershipPort: membershipPort, BindOnIP: o.IP}}
	}
	frontendAddr := net.JoinHostPort(o.IP, strconv.Itoa(o.FrontendPort))
	pg := o.Postgres
	cfg := &config.Config{}
	cfg.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: o.IP}
	cfg.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
		ListenAddress: net.JoinHostPort(o.IP, strconv.Itoa(o.Ports.Metrics)),
		HandlerPath:   "/metrics",
	}}
	cfg.Persistence = config.Persistence{
		DefaultStore:     mainStore,
		VisibilityStore:  visibilityStore,
		NumHistoryShards: o.HistoryShards,
		DataStores: map[string]config.DataStore{
			mainStore:       {SQL: pg.sqlConfig(pg.Database, pg.MaxConns)},
			visibilityStore: {SQL: pg.sqlConfig(pg.VisibilityDatabase, max(2, pg.MaxConns/4))},
		},
	}
	cfg.ClusterMetadata = &tcluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        "active",
		CurrentClusterName:       "active",
		ClusterInformation: map[string]tcluster.ClusterInformation{
			"active": {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
		},
	}
	cfg.DCRedirectionPolicy = config.DCRedirectionPolicy{Policy: "noop"}
	cfg.Services = map[string]config.Service{
		"frontend": service(o.FrontendPort, o.Ports.FrontendMembership),
		"history":  service(o.Ports.History, o.Ports.HistoryMembership),
		"matching": service(o.Ports.Matching, o.Ports.MatchingMembership),
		"worker":   service(o.Ports.Worker, o.Ports.WorkerMembership),
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
	return cfg
}

func (s *Server) startUI() {
	s.ui = uiserver.NewServer(uiopts.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: s.FrontendAddress(),
		Host:                s.opts.IP,
		Port:                s.opts.UIPort,
		EnableUI:            true,
		DefaultNamespace:    s.opts.DefaultNamespace,
		DisableNewsFetch:    true, // the machine may have no internet
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
	}))
	go func() { _ = s.ui.Start() }()
}

func buildLogger(o *Options) (log.Logger, error) {
	lc := log.Config{Level: o.LogLevel, Stdout: o.LogFile == ""}
	if o.LogFile != "" {
		if err := os.MkdirAll(filepath.Dir(o.LogFile), 0o755); err != nil {
			return nil, fmt.Errorf("create directory for %s: %w", o.LogFile, err)
		}
		lc.OutputFile = o.LogFile
	}
	return log.NewZapLogger(log.BuildZapLogger(lc)), nil
}

// freePort picks a free port below 32768: the membership table stores a
// service's port as a SMALLINT, so a port from the kernel's ephemeral range
// (32768 and up on Linux) makes the server die at start with "unable to
// initialize membership heartbeats".
func freePort(ip string) (int, error) {
	const lo, hi = 20000, 32767
	start := lo + rand.IntN(hi-lo)
	for i := range hi - lo {
		port := lo + (start-lo+i)%(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d on %s", lo, hi, ip)
}
