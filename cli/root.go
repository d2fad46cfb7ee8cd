// Package cli is the ordersync command line: the root command and every
// subcommand an operator uses. Commands that embed the Temporal server live
// in cli/devcmd so this package (and its tests) stay light.
package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/ordersync/ordersync/accounts"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/internal/tclient"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1 // the operation failed (server unreachable, verify found losses, ...)
	ExitUsage   = 2 // bad flags, arguments or configuration; nothing was changed
)

// ExitError carries the exit code a command wants.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Usage wraps err as a usage error (exit 2).
func Usage(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// App holds what every command needs: process settings, flags, output.
type App struct {
	Process       config.Process
	PlatformsFile string
	Output        string
	Out, Err      io.Writer
	Logger        *slog.Logger
	// fileGiven is set when the user named the platforms file (-f or
	// ORDERSYNC_PLATFORMS_FILE), not the default platforms.yaml.
	fileGiven bool
	// temporal holds the connection flags; set ones override the environment.
	temporal temporalFlags
	// dial replaces Dial in tests.
	dial func(ctx context.Context) (client.Client, error)
}

// NewRootCommand builds `ordersync` with every subcommand of this package.
// Extra commands (such as dev) are added by the caller.
func NewRootCommand(app *App) *cobra.Command {
	root := &cobra.Command{
		Use:   "ordersync",
		Short: "Pull orders from many e-commerce platforms into one store, without losing any",
		Long: `ordersync pulls orders from e-commerce platform accounts (Shopify, Amazon,
eBay, WooCommerce, any JSON API) into one store, in time slices, on Temporal.

Process settings come from ORDERSYNC_* environment variables (docs/configuration.md lists them).
Platforms and destinations live in the account registry in the store
(ordersync platform add|edit|remove, or ordersync serve's HTTP API); a YAML
file (--platforms-file, ORDERSYNC_PLATFORMS_FILE) is applied to it with
ordersync platform apply.

Times and durations: RFC3339 (2026-11-20T00:00:00Z), or relative to now
with Go's units and days (-6h, -2d, -1d12h); durations likewise (90s, 7d).

` + NamingHelp,
		Example:       "  ordersync dev --platforms-file examples/demo-platforms.yaml\n  ordersync worker\n  ordersync platform apply -f platforms.yaml\n  ordersync platform list",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return app.init(cmd)
		},
	}
	root.PersistentFlags().StringVarP(&app.PlatformsFile, "platforms-file", "f", "", "platforms YAML file (default $ORDERSYNC_PLATFORMS_FILE or platforms.yaml)")
	root.PersistentFlags().StringVarP(&app.Output, "output", "o", "table", "output format: table or json")
	app.temporal.register(root.PersistentFlags())
	root.AddCommand(newWorkerCommand(app), newSimCommand(app), newPlatformCommand(app), newConfigCommand(app),
		newSlicesCommand(app), newDLQCommand(app), newVerifyCommand(app), newSetupCommand(app), newChangesCommand(app), newDeliveriesCommand(app),
		newReceiverCommand(app), newDeploymentCommand(app), newMigrateCommand(app))
	root.AddCommand(newServeCommand(app), newWebhooksCommand(app))
	root.AddCommand(newCredentialsCommand(app))
	root.AddCommand(newOrdersCommand(app))
	root.AddCommand(newReconcileCommand(app))
	return root
}

// Finish completes a root command once every subcommand is added (the
// caller adds dev and cluster): suggestions for mistyped commands and
// flags, and the exit codes in every help page. Execute calls it.
func Finish(root *cobra.Command) {
	addSuggestions(root)
	addExitCodes(root)
}

func (a *App) init(cmd *cobra.Command) error {
	if a.Out == nil {
		a.Out = cmd.OutOrStdout()
	}
	if a.Err == nil {
		a.Err = cmd.ErrOrStderr()
	}
	proc, err := config.LoadProcess()
	if err != nil {
		return Usage(err)
	}
	a.temporal.apply(cmd.Flags(), &proc)
	_, fileEnv := os.LookupEnv(config.EnvPrefix + "_PLATFORMS_FILE")
	a.fileGiven = cmd.Flags().Changed("platforms-file") || fileEnv
	a.Process = proc
	if a.PlatformsFile == "" {
		a.PlatformsFile = proc.PlatformsFile
	}
	switch {
	case a.Output == "table" || a.Output == "json":
	case a.Output == "jsonl" && cmd.Annotations[annotationJSONL] != "":
	default:
		return Usage(fmt.Errorf("--output %q: want table or json", a.Output))
	}
	if a.Logger == nil {
		a.Logger = NewLogger(a.Err, proc.LogLevel, proc.LogFormat)
	}
	return nil
}

// NewLogger builds the process logger.
func NewLogger(w io.Writer, level, format string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// LoadPlatforms reads the platforms file; invalid files are usage errors.
func (a *App) LoadPlatforms() (*config.File, error) {
	f, err := config.LoadFile(a.PlatformsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoPlatformsFile(a.PlatformsFile)
	}
	if err != nil {
		return nil, Usage(err)
	}
	return f, nil
}

// SelectPlatforms returns the named platforms of f, all when names is empty.
func SelectPlatforms(f *config.File, names []string) ([]config.Platform, error) {
	if len(names) == 0 {
		return f.Platforms, nil
	}
	var out []config.Platform
	for _, n := range names {
		p, ok := f.Get(n)
		if !ok {
			return nil, Usage(fmt.Errorf("unknown platform %q (configured: %s)", n, strings.Join(f.Names(), ", ")))
		}
		out = append(out, p)
	}
	return out, nil
}

// selectKnown is SelectPlatforms for commands that act on one account by
// name (pause, resume, status, slices, dlq): a name the file lacks is
// looked up in the registry, where accounts added at runtime live.
func (a *App) selectKnown(ctx context.Context, f *config.File, names []string) ([]config.Platform, error) {
	if f != nil && len(names) == 0 {
		return f.Platforms, nil
	}
	var out []config.Platform
	var reg accounts.Registry
	for _, n := range names {
		if f != nil {
			if p, ok := f.Get(n); ok {
				out = append(out, p)
				continue
			}
		}
		if reg == nil {
			r, done, err := a.openRegistry(ctx)
			if err != nil {
				return nil, err
			}
			defer done()
			reg = r
		}
		e, found, err := reg.Get(ctx, accounts.ClassPlatform, n)
		if err != nil {
			return nil, err
		}
		if !found || e.State == accounts.Removed {
			configured := "none"
			if f != nil && len(f.Names()) > 0 {
				configured = strings.Join(f.Names(), ", ")
			}
			return nil, Usage(fmt.Errorf("unknown platform %q: not in the platforms file (configured: %s) nor registered (ordersync platform list)", n, configured))
		}
		p, err := accounts.DecodePlatform(e)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Dial connects to Temporal; failure names the address tried.
func (a *App) Dial(ctx context.Context) (client.Client, error) {
	if a.dial != nil {
		return a.dial(ctx)
	}
	return tclient.Dial(ctx, a.Process, a.Logger.With("component", "temporal-sdk"))
}

// Execute runs the root command and returns the process exit code. Errors
// are one line (or one line per config problem), never a stack trace.
func Execute(root *cobra.Command, args []string, stderr io.Writer) int {
	Finish(root)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	// An error may quote a platform's or a workflow's text: each line is
	// escaped for the terminal.
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = term(l)
	}
	fmt.Fprintln(stderr, "ordersync: "+strings.Join(lines, "\nordersync: "))
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.Contains(err.Error(), "accepts") || strings.Contains(err.Error(), "flag needs") || strings.Contains(err.Error(), "invalid argument") {
		return ExitUsage
	}
	return ExitFailure
}

// contextWithSignals is cancelled by SIGINT or SIGTERM.
func contextWithSignals() (context.Context, context.CancelFunc) {
	return signalContext(context.Background())
}
