// Package worker runs ordersync's Temporal workers: one SDK worker per task
// queue, serving the workflows and activities of every platform on that
// queue. A busy platform gets its own queue and many worker processes; quiet
// platforms share one.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/workflows"
)

// DefaultStopTimeout is how long a stopping worker lets running activities
// finish before it gives up on them (Temporal then retries them elsewhere).
const DefaultStopTimeout = 30 * time.Second

// Options configures the workers of one process.
type Options struct {
	Client client.Client
	Store  activities.OrderStore
	// Platforms are platforms given to this process directly (tests, and
	// processes without a registry): their task queues are served and,
	// without Registry, they are all its connectors trust. A fetch takes
	// a platform's identity (kind, endpoint, credentials, options) from
	// here or the registry by name, never from workflow input (see
	// activities.ConnectorCache).
	Platforms []config.Platform
	// Registry, when set, is the account registry this process follows:
	// it serves the task queues of every registered platform, starting
	// pollers for a new queue within seconds (accounts.Directory), and
	// resolves platforms by name from it.
	Registry accounts.Registry
	// RegistryPollInterval is how often the registry is asked for
	// changes (default accounts.DefaultPollInterval).
	RegistryPollInterval time.Duration
	// TaskQueues, when set, restricts the queues served to these (a
	// worker pool dedicated to a busy account's queue, say).
	TaskQueues []string
	Alerter    activities.Alerter
	Logger     *slog.Logger
	// StopTimeout bounds the drain on shutdown (default DefaultStopTimeout).
	StopTimeout time.Duration
	// Metrics, when set, receives the activities' counters and the served
	// platforms' status gauges (see package metrics), and its Readiness
	// learns the task queues to expect polls on (/readyz). The Temporal
	// SDK's own metrics and the poll tracking come from the client: dial it
	// with options from Metrics.InstrumentClient.
	Metrics *metrics.Recorder
	// RequestSlots, when set, paces each platform's requests across every
	// worker process through the shared database (package quota); without
	// it each process paces only itself and the task queue's activity rate
	// is the cross-process limit.
	RequestSlots quota.Slots
	// FutureSkew is how far ahead of now an order's updated_at may be and
	// still count as its newest version (0: activities.DefaultFutureSkew).
	FutureSkew time.Duration
	// Feed and Destinations make this process deliver the change feed:
	// it serves the destinations' task queues, and its delivery activities
	// send only to these destinations, with these URLs and secrets. With
	// Registry too, it delivers to the registry's destinations as well
	// (the registry wins for a name it holds) and serves their task
	// queues as they appear, so one added at runtime needs no restart.
	Feed         activities.ChangeFeed
	Destinations []config.Destination
	// MetricsPollInterval is how often the status gauges are refreshed
	// (default metrics.DefaultPollInterval).
	MetricsPollInterval time.Duration
	// MetricsQueryRate caps the status gauges' queries per second
	// (ORDERSYNC_METRICS_QUERY_RATE; default metrics.DefaultQueryRate).
	MetricsQueryRate float64
	// Version, when set, makes every task-queue worker a version of a
	// Temporal Worker Deployment: it takes tasks only for workflows on that
	// version, which are the deployment's current version's once it is
	// promoted (every workflow type auto-upgrades, see workflows.Register).
	// The zero value runs unversioned, as before worker versioning.
	Version sdkworker.WorkerDeploymentVersion
	// StoredCredentials serves the platforms whose credentials are
	// {stored: name} (credentials.Manager.Source); nil: such a platform's
	// fetches fail with an error saying the worker has no credential keys.
	StoredCredentials func(name string) (credentials.Source, error)
	// CredentialHealth, when set, reads the stored credentials' metadata
	// (credentials.Manager.Health): every 30s this process alerts on one
	// that needs re-authorization, keeps failing to refresh or nears its
	// refresh token's expiry, and exports it with Metrics
	// (metrics.CredentialPoller).
	CredentialHealth func(ctx context.Context) ([]credentials.Status, error)
}

// Workers is a started set of task-queue workers.
type Workers struct {
	mu      sync.Mutex
	queues  []string
	workers []sdkworker.Worker
	// newWorker starts one more task-queue worker (a queue that appeared
	// in the registry); stopRegistry ends the registry poll.
	newWorker    func(q string) (sdkworker.Worker, error)
	stopRegistry func()
	serves       func(q string) bool
	// stopPoller ends the status poller and unregisters it (nil without metrics).
	stopPoller func()
	// stopCredentials ends the credential health poller (nil without it).
	stopCredentials func()
	deliveries      *activities.Deliveries
	// ready feeds /readyz (nil without metrics).
	ready *metrics.Readiness
}

// QueuePlan groups platforms by task queue and sums their request rates:
// the sum is the queue's activity rate limit, which the Temporal server
// enforces across every worker polling that queue.
func QueuePlan(platforms []config.Platform) map[string]float64 {
	plan := map[string]float64{}
	for _, p := range platforms {
		plan[p.TaskQueue] += p.RateLimit.RPS
	}
	return plan
}

// addDestinationQueues adds the destinations' task queues to plan. A queue
// of destinations only gets no server-side activity rate (0): each Delivery
// workflow paces its own batches.
func addDestinationQueues(plan map[string]float64, dests []config.Destination) {
	for _, d := range dests {
		if _, ok := plan[d.TaskQueue]; !ok {
			plan[d.TaskQueue] = 0
		}
	}
}

// Start starts one worker per task queue of the given platforms, the
// registry's platforms and the destinations.
func Start(opts Options) (*Workers, error) {
	if len(opts.Platforms) == 0 && len(opts.Destinations) == 0 && opts.Registry == nil {
		return nil, fmt.Errorf("no platforms to serve")
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var declared activities.DeclaredPlatforms = &config.File{Platforms: opts.Platforms}
	var dir *accounts.Directory
	if opts.Registry != nil {
		dir = accounts.NewDirectory(opts.Registry, opts.RegistryPollInterval, logger)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := dir.Load(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		declared = dir
	}
	acts := &activities.Activities{
		Store:      opts.Store,
		Connectors: activities.NewConnectorCache(declared, connectorOptions(opts)...),
		Limiters:   activities.NewLimiters(),
		Client:     opts.Client,
		Alerter:    opts.Alerter,
		Logger:     logger,
		Metrics:    opts.Metrics,
		FutureSkew: opts.FutureSkew,
	}
	acts.Limiters.Shared = opts.RequestSlots
	plan := QueuePlan(opts.Platforms)
	ws := &Workers{}
	if opts.Feed != nil && (len(opts.Destinations) > 0 || dir != nil) {
		ds := &activities.Deliveries{Destinations: map[string]config.Destination{}}
		for _, d := range opts.Destinations {
			ds.Destinations[d.Name] = d
		}
		acts.Feed, acts.Deliveries, ws.deliveries = opts.Feed, ds, ds
		addDestinationQueues(plan, opts.Destinations)
		if dir != nil {
			ds.Registry = dir
			for _, q := range dir.DestinationQueues() {
				if _, ok := plan[q]; !ok {
					plan[q] = 0 // each Delivery paces its own batches
				}
			}
		}
	}
	if dir != nil {
		for _, q := range dir.TaskQueues() {
			if _, ok := plan[q]; !ok {
				// The accounts' own request rates are enforced per account
				// (RequestSlots); a registry queue has no server-side rate.
				plan[q] = 0
			}
		}
	}
	ws.serves = func(q string) bool { return len(opts.TaskQueues) == 0 || slices.Contains(opts.TaskQueues, q) }
	var queues []string
	for q := range plan {
		if ws.serves(q) {
			queues = append(queues, q)
		}
	}
	sort.Strings(queues)
	ws.ready = opts.Metrics.Readiness()
	ws.ready.Expect(queues)
	var deployment sdkworker.DeploymentOptions
	if opts.Version != (sdkworker.WorkerDeploymentVersion{}) {
		deployment = sdkworker.DeploymentOptions{UseVersioning: true, Version: opts.Version}
	}
	ws.newWorker = func(q string) (sdkworker.Worker, error) {
		w := sdkworker.New(opts.Client, q, sdkworker.Options{
			DeploymentOptions:            deployment,
			TaskQueueActivitiesPerSecond: plan[q],
			WorkerStopTimeout:            opts.StopTimeout,
			// A worker the SDK gave up on (namespace gone, say) no longer
			// polls: say so on /readyz rather than look healthy.
			OnFatalError: func(err error) {
				logger.Error("worker stopped", "task_queue", q, "error", err)
				ws.ready.Down(fmt.Sprintf("worker for task queue %s stopped: %v", q, err))
			},
		})
		workflows.Register(w)
		w.RegisterActivity(acts)
		if err := w.Start(); err != nil {
			return nil, fmt.Errorf("start worker for task queue %s: %w", q, err)
		}
		if deployment.UseVersioning {
			logger.Info("worker polling", "task_queue", q, "activities_per_second", plan[q],
				"deployment", opts.Version.DeploymentName, "build_id", opts.Version.BuildID)
		} else {
			logger.Info("worker polling", "task_queue", q, "activities_per_second", plan[q])
		}
		return w, nil
	}
	for _, q := range queues {
		if err := ws.serve(q); err != nil {
			ws.Stop()
			return nil, err
		}
	}
	if dir != nil {
		dir.OnTaskQueues(ws.follow)
		if ws.deliveries != nil {
			dir.OnDestinationQueues(ws.follow)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			dir.Run(ctx)
		}()
		ws.stopRegistry = func() {
			cancel()
			<-done
		}
	}
	if opts.Metrics != nil {
		if err := ws.startPoller(opts, logger); err != nil {
			ws.Stop()
			return nil, err
		}
	}
	if opts.CredentialHealth != nil {
		if err := ws.startCredentialPoller(opts, logger); err != nil {
			ws.Stop()
			return nil, err
		}
	}
	return ws, nil
}

// serve starts polling q, once.
func (ws *Workers) serve(q string) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if slices.Contains(ws.queues, q) {
		return nil
	}
	w, err := ws.newWorker(q)
	if err != nil {
		return err
	}
	ws.workers = append(ws.workers, w)
	ws.queues = append(ws.queues, q)
	sort.Strings(ws.queues)
	return nil
}

// follow serves the registry's queues as they appear: a new account (or
// destination) on a queue no worker polled yet is served within a
// registry poll. A queue no
// longer used keeps its pollers until the process restarts (idle pollers
// cost one long poll each).
func (ws *Workers) follow(queues []string) {
	var added []string
	for _, q := range queues {
		if !ws.serves(q) {
			continue
		}
		ws.mu.Lock()
		known := slices.Contains(ws.queues, q)
		ws.mu.Unlock()
		if known {
			continue
		}
		if err := ws.serve(q); err != nil {
			ws.ready.Down(fmt.Sprintf("cannot serve task queue %s: %v", q, err))
			continue
		}
		added = append(added, q)
	}
	if len(added) > 0 {
		ws.ready.Expect(ws.Queues())
	}
}

// startPoller exports the served platforms' cursor status as gauges.
func (ws *Workers) startPoller(opts Options, logger *slog.Logger) error {
	names := make([]string, len(opts.Platforms))
	for i, p := range opts.Platforms {
		names[i] = p.Name
	}
	poller := &metrics.StatusPoller{
		Source: metrics.TemporalStatus{Client: opts.Client}, Platforms: names,
		Interval: opts.MetricsPollInterval, QueryRate: opts.MetricsQueryRate, Logger: logger,
	}
	if opts.Registry != nil {
		poller.List = func(ctx context.Context) (metrics.Listing, error) { return ws.registeredPlatforms(ctx, opts.Registry) }
	}
	stop, err := runPoller(opts.Metrics, poller, "status")
	ws.stopPoller = stop
	return err
}

// startCredentialPoller alerts on the stored credentials' health, and
// exports it when the process has metrics.
func (ws *Workers) startCredentialPoller(opts Options, logger *slog.Logger) error {
	poller := &metrics.CredentialPoller{Health: opts.CredentialHealth, Alerter: opts.Alerter, Logger: logger}
	stop, err := runPoller(opts.Metrics, poller, "credential")
	ws.stopCredentials = stop
	return err
}

// runPoller exports a poller's series with m (none when m is nil) and
// starts it; stop ends it and takes the series away (nil when the series
// could not be registered, and then nothing started).
func runPoller(m *metrics.Recorder, p interface {
	prometheus.Collector
	Start(ctx context.Context) <-chan struct{}
}, what string) (stop func(), err error) {
	if m != nil {
		if err := m.Registry().Register(p); err != nil {
			return nil, fmt.Errorf("register %s metrics: %w", what, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := p.Start(ctx)
	return func() {
		cancel()
		<-done
		if m != nil {
			m.Registry().Unregister(p)
		}
	}, nil
}

// connectorOptions are the options every connector of this process gets.
func connectorOptions(opts Options) []connectors.Option {
	if opts.StoredCredentials == nil {
		return nil
	}
	return []connectors.Option{connectors.WithStoredCredentials(opts.StoredCredentials)}
}

// registeredPlatforms names the registered active platforms on the task
// queues this process serves, and counts the paused ones: an account added
// at runtime gets its status gauges without a restart, a removed or paused
// one loses them (paused accounts are not polled; see metrics.Listing).
func (ws *Workers) registeredPlatforms(ctx context.Context, reg accounts.Registry) (metrics.Listing, error) {
	served := map[string]bool{}
	for _, q := range ws.Queues() {
		served[q] = true
	}
	var l metrics.Listing
	err := accounts.EachEntry(ctx, reg, accounts.Filter{Class: accounts.ClassPlatform}, func(e accounts.Entry) error {
		switch {
		case !served[e.TaskQueue]:
		case e.State == accounts.Paused:
			l.Paused++
		default:
			l.Names = append(l.Names, e.Name)
		}
		return nil
	})
	return l, err
}

// Queues lists the task queues served.
func (ws *Workers) Queues() []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return slices.Clone(ws.queues)
}

// Stop drains every worker: no new tasks are taken, running activities get
// up to StopTimeout to finish.
func (ws *Workers) Stop() {
	ws.ready.Down("draining: the worker is stopping")
	for _, stop := range []*func(){&ws.stopPoller, &ws.stopCredentials} {
		if *stop != nil {
			(*stop)()
			*stop = nil
		}
	}
	if ws.stopRegistry != nil {
		ws.stopRegistry()
		ws.stopRegistry = nil
	}
	ws.mu.Lock()
	workers := slices.Clone(ws.workers)
	ws.mu.Unlock()
	for _, w := range workers {
		w.Stop()
	}
	if ws.deliveries != nil {
		ws.deliveries.Close()
	}
}
