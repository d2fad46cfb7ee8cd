// Package tserver starts a Temporal server inside the ordersync process,
// with what the two servers ordersync runs share: package devserver (SQLite,
// for development and the embedded end-to-end tests) and package
// internal/cluster (PostgreSQL, the production shape). Both are one cluster
// named ClusterName with its four services (frontend, history, matching,
// worker) on one host, Prometheus metrics, archival off, the server's logs
// in a file or on stderr, and the Web UI beside it. What differs, the
// persistence and the dynamic config, is the caller's.
//
// It is the one place besides those two that imports go.temporal.io/server,
// whose first build takes minutes.
package tserver

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
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	"go.temporal.io/server/temporal"
)

// ClusterName is the name of the single cluster both servers run.
const ClusterName = "active"

// Defaults both servers take for what their options leave unset.
const (
	// DefaultIP is loopback, so a server is never reachable from the
	// network by accident.
	DefaultIP           = "127.0.0.1"
	DefaultFrontendPort = 7233
	DefaultNamespace    = "default"
	DefaultLogLevel     = "warn"
)

// ServicePorts are the internal gRPC and membership (ringpop) ports of the
// services behind the frontend, and the metrics port.
type ServicePorts struct {
	FrontendMembership           int
	History, HistoryMembership   int
	Matching, MatchingMembership int
	Worker, WorkerMembership     int
	// Metrics serves the server's Prometheus metrics at /metrics.
	Metrics int
}

// Options say how to start the server; every port is resolved already.
type Options struct {
	// IP is what every listener binds to.
	IP string
	// FrontendPort is the gRPC port clients dial.
	FrontendPort int
	// UIPort is the Web UI's port; 0: no UI.
	UIPort int
	Ports  ServicePorts
	// Persistence is the server's databases.
	Persistence config.Persistence
	// UINamespace is the namespace the Web UI opens.
	UINamespace string
	// DynamicConfig, when set, tunes the server; nil keeps the server's defaults.
	DynamicConfig dynamicconfig.Client
	// LogLevel of the server's logs; LogFile sends them to a file instead
	// of stderr.
	LogLevel string
	LogFile  string
}

// Server is a running server and its Web UI.
type Server struct {
	ip                   string
	frontendPort, uiPort int
	uiNamespace          string
	temporal             temporal.Server
	ui                   *uiserver.Server
}

// New creates the server; Start starts it.
func New(o Options) (*Server, error) {
	cfg := buildConfig(o)
	logger, err := buildLogger(o.LogLevel, o.LogFile)
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
	serverOpts := []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
	}
	if o.DynamicConfig != nil {
		serverOpts = append(serverOpts, temporal.WithDynamicConfigClient(o.DynamicConfig))
	}
	srv, err := temporal.NewServer(serverOpts...)
	if err != nil {
		return nil, fmt.Errorf("create Temporal server: %w", err)
	}
	return &Server{ip: o.IP, frontendPort: o.FrontendPort, uiPort: o.UIPort, uiNamespace: o.UINamespace, temporal: srv}, nil
}

// Start starts the server, then its UI; it returns once the frontend
// accepts connections. The error is the server's own, for the caller to
// say which server it was.
func (s *Server) Start() error {
	if err := s.temporal.Start(); err != nil {
		return err
	}
	if s.uiPort > 0 {
		s.startUI()
	}
	return nil
}

// FrontendAddress is the host:port SDK clients and the Temporal CLI dial.
func (s *Server) FrontendAddress() string {
	return net.JoinHostPort(s.ip, strconv.Itoa(s.frontendPort))
}

// UIAddress is the Web UI's URL, or "" without a UI.
func (s *Server) UIAddress() string {
	if s.uiPort <= 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(s.ip, strconv.Itoa(s.uiPort))
}

// Stop shuts the UI and the server down; the databases stay.
func (s *Server) Stop() error {
	if s.ui != nil {
		s.ui.Stop()
	}
	return s.temporal.Stop()
}

func (s *Server) startUI() {
	s.ui = uiserver.NewServer(uiopts.WithConfigProvider(&uiconfig.Config{
		TemporalGRPCAddress: s.FrontendAddress(),
		Host:                s.ip,
		Port:                s.uiPort,
		EnableUI:            true,
		DefaultNamespace:    s.uiNamespace,
		DisableNewsFetch:    true, // the machine may have no internet; the UI must not wait on it
		CORS:                uiconfig.CORS{CookieInsecure: true},
		// No banner and no access-log line per request on our stdout: they
		// drowned the worker's log under `ordersync dev`.
		HideLogs: true,
	}))
	go func() { _ = s.ui.Start() }()
}

// buildConfig is the server configuration of o: one cluster, four
// services on o.IP, Prometheus metrics, archival off, o's persistence.
func buildConfig(o Options) *config.Config {
	service := func(grpcPort, membershipPort int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpcPort, MembershipPort: membershipPort, BindOnIP: o.IP}}
	}
	frontendAddr := net.JoinHostPort(o.IP, strconv.Itoa(o.FrontendPort))
	cfg := &config.Config{}
	cfg.Global.Membership = config.Membership{MaxJoinDuration: 30 * time.Second, BroadcastAddress: o.IP}
	cfg.Global.Metrics = &metrics.Config{Prometheus: &metrics.PrometheusConfig{
		ListenAddress: net.JoinHostPort(o.IP, strconv.Itoa(o.Ports.Metrics)),
		HandlerPath:   "/metrics",
	}}
	cfg.Persistence = o.Persistence
	cfg.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        ClusterName,
		CurrentClusterName:       ClusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			ClusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontendAddr},
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

func buildLogger(level, file string) (log.Logger, error) {
	lc := log.Config{Level: level, Stdout: file == ""}
	if file != "" {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return nil, fmt.Errorf("create directory for %s: %w", file, err)
		}
		lc.OutputFile = file
	}
	return log.NewZapLogger(log.BuildZapLogger(lc)), nil
}

// FreePort picks a free port below 32768, outside the kernel's ephemeral
// range (32768 and up on Linux): the SQL membership table stores a
// service's port as a SMALLINT (a higher one makes the server die at start
// with "unable to initialize membership heartbeats"), and a port the
// kernel handed out as free can be taken by an outgoing connection's local
// port before the server binds it (a benchmark with thousands of
// connections saw ringpop die with "bind: address already in use").
func FreePort(ip string) (int, error) {
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
