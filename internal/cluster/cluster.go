// Package cluster runs the Temporal server the way a production deployment
// does, in one process: PostgreSQL persistence (the postgres12_pgx plugin),
// SQL visibility on PostgreSQL, a schema set up by Temporal's own schema
// tool code (SetupSchema), the server's default of 4 partitions per task
// queue, the server's dynamic config but for fairness by key (which a
// production cluster serving ordersync sets too), and no namespace or search attribute made behind the operator's
// back: `ordersync setup` does that through the frontend, as against any
// cluster.
//
// The end-to-end tests run ordersync on it beside the embedded SQLite
// server (package devserver), and `ordersync cluster` starts it for a person
// to look at. Each server runs the four services (frontend, history,
// matching, worker) in one process; several such processes on the same
// databases form one cluster (Options.ClusterAddress, nodes.go) behind a
// Balancer, as `ordersync cluster --server-nodes N` runs them. It differs
// from a production cluster only in running on one host; the persistence,
// the schema tooling, the membership, the task-queue partitions and the way
// clients see it are the production ones.
package cluster

import (
	"cmp"
	"fmt"
	"net"
	"strconv"

	"go.temporal.io/server/common/config"

	"github.com/ordersync/ordersync/internal/tserver"
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
	// ClusterAddress, when set, makes this server one node of several on
	// the same databases (nodes.go): the address clients reach them
	// all at, a load balancer in front of their frontends.
	ClusterAddress string
}

// ServicePorts are the internal gRPC and membership (ringpop) ports. A
// membership port must be below 32768 (the membership table's column is a
// SMALLINT).
type ServicePorts = tserver.ServicePorts

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

// Server is a running Temporal server on PostgreSQL; FrontendAddress,
// UIAddress and Stop come from tserver.Server.
type Server struct {
	*tserver.Server
	opts Options
}

// Start starts the server on databases SetupSchema prepared; it returns
// once the frontend accepts connections.
func Start(opts Options) (*Server, error) {
	if err := opts.applyDefaults(); err != nil {
		return nil, err
	}
	srv, err := tserver.Start(buildConfig(&opts))
	if err != nil {
		return nil, fmt.Errorf("start Temporal server on PostgreSQL %s/%s: %w", opts.Postgres.Addr, opts.Postgres.Database, err)
	}
	resolved := srv.Options()
	opts.FrontendPort, opts.UIPort, opts.Ports = resolved.FrontendPort, resolved.UIPort, resolved.Ports
	return &Server{Server: srv, opts: opts}, nil
}

// Options returns the options the server runs with, every port resolved:
// Start(s.Options()) after Stop restarts it as it was.
func (s *Server) Options() Options { return s.opts }

// MetricsAddress is the server's Prometheus endpoint.
func (s *Server) MetricsAddress() string {
	return "http://" + net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.Ports.Metrics)) + "/metrics"
}

func (o *Options) applyDefaults() error {
	if err := o.Postgres.validate(); err != nil {
		return err
	}
	o.IP = cmp.Or(o.IP, tserver.DefaultIP)
	o.FrontendPort = cmp.Or(o.FrontendPort, tserver.DefaultFrontendPort)
	o.DefaultNamespace = cmp.Or(o.DefaultNamespace, tserver.DefaultNamespace)
	o.HistoryShards = cmp.Or(o.HistoryShards, DefaultHistoryShards)
	o.LogLevel = cmp.Or(o.LogLevel, tserver.DefaultLogLevel)
	// -1 (and 0, but for the UI) is tserver.Pick: the server picks the
	// port when it starts, again if another process takes it first;
	// Server.Options has the ports it took.
	return nil
}

// buildConfig is the server's configuration: PostgreSQL for the main and
// the visibility store, the ports o resolved.
func buildConfig(o *Options) tserver.Options {
	const mainStore, visibilityStore = "postgres-default", "postgres-visibility"
	pg := o.Postgres
	return tserver.Options{
		IP:           o.IP,
		FrontendPort: o.FrontendPort,
		UIPort:       o.UIPort,
		Ports:        o.Ports,
		Persistence: config.Persistence{
			DefaultStore:     mainStore,
			VisibilityStore:  visibilityStore,
			NumHistoryShards: o.HistoryShards,
			DataStores: map[string]config.DataStore{
				mainStore:       {SQL: pg.sqlConfig(pg.Database, pg.MaxConns)},
				visibilityStore: {SQL: pg.sqlConfig(pg.VisibilityDatabase, max(2, pg.MaxConns/4))},
			},
		},
		UINamespace: o.DefaultNamespace,
		// The server's defaults but for fairness across the accounts of
		// a task queue, which an operator's cluster needs too
		// (deploy/README.md, "Fairness across accounts").
		DynamicConfig:  tserver.FairnessDynamicConfig(),
		LogLevel:       o.LogLevel,
		LogFile:        o.LogFile,
		ClusterAddress: o.ClusterAddress,
	}
}
