// Package tserver starts a Temporal server inside the ordersync process,
// with what the two servers ordersync runs share: package devserver (SQLite,
// for development and the embedded end-to-end tests) and package
// internal/cluster (PostgreSQL, the production shape). Both are one cluster
// named ClusterName with its four services (frontend, history, matching,
// worker) in one process, Prometheus metrics, archival off, the server's
// logs in a file or on stderr, and the Web UI beside it (or apart, StartUI).
// Several processes on the same databases are one cluster when each is
// given the ClusterAddress they share. What differs, the persistence and
// the dynamic config, is the caller's.
//
// It is the one place besides those two that imports go.temporal.io/server,
// whose first build takes minutes.
package tserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

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

// Options say how to start the server. A port may be Pick (0 too, for
// every port but the UI's): Start picks a free one.
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
	// PickPort picks the ports set to Pick (default FreePort); tests
	// inject one to take a port between the pick and the bind.
	PickPort PortPicker
	// ClusterAddress, when set, makes this server one node of several on
	// the same databases: it is the address clients reach the cluster at
	// (a load balancer in front of every node's frontend), kept in the
	// cluster metadata every node must agree on (a node writing its own
	// frontend there would overwrite the others' at each start), and the
	// system workers reach a frontend through membership rather than this
	// node's own. Empty: a server alone, whose frontend is the cluster's
	// address.
	ClusterAddress string
}

// Server is a running server and its Web UI.
type Server struct {
	opts     Options // every port resolved
	temporal startStopper
	ui       *UI
}

// Options are the options the server runs with, every port resolved.
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

// Stop shuts the UI and the server down; the databases stay.
func (s *Server) Stop() error {
	if s.ui != nil {
		s.ui.Stop()
	}
	return s.temporal.Stop()
}

// newTemporal creates the Temporal server of o (every port resolved),
// logging through logger.
func newTemporal(o Options, logger log.Logger) (temporal.Server, error) {
	cfg := buildConfig(o)
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
	return srv, nil
}

// buildConfig is the server configuration of o: one cluster, four
// services on o.IP, Prometheus metrics, archival off, o's persistence.
func buildConfig(o Options) *config.Config {
	service := func(grpcPort, membershipPort int) config.Service {
		return config.Service{RPC: config.RPC{GRPCPort: grpcPort, MembershipPort: membershipPort, BindOnIP: o.IP}}
	}
	frontendAddr := net.JoinHostPort(o.IP, strconv.Itoa(o.FrontendPort))
	clusterAddr := frontendAddr
	if o.ClusterAddress != "" {
		clusterAddr = o.ClusterAddress
	}
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
			ClusterName: {Enabled: true, InitialFailoverVersion: 1, RPCAddress: clusterAddr},
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
	if o.ClusterAddress == "" {
		cfg.PublicClient = config.PublicClient{HostPort: frontendAddr}
	}
	// else empty: the worker service finds the frontends through
	// membership (the server's own recommendation without an authorizer),
	// so it keeps working when another node, or the balancer, is gone.
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
