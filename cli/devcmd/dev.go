// Package devcmd holds the commands that run a Temporal server of their
// own: `ordersync dev` (the embedded server on SQLite, the simulator with
// demo shops, a worker and the demo cursors in one process) and `ordersync
// cluster` (the production-shaped stack: Temporal on PostgreSQL, `ordersync
// setup`, worker processes). It is apart from package cli because it links
// the whole Temporal server.
package devcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/internal/quota"
	"github.com/ordersync/ordersync/sim"
	"github.com/ordersync/ordersync/starter"
	"github.com/ordersync/ordersync/store"
	"github.com/ordersync/ordersync/worker"
)

// DemoShops are the simulator's shops that examples/demo-platforms.yaml
// points at; their tokens are put in the environment variables it names.
var DemoShops = []sim.ShopConfig{
	{Name: "acme", Token: "acme-demo-token"},
	{Name: "globex", Token: "globex-demo-token"},
	{Name: "initech", Token: "initech-demo-token"},
	{Name: DemoOutageShop, Token: "umbrella-demo-token"}, // fails for a while: outage.go
}

// New returns the dev command.
func New(app *cli.App) *cobra.Command {
	var o devOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run everything locally: Temporal server + Web UI, simulator, worker, demo cursors",
		Long: `Starts, in one process:
  - an embedded Temporal server (SQLite file under .ordersync/, kept across restarts)
    with its Web UI at http://127.0.0.1:8233 and the frontend at 127.0.0.1:7233;
  - the platform simulator with three demo shops (acme, globex, initech);
  - a worker for every platform in the platforms file;
  - the platforms' cursors, which backfill and then follow the present;
  - a demo webhook receiver (--receiver-listen) and the Delivery workflows of
    the file's destinations: examples/demo-platforms.yaml's demo-receiver
    sends every accepted change to it, and it prints its counts every 10s.
Orders land in the store (default .ordersync/orders.db). Ctrl-C stops it all cleanly.`,
		Example: "  ordersync dev -f examples/demo-platforms.yaml\n  ordersync dev --server-only",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := cli.SignalContext()
			defer stop()
			return run(ctx, app, o)
		},
	}
	o.stackFlags.register(cmd, "simulator address (empty: no simulator)")
	cmd.Flags().StringVar(&o.dbPath, "db", "", "Temporal SQLite file (default $ORDERSYNC_DATA_DIR/temporal.db)")
	cmd.Flags().BoolVar(&o.serverOnly, "server-only", false, "run only the Temporal server and Web UI")
	return cmd
}

func run(ctx context.Context, app *cli.App, o devOptions) error {
	if o.dbPath == "" {
		o.dbPath = filepath.Join(app.Process.DataDir, "temporal.db")
	}
	logPath := filepath.Join(app.Process.DataDir, "temporal.log")
	ports := listenPorts(app, o.stackFlags, o.serverOnly, true)
	if err := checkPorts(ports); err != nil {
		return err
	}
	srv, err := devserver.Start(devserver.Options{
		DatabasePath: o.dbPath,
		FrontendPort: o.frontendPort,
		UIPort:       o.uiPort,
		Namespace:    app.Process.TemporalNamespace,
		LogFile:      logPath,
	})
	if err != nil {
		// The services behind the frontend are on ports picked free (and
		// picked again when taken): only the frontend's and the UI's are
		// the user's to move.
		return fmt.Errorf("dev server: %w", serverPortError(err, ports, "--port (the server picks its internal ports itself; try again)"))
	}
	defer stopServer(app, srv, "dev server")
	useServer(app, srv, "namespace "+srv.Namespace())
	fmt.Fprintf(app.Out, "Temporal data:     %s\n", o.dbPath)
	fmt.Fprintf(app.Out, "Temporal log:      %s\n", logPath)
	if o.serverOnly {
		<-ctx.Done()
		return nil
	}

	if o.simListen != "" {
		simSrv, err := startDemoSimulator(app, o.simListen, filepath.Join(app.Process.DataDir, "sim-start"))
		if err != nil {
			return err
		}
		defer simSrv.Close()
	}

	stopReceiver, err := startDemoReceiver(ctx, app, o.rcvListen)
	if err != nil {
		return err
	}
	defer func() { _ = stopReceiver() }()

	file, err := app.LoadPlatforms()
	if err != nil {
		return err
	}
	if err := config.CheckCredentials(file.Path, file.Platforms); err != nil {
		return cli.Usage(err)
	}
	if err := config.CheckDestinationSecrets(file.Path, file.Destinations); err != nil {
		return cli.Usage(err)
	}
	st, err := store.Open(ctx, app.Process.StoreDSN, store.WithFutureSkew(app.Process.MaxFutureSkew))
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	slots, err := quota.Open(ctx, app.Process.StoreDSN)
	if err != nil {
		return err
	}
	defer slots.Close()
	rec, stopMetrics, err := app.StartMetrics()
	if err != nil {
		return err
	}
	defer stopMetrics()
	c, err := app.DialWithMetrics(ctx, rec)
	if err != nil {
		return err
	}
	defer c.Close()
	reg, ok := store.RegistryOf(st)
	if !ok {
		return fmt.Errorf("this store keeps no account registry")
	}
	if err := cli.SeedRegistry(ctx, reg, file, starter.Engine{Client: c}, app.Logger.Info); err != nil {
		return err
	}
	ws, err := worker.Start(worker.Options{FutureSkew: app.Process.MaxFutureSkew, Client: c, Store: st, Platforms: file.Platforms, Registry: reg,
		Alerter: app.Alerter(), Logger: app.Logger, Metrics: rec, MetricsQueryRate: app.Process.MetricsQueryRate, RequestSlots: slots, Feed: st, Destinations: file.Destinations})
	if err != nil {
		return err
	}
	defer ws.Stop()
	compactCtx, stopCompacting := context.WithCancel(ctx)
	defer stopCompacting() // before the store closes
	go app.CompactFeed(compactCtx, st, file.DestinationNames())
	if err := startCursors(ctx, app, c, file.Platforms); err != nil {
		return err
	}
	if err := ensureDeliveries(ctx, app, c, reg, file.Destinations); err != nil {
		return err
	}
	fmt.Fprintf(app.Out, "Orders store:      %s\n", config.StoreLocation(app.Process.StoreDSN)) // never the password
	if app.Process.MetricsAddress != "" {
		fmt.Fprintf(app.Out, "Metrics:           http://%s/metrics\n", app.Process.MetricsAddress)
	}
	runUntilInterrupted(ctx, app)
	return nil
}

const demoAdminToken = "demo-admin-token"

// startDemoReceiver runs the demo webhook receiver on listen (none when
// listen is empty), with the demo secret put in the environment unless one
// is there (the workers' destination reference reads the same variable),
// and prints where it listens. stop stops it.
func startDemoReceiver(ctx context.Context, app *cli.App, listen string) (stop func() error, err error) {
	if listen == "" {
		return func() error { return nil }, nil
	}
	cli.SetDemoHookSecret()
	secret := os.Getenv(cli.DemoHookSecretEnv)
	url, stop, err := cli.ServeReceiver(ctx, app, listen, cli.DemoReceiverName, secret, cli.DemoReceiverEvery)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(app.Out, "Demo receiver:     %s (prints what the destination %s delivers)\n", url, cli.DemoReceiverName)
	return stop, nil
}

// ensureDeliveries starts the destinations' Delivery workflows, as
// `ordersync deliveries start` does, with the registry's revision of each
// (SeedRegistry registered them); with no registry at hand (cluster: the
// worker processes seed it) the revision is left unknown.
func ensureDeliveries(ctx context.Context, app *cli.App, c client.Client, reg accounts.Registry, dests []config.Destination) error {
	for _, d := range dests {
		var revision int64
		if reg != nil {
			e, _, err := reg.Get(ctx, accounts.ClassDestination, d.Name)
			if err != nil {
				return err
			}
			revision = e.Revision
		}
		r, err := starter.EnsureDeliveryAt(ctx, c, d, revision)
		if err != nil {
			return err
		}
		state := "running"
		if r.Started {
			state = "started"
		}
		fmt.Fprintf(app.Out, "Delivery %-26s %s\n", api.DeliveryWorkflowID(d.Name), state)
	}
	return nil
}

// startDemoSimulator plays the demo shops with two days of history, a steady
// trickle of live orders, and updates that become visible up to 20 s late.
// Its start instant is kept in startFile so a restarted `ordersync dev`
// plays the same world and the store still matches it. It prints where it
// listens.
func startDemoSimulator(app *cli.App, listen, startFile string) (*demoServer, error) {
	cfg := sim.DefaultConfig()
	cfg.Start = time.Now().UTC().Truncate(time.Second)
	if b, err := os.ReadFile(startFile); err == nil {
		if t, err := time.Parse(time.RFC3339, strings.TrimSpace(string(b))); err == nil {
			cfg.Start = t
		}
	} else if err := os.WriteFile(startFile, []byte(cfg.Start.Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("remember the simulator's start in %s: %w", startFile, err)
	}
	cfg.Shops = DemoShops
	cfg.AdminToken = demoAdminToken
	cfg.History = 48 * time.Hour
	cfg.HistoryOrders = 3000
	cfg.LiveRate = 0.2
	cfg.Late = 20 * time.Second
	for _, shop := range DemoShops {
		env := "ORDERSYNC_DEMO_" + strings.ToUpper(shop.Name) + "_TOKEN"
		if _, set := os.LookupEnv(env); !set {
			os.Setenv(env, shop.Token)
		}
	}
	s, err := sim.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("demo simulator: %w", err)
	}
	bad := cfg.Start.Add(-30 * time.Hour)
	out := outage{shop: DemoOutageShop, from: bad, to: bad.Add(time.Hour), until: time.Now().Add(DemoOutageFor), now: time.Now, next: s.Handler()}
	srv, err := serveDemo(listen, out)
	if err != nil {
		return nil, fmt.Errorf("demo simulator on %s: %w", listen, err)
	}
	fmt.Fprintf(app.Out, "Simulator:         %s (admin token %q)\n", srv.URL, demoAdminToken)
	fmt.Fprintf(app.Out, "Demo outage:       shop %s fails for orders updated %s..%s until %s (dead letters for ordersync dlq list)\n",
		DemoOutageShop, out.from.Format(time.RFC3339), out.to.Format(time.RFC3339), out.until.Format(time.RFC3339))
	return srv, nil
}
