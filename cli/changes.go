package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/feed"
	"github.com/ordersync/ordersync/store"
)

// annotationJSONL marks a command that also prints -o jsonl.
const annotationJSONL = "jsonl"

func newChangesCommand(app *App) *cobra.Command {
	var opts feed.Options
	cmd := &cobra.Command{
		Use:   "changes",
		Short: "Print the store's change feed: every accepted order version, in commit order",
		Long: `Prints the changes the store accepted after --since (a sequence number), in
sequence order: one line per change in the table, or with -o jsonl (or json)
one JSON object per line carrying the change and the order with its lines.

Resume by passing the last "seq" printed as --since: sequence numbers are
handed out in commit order, so nothing committed later is skipped.
--follow keeps waiting for new changes (Ctrl-C stops it).

Each change carries the order as stored when it is printed: when a newer
version has been accepted since, an older change shows the newer content
and the newer change follows.`,
		Example:     "  ordersync changes --since 0 -o jsonl\n  ordersync changes --platform sim-acme --since 1200 --follow -o jsonl",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationJSONL: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.After < 0 {
				return Usage(fmt.Errorf("--since %d: must be 0 or more", opts.After))
			}
			ctx := cmd.Context()
			st, err := store.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return fmt.Errorf("open store: %w", err)
			}
			defer st.Close()
			enc := json.NewEncoder(app.Out)
			if app.Output == "table" {
				fmt.Fprintln(app.Out, "SEQ\tKIND\tPLATFORM\tORDER\tUPDATED AT\tCOMMITTED AT")
			}
			err = feed.Follow(ctx, st, opts, func(c store.Change) error {
				if app.Output != "table" {
					return enc.Encode(c)
				}
				return writeChangeRow(app.Out, c)
			})
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&opts.Platform, "platform", "p", "", "only this platform's changes")
	cmd.Flags().Int64Var(&opts.After, "since", 0, "print changes after this sequence number (the last one you handled)")
	cmd.Flags().BoolVar(&opts.Follow, "follow", false, "keep waiting for new changes")
	cmd.Flags().DurationVar(&opts.Poll, "poll", feed.DefaultPoll, "with --follow, how long to wait when there is nothing new")
	cmd.AddCommand(newChangesCompactCommand(app))
	return cmd
}

func newChangesCompactCommand(app *App) *cobra.Command {
	var retention time.Duration
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Remove changes older than the retention that every destination has acknowledged",
		Long: `Removes changes committed more than the retention ago (--retention, default
$ORDERSYNC_CHANGE_RETENTION, 168h) that every destination has acknowledged:
those recorded in the store, and the registered destinations and those of
the platforms file's destinations block, which hold every change until they
acknowledge one. A removed destination holds nothing: a consumer row it
left is released first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if retention == 0 {
				retention = app.Process.ChangeRetention
			}
			consumers, err := app.destinationNames()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			st, err := store.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return fmt.Errorf("open store: %w", err)
			}
			defer st.Close()
			n, err := compactOnce(ctx, st, consumers, retention, app.Logger.Info)
			if err != nil {
				return err
			}
			fmt.Fprintf(app.Out, "removed %d changes\n", n)
			return nil
		},
	}
	cmd.Flags().DurationVar(&retention, "retention", 0, "keep acknowledged changes this long (default $ORDERSYNC_CHANGE_RETENTION)")
	return cmd
}

// destinationNames lists the platforms file's destinations; none when the
// default platforms.yaml is absent.
func (a *App) destinationNames() ([]string, error) {
	f, err := a.loadPlatformsIfAny()
	if err != nil || f == nil {
		return nil, err
	}
	return f.DestinationNames(), nil
}

// writeChangeRow prints one change of the table; the order id is the
// platform's and is escaped for the terminal.
func writeChangeRow(w io.Writer, c store.Change) error {
	_, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", c.Seq, c.Kind, term(c.Platform), term(c.OrderID),
		c.UpdatedAt.Format(time.RFC3339Nano), c.CommittedAt.Format(time.RFC3339Nano))
	return err
}
