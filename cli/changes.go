package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/delivery"
	"github.com/ordersync/ordersync/feed"
	"github.com/ordersync/ordersync/store"
)

// annotationJSONL marks a command that also prints -o jsonl.
const annotationJSONL = "jsonl"

func newChangesCommand(app *App) *cobra.Command {
	var opts feed.Options
	var since, payload string
	cmd := &cobra.Command{
		Use:   "changes",
		Short: "Print the store's change feed: every accepted order version, in commit order",
		Long: `Prints the changes the store accepted after --since, in sequence order: one line per change in the table, or with -o jsonl (or json)
one JSON object per line carrying the change and the order with its lines.

--since is a sequence number (print the changes after it: pass the last
"seq" you handled; 0, the default, prints everything retained), or a time,
RFC3339 (2026-11-20T00:00:00Z) or relative to now (-6h, -2d): print from
the first change committed at or after it (found by bisection over the
sequence numbers, a few indexed reads). Resume by the sequence number:
sequence numbers are handed out in commit order, so nothing committed
later is skipped; commit times of concurrent commits may differ from that
order by a transaction's length.
--follow keeps waiting for new changes (Ctrl-C stops it).

--payload says which form of each order -o jsonl prints, as a
destination's payload setting does: both (the default: the order as
stored, its platform's raw JSON and its canonical order), raw (without the
canonical order) or canonical (the canonical order without the raw JSON
and the per-kind header and lines; schema in order/schema/order.v1.json).

Each change carries the order as stored when it is printed: when a newer
version has been accepted since, an older change shows the newer content
and the newer change follows.`,
		Example: "  ordersync changes --since 0 -o jsonl\n  ordersync changes --platform sim-acme --since 1200 --follow -o jsonl\n" +
			"  ordersync changes --since -2h        # changes committed in the last two hours\n" +
			"  ordersync changes --since 2026-11-20T00:00:00Z -o jsonl\n" +
			"  ordersync changes --since 1200 -o jsonl --payload canonical",
		Args:        cobra.NoArgs,
		Annotations: map[string]string{annotationJSONL: "yes"},
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			if !slices.Contains(config.PayloadValues, payload) {
				return Usage(fmt.Errorf("--payload %q: want one of %s", clipText(payload, 40), strings.Join(config.PayloadValues, ", ")))
			}
			ctx := cmd.Context()
			st, err := store.Open(ctx, app.Process.StoreDSN)
			if err != nil {
				return fmt.Errorf("open store: %w", err)
			}
			defer st.Close()
			opts.After = spec.seq
			if spec.time {
				if opts.After, err = seqBefore(ctx, st, spec.at); err != nil {
					return err
				}
			}
			if app.Output == "table" {
				fmt.Fprintln(app.Out, "SEQ\tKIND\tPLATFORM\tORDER\tUPDATED AT\tCOMMITTED AT")
			}
			err = feed.Follow(ctx, st, opts, func(c store.Change) error {
				if app.Output != "table" {
					b, err := delivery.EncodeChange(payload, c)
					if err != nil {
						return fmt.Errorf("encode change %d: %w", c.Seq, err)
					}
					_, err = app.Out.Write(append(b, '\n'))
					return err
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
	cmd.Flags().StringVar(&since, "since", "0", "a sequence number: print the changes after it (the last seq you handled); or a time, RFC3339 or relative (-2h, -2d): print from the first change committed then")
	cmd.Flags().BoolVar(&opts.Follow, "follow", false, "keep waiting for new changes")
	cmd.Flags().StringVar(&payload, "payload", config.PayloadBoth, "with -o jsonl, which form of each order: both, raw or canonical")
	durationDaysVar(cmd.Flags(), &opts.Poll, "poll", feed.DefaultPoll, "with --follow, how long to wait when there is nothing new")
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
left is released first. It prints how many changes it removed.`,
		Example: "  ordersync changes compact                  # retention from $ORDERSYNC_CHANGE_RETENTION (168h)\n" +
			"  ordersync changes compact --retention 30d\n" +
			"  ORDERSYNC_STORE_DSN=postgres://ordersync@db:5432/ordersync ordersync changes compact --retention 72h",
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
	durationDaysVar(cmd.Flags(), &retention, "retention", 0, "keep acknowledged changes this long, e.g. 168h or 7d (default $ORDERSYNC_CHANGE_RETENTION)")
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
