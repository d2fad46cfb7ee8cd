package devcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/cli"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/devserver"
	"github.com/ordersync/ordersync/starter"
)

// What `ordersync dev` and `ordersync cluster` do alike around the server
// each starts: take the same flags for where it listens, point the app at
// it and say where it is, start the demo cursors, and run until Ctrl-C.

// stackFlags are the flags both commands take: the server's ports, the
// simulator's and the demo receiver's addresses.
type stackFlags struct {
	frontendPort int
	uiPort       int
	simListen    string
	// rcvListen is the demo webhook receiver's address (empty: none).
	rcvListen string
}

// devOptions are the flags of `ordersync dev`.
type devOptions struct {
	stackFlags
	dbPath     string
	serverOnly bool
}

// clusterOptions are the flags of `ordersync cluster`.
type clusterOptions struct {
	stackFlags
	postgres   string
	workers    int
	serverOnly bool
	// serverNodes is how many Temporal server processes run (1: the
	// server in the command's own process).
	serverNodes int
}

// register adds the flags to cmd; simHelp says what an empty --sim-listen means.
func (f *stackFlags) register(cmd *cobra.Command, simHelp string) {
	cmd.Flags().IntVar(&f.frontendPort, "port", devserver.DefaultFrontendPort, "Temporal frontend (gRPC) port")
	cmd.Flags().IntVar(&f.uiPort, "ui-port", devserver.DefaultUIPort, "Web UI port (0 disables the UI)")
	cmd.Flags().StringVar(&f.simListen, "sim-listen", "127.0.0.1:8780", simHelp)
	cmd.Flags().StringVar(&f.rcvListen, "receiver-listen", cli.DemoReceiverListen, "demo webhook receiver address (empty: none)")
}

// temporalServer is the server either command starts.
type temporalServer interface {
	FrontendAddress() string
	UIAddress() string
	Stop() error
}

// useServer points app at srv and prints its frontend (with detail, e.g.
// its namespace) and Web UI.
func useServer(app *cli.App, srv temporalServer, detail string) {
	app.Process.TemporalAddress = srv.FrontendAddress()
	fmt.Fprintf(app.Out, "Temporal frontend: %s (%s)\n", srv.FrontendAddress(), detail)
	if ui := srv.UIAddress(); ui != "" {
		fmt.Fprintf(app.Out, "Temporal Web UI:   %s\n", ui)
	}
}

// stopServer stops srv, logging a failure: the command is ending anyway.
func stopServer(app *cli.App, srv temporalServer, what string) {
	if err := srv.Stop(); err != nil {
		app.Logger.Warn(what+" stop", "error", err)
	}
}

// startCursors starts the cursor of every platform not running one yet
// and lists each.
func startCursors(ctx context.Context, app *cli.App, c client.Client, platforms []config.Platform) error {
	results, err := starter.EnsureCursors(ctx, c, platforms, time.Now())
	if err != nil {
		return err
	}
	for _, r := range results {
		state := "running"
		if r.Started {
			state = "started"
		}
		fmt.Fprintf(app.Out, "Cursor %-28s %s\n", r.WorkflowID, state)
	}
	return nil
}

// runUntilInterrupted waits for Ctrl-C (ctx's end).
func runUntilInterrupted(ctx context.Context, app *cli.App) {
	fmt.Fprintln(app.Out, "Press Ctrl-C to stop.")
	<-ctx.Done()
	fmt.Fprintln(app.Out, "stopping...")
}
