package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/api"
)

func newSlicesCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{Use: "slices", Short: "Work on time slices"}
	var platform, from, to string
	var force bool
	var timeout time.Duration
	reprocess := &cobra.Command{
		Use:   "reprocess [PLATFORM]",
		Short: "Fetch a time range of one platform again",
		Long: `Queues [from, to) on the platform's cursor, in slices of the platform's
interval, exactly that range. Re-fetching is harmless: the store keeps the
newest version of each order. Work windows are honoured unless --force.

` + updateWaitHelp,
		Example: "  ordersync slices reprocess sim-acme --from 2026-11-20T00:00:00Z --to 2026-11-20T06:00:00Z\n  ordersync slices reprocess sim-acme --from -2d --to -1d\n  ordersync slices reprocess --platform sim-acme --from -6h --to -1h   # the flag names it too",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if platform == "" || from == "" || to == "" {
				return Usage(fmt.Errorf("the platform (argument or --platform), --from and --to are required"))
			}
			now := time.Now()
			fromT, toT, err := parseRange(from, to, now)
			if err != nil {
				return err
			}
			f, err := app.LoadPlatforms()
			if err != nil {
				return err
			}
			selected, err := app.selectKnown(cmd.Context(), f, []string{platform})
			if err != nil {
				return err
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var queued int
			req := api.ReprocessRequest{From: fromT, To: toT, Force: force}
			if err := app.updateCursor(cmd.Context(), c, selected[0], timeout, api.SignalReprocess, &queued, req); err != nil {
				return err
			}
			if app.Output == "json" {
				return writeJSON(app, map[string]any{"platform": platform, "from": fromT, "to": toT, "slices_queued": queued})
			}
			fmt.Fprintf(app.Out, "%s: queued %d slice(s) for %s .. %s\n", platform, queued, fromT.Format(time.RFC3339), toT.Format(time.RFC3339))
			return nil
		},
	}
	reprocess.Flags().StringVarP(&platform, "platform", "p", "", "the platform, as the argument names it")
	reprocess.Flags().StringVar(&from, "from", "", "range start: RFC3339 or relative (-6h)")
	reprocess.Flags().StringVar(&to, "to", "", "range end (exclusive): RFC3339 or relative (-1h)")
	reprocess.Flags().BoolVar(&force, "force", false, "run even outside the platform's work windows")
	addTimeoutFlag(reprocess, &timeout)
	nameArgument(reprocess, "platform", &platform)
	cmd.AddCommand(reprocess)
	return cmd
}
