package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/ordersync/ordersync/activities"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/metrics"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/internal/tclient"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

func newWorkerCommand(app *App) *cobra.Command {
	var names, oldNames, queues []string
	var stopTimeout time.Duration
	var deploymentName, buildID string
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run Temporal workers for every registered platform's task queue",
		Long: `Serves every task queue a registered platform or destination uses (the
account registry in the store, ORDERSYNC_STORE_DSN): the cursor, slice,
dead-letter and delivery workflows and their activities. A platform added
later on a new queue is served within seconds (at once on PostgreSQL), with
no restart. --task-queues restricts the worker to some queues (a pool for a
busy account's dedicated queue); --platform (-p, repeatable or
comma-separated) to the queues of some platforms of the file (--platforms,
its old spelling, still works). Run as many worker processes as you like; Temporal
spreads the work. SIGINT or SIGTERM drains: no new work is taken and
running activities get --stop-timeout to finish.

With a platforms file (-f, ORDERSYNC_PLATFORMS_FILE, or platforms.yaml
here), the worker first registers the file's platforms and destinations
that the registry does not hold yet (never overwriting one, never taking a
removed name); a file that differs from the registry is named in a warning
(run ` + "`ordersync platform apply -f FILE`" + ` to apply it). Before it
starts, the file's credential references must resolve (the environment
variable set and not empty, the file readable and not empty); otherwise it
exits with status 2, one line per platform. The namespace must exist and
have ordersync's search attributes; otherwise it exits with status 2 and
asks for ` + "`ordersync setup`" + `.

A request carries a credential only with the kind, endpoint and options the
registry holds for the platform, resolved by name: nothing a workflow
message says changes where a secret goes.

With --deployment-name and --build-id (or ORDERSYNC_DEPLOYMENT_NAME and
ORDERSYNC_BUILD_ID) the worker is that version of a Temporal Worker
Deployment: it gets work only once the version is the deployment's current
one (` + "`ordersync deployment set-current`" + `), and every workflow moves
to the next version promoted. Without them it runs unversioned.`,
		Example: "  ordersync worker\n  ordersync worker --task-queues orders-acme --stop-timeout 1m\n" +
			"  ordersync worker --deployment-name ordersync --build-id v1.5.0",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("deployment-name") {
				app.Process.DeploymentName = deploymentName
			}
			if cmd.Flags().Changed("build-id") {
				app.Process.BuildID = buildID
			}
			if err := config.ValidateDeployment(app.Process.DeploymentName, app.Process.BuildID, config.DeploymentSettings); err != nil {
				return Usage(err)
			}
			for _, n := range oldNames {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			ctx, stop := SignalContext()
			defer stop()
			return app.RunWorker(ctx, names, queues, stopTimeout)
		},
	}
	cmd.Flags().StringSliceVarP(&names, "platform", "p", nil, "a platform of the file whose task queues to serve; repeatable or comma-separated (default: every registered platform's)")
	// The old spelling: every other command names platforms with --platform.
	cmd.Flags().StringSliceVar(&oldNames, "platforms", nil, "the old spelling of --platform")
	_ = cmd.Flags().MarkDeprecated("platforms", "use --platform (repeatable or comma-separated)")
	cmd.Flags().StringSliceVar(&queues, "task-queues", nil, "comma-separated task queues to serve (default: every queue a registered platform uses)")
	durationDaysVar(cmd.Flags(), &stopTimeout, "stop-timeout", worker.DefaultStopTimeout, "how long running activities may finish on shutdown")
	cmd.Flags().StringVar(&deploymentName, "deployment-name", "", "Temporal Worker Deployment this worker is a version of (default $ORDERSYNC_DEPLOYMENT_NAME; unset: unversioned)")
	cmd.Flags().StringVar(&buildID, "build-id", "", "build ID of this worker's version (default $ORDERSYNC_BUILD_ID); set with --deployment-name")
	return cmd
}

// RunWorker serves the registry's platforms until ctx is cancelled: every
// task queue they use (only queues, when given; only the named platforms'
// queues, when names are given). A platforms file, when there is one, is
// registered first (platforms the registry does not hold yet).
func (a *App) RunWorker(ctx context.Context, names, queues []string, stopTimeout time.Duration) error {
	file, err := a.loadPlatformsIfAny()
	if err != nil {
		return err
	}
	if file == nil {
		file = &config.File{}
		if len(names) > 0 {
			return Usage(fmt.Errorf("--platform names platforms of a platforms file, and there is none (%s); use --task-queues to pick queues", a.PlatformsFile))
		}
	}
	platforms, err := SelectPlatforms(file, names)
	if err != nil {
		return err
	}
	// A missing secret is found now, not when the first slices fail.
	if err := config.CheckCredentials(file.Path, platforms); err != nil {
		return Usage(err)
	}
	if err := config.CheckDestinationSecrets(file.Path, file.Destinations); err != nil {
		return Usage(err)
	}
	storeAt := config.StoreLocation(a.Process.StoreDSN)
	st, err := store.Open(ctx, a.Process.StoreDSN, store.WithFutureSkew(a.Process.MaxFutureSkew))
	if err != nil {
		return fmt.Errorf("open store %s: %w", storeAt, err)
	}
	defer st.Close()
	a.warnDefaultStore(storeAt)
	reg, ok := registryOf(st)
	if !ok {
		return fmt.Errorf("this store keeps no account registry")
	}
	slots, err := quota.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return err
	}
	defer slots.Close()
	rec, stopMetrics, err := a.StartMetrics()
	if err != nil {
		return err
	}
	defer stopMetrics()
	c, err := a.DialWithMetrics(ctx, rec)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := a.checkNamespaceReady(ctx, c); err != nil {
		return err
	}
	if len(platforms) > 0 || len(file.Destinations) > 0 {
		seed := &config.File{Path: file.Path, Platforms: platforms, Destinations: file.Destinations}
		if err := SeedRegistry(ctx, reg, seed, starter.Engine{Client: c}, a.Logger.Info); err != nil {
			return err
		}
	}
	if len(names) > 0 {
		for _, p := range platforms {
			queues = append(queues, p.TaskQueue)
		}
	}
	creds, err := a.storedCredentials(st, rec)
	if err != nil {
		return err
	}
	var stored func(string) (credentials.Source, error)
	var health func(context.Context) ([]credentials.Status, error)
	if creds != nil {
		stored, health = creds.Source, creds.Health
	}
	ws, err := worker.Start(worker.Options{FutureSkew: a.Process.MaxFutureSkew, StoredCredentials: stored, CredentialHealth: health,
		Client: c, Store: st, Platforms: platforms, Registry: reg, TaskQueues: queues, Alerter: a.Alerter(),
		Logger: a.Logger, StopTimeout: stopTimeout, Metrics: rec, MetricsQueryRate: a.Process.MetricsQueryRate, RequestSlots: slots,
		Feed: st, Destinations: file.Destinations, Version: a.workerVersion(),
	})
	if err != nil {
		return err
	}
	if a.Process.Versioned() {
		a.Logger.Info("worker running", "task_queues", ws.Queues(), "temporal", a.Process.TemporalAddress, "store", storeAt,
			"deployment", a.Process.DeploymentName, "build_id", a.Process.BuildID)
	} else {
		a.Logger.Info("worker running", "task_queues", ws.Queues(), "temporal", a.Process.TemporalAddress, "store", storeAt)
	}
	go a.CompactFeed(ctx, st, file.DestinationNames())
	<-ctx.Done()
	a.Logger.Info("worker draining", "stop_timeout", stopTimeout)
	ws.Stop()
	return nil
}

// warnDefaultStore warns a worker that runs on the default SQLite store
// (no ORDERSYNC_STORE_DSN): it sees only this machine's orders and
// registry, and keeps its rate-limit slots apart from the fleet's, so
// workers elsewhere pace the same accounts separately.
func (a *App) warnDefaultStore(storeAt string) {
	if !a.Process.DefaultStore() {
		return
	}
	a.Logger.Warn("no ORDERSYNC_STORE_DSN: using the default SQLite store of this directory; "+
		"its orders, registry and rate-limit slots are this machine's alone, so workers elsewhere pace the same accounts apart. "+
		"A fleet shares one PostgreSQL store: ORDERSYNC_STORE_DSN=postgres://USER@HOST:5432/DB", "store", storeAt)
}

// workerVersion is the Worker Deployment version the process settings
// name, or the zero value (unversioned).
func (a *App) workerVersion() sdkworker.WorkerDeploymentVersion {
	if !a.Process.Versioned() {
		return sdkworker.WorkerDeploymentVersion{}
	}
	return sdkworker.WorkerDeploymentVersion{DeploymentName: a.Process.DeploymentName, BuildID: a.Process.BuildID}
}

// feedCompactInterval is how often a worker compacts the change feed.
const feedCompactInterval = time.Hour

// CompactFeed removes, at start and then every feedCompactInterval until
// ctx ends, the changes older than ORDERSYNC_CHANGE_RETENTION that every
// destination has acknowledged: the registry's destinations that are not
// removed and the platforms file's (destinations). A removed destination's
// leftover consumer row is released first. Every process that runs
// workers (`ordersync worker`, `ordersync dev`) runs it; several at once
// is harmless.
func (a *App) CompactFeed(ctx context.Context, st store.Store, destinations []string) {
	for {
		n, err := compactOnce(ctx, st, destinations, a.Process.ChangeRetention, a.Logger.Info)
		switch {
		case err != nil && ctx.Err() == nil:
			a.Logger.Warn("change feed compaction failed", "error", err)
		case n > 0:
			a.Logger.Info("change feed compacted", "removed", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(feedCompactInterval):
		}
	}
}

// Alerter is the webhook alerter when ORDERSYNC_ALERT_WEBHOOK is set, else the log.
func (a *App) Alerter() activities.Alerter {
	if a.Process.AlertWebhook != "" {
		return activities.NewWebhookAlerter(a.Process.AlertWebhook)
	}
	return activities.LogAlerter{Logger: a.Logger}
}

// StartMetrics makes the process's metrics registry and serves it at
// /metrics on ORDERSYNC_METRICS_ADDRESS. With the address empty it returns
// a nil recorder (metrics off) and a no-op stop.
func (a *App) StartMetrics() (*metrics.Recorder, func(), error) {
	if a.Process.MetricsAddress == "" {
		return nil, func() {}, nil
	}
	rec := metrics.New()
	srv, err := rec.Serve(a.Process.MetricsAddress, a.Logger)
	if err != nil {
		return nil, nil, err
	}
	// Record where it really listens (port 0 picks one) for what prints it.
	a.Process.MetricsAddress = srv.Addr()
	a.Logger.Info("metrics", "url", srv.URL())
	return rec, func() { _ = srv.Close() }, nil
}

// DialWithMetrics dials Temporal like Dial, with the SDK's own metrics
// (requests, polls, task latencies) exported through rec's registry and its
// poll requests feeding /readyz.
func (a *App) DialWithMetrics(ctx context.Context, rec *metrics.Recorder) (client.Client, error) {
	if rec == nil {
		return a.Dial(ctx)
	}
	opts, err := tclient.Options(a.Process, a.Logger.With("component", "temporal-sdk"))
	if err != nil {
		return nil, err
	}
	if err := rec.InstrumentClient(&opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Temporal at %s (namespace %s): %w", a.Process.TemporalAddress, a.Process.TemporalNamespace, err)
	}
	return c, nil
}
