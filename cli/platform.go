package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/starter"
)

func newPlatformCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "platform",
		Short: "Add, edit, remove, start, pause, resume and inspect platforms and their cursors",
	}
	cmd.AddCommand(newPlatformStartCommand(app), newPlatformListCommand(app),
		newPlatformPauseCommand(app, true), newPlatformPauseCommand(app, false),
		newPlatformStatusCommand(app), newPlatformApplyCommand(app),
		newPlatformAddCommand(app), newPlatformEditCommand(app), newPlatformRemoveCommand(app))
	return cmd
}

func newPlatformStartCommand(app *App) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "start [PLATFORM...]",
		Short: "Start the cursor of each named platform (idempotent)",
		Long: `Starts the cursor workflow (cursor/<platform>) of each named platform, or of
every platform with --all. A cursor that is already running is left alone,
so this is safe to run on every deploy.`,
		Example: "  ordersync platform start shopify-acme\n  ordersync platform start --platform shopify-acme   # the same\n  ordersync platform start --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && !all {
				return Usage(fmt.Errorf("name the platforms to start, or pass --all"))
			}
			platforms, err := app.resolvePlatforms(cmd.Context(), args)
			if err != nil {
				return err
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			results, err := starter.EnsureCursors(cmd.Context(), c, platforms, time.Now())
			if app.Output == "json" {
				_ = json.NewEncoder(app.Out).Encode(results)
			} else {
				tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "WORKFLOW\tRUN\tSTATE")
				for _, r := range results {
					state := "already running"
					if r.Started {
						state = "started"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", r.WorkflowID, r.RunID, state)
				}
				_ = tw.Flush()
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "start every registered platform (and the file's)")
	namesFlag(cmd, "platform", "p", "platform", 0, 0)
	return cmd
}
