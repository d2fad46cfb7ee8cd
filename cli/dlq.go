package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/api"
)

func newDLQCommand(app *App) *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "List, retry or discard dead-lettered slices"}
	var platform string
	cmd.PersistentFlags().StringVarP(&platform, "platform", "p", "", "the platform, as the argument names it (required by retry and discard; list shows every platform without it)")

	list := &cobra.Command{
		Use:   "list [PLATFORM]",
		Short: "List dead-lettered slices: one platform's, or every platform's",
		Long: `Lists the dead-lettered slices of the platform named (argument or
--platform), or, without one, of every
platform in the platforms file, or, with no platforms file, of every
dead-letter workflow running on the server.`,
		Example: "  ordersync dlq list sim-acme\n  ordersync dlq list --platform sim-acme   # the same\n  ordersync dlq list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			var args []string
			if platform != "" {
				args = []string{platform}
			}
			names, err := app.platformNames(cmd.Context(), c, args, api.DeadLetterWorkflowType)
			if err != nil {
				return err
			}
			// A platform whose dead-letter workflow cannot be read does not
			// hide the others: they are listed, then its error is returned.
			var entries []api.DeadLetterEntry
			var unread error
			for _, n := range names {
				es, err := deadLetters(cmd.Context(), c, n)
				if err != nil {
					unread = errors.Join(unread, fmt.Errorf("%s: %w", n, err))
					continue
				}
				entries = append(entries, es...)
			}
			if app.Output == "json" {
				if entries == nil {
					entries = []api.DeadLetterEntry{}
				}
				if err := writeJSON(app, entries); err != nil {
					return err
				}
				return unread
			}
			if err := writeDeadLetterTable(app.Out, entries); err != nil {
				return err
			}
			for _, n := range names {
				if st, ok := deadLetterStatus(cmd.Context(), c, n); ok && st.Rejected > 0 {
					fmt.Fprintf(app.Out, "\n%s: %d signal(s) refused; the last: %s\n", n, st.Rejected, clipText(st.LastError, 200))
				}
			}
			return unread
		},
	}
	nameArgument(list, "platform", &platform)
	cmd.AddCommand(list, newDLQActionCommand(app, &platform, "retry", api.SignalDeadLetterReprocess,
		"Run dead-lettered slices again; success removes them"),
		newDLQActionCommand(app, &platform, "discard", api.SignalDeadLetterDiscard,
			"Drop dead-lettered slices without running them"))
	return cmd
}

func newDLQActionCommand(app *App, platform *string, verb, signal, short string) *cobra.Command {
	var sliceID string
	var all bool
	cmd := &cobra.Command{
		Use:     verb + " [PLATFORM]",
		Short:   short,
		Example: fmt.Sprintf("  ordersync dlq %s sim-acme --slice slice/sim-acme/20261120T000329Z-20261120T002329Z\n  ordersync dlq %s sim-acme --all\n  ordersync dlq %s --platform sim-acme --all   # the same", verb, verb, verb),
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := app.requirePlatform(cmd.Context(), *platform); err != nil {
				return err
			}
			if (sliceID == "") == !all {
				return Usage(fmt.Errorf("give --slice ID or --all"))
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			entries, err := deadLetters(cmd.Context(), c, *platform)
			if err != nil {
				return err
			}
			matched := 0
			for _, e := range entries {
				if all || e.SliceID == sliceID {
					matched++
				}
			}
			if sliceID != "" && matched == 0 {
				return Usage(fmt.Errorf("slice %q is not in the dead-letter workflow of %s", sliceID, *platform))
			}
			if matched > 0 {
				sel := api.DeadLetterSelector{SliceID: sliceID, All: all}
				if err := c.SignalWorkflow(cmd.Context(), api.DeadLetterWorkflowID(*platform), "", signal, sel); err != nil {
					return fmt.Errorf("%s %s: %w", verb, api.DeadLetterWorkflowID(*platform), err)
				}
			}
			if app.Output == "json" {
				return writeJSON(app, map[string]any{"platform": *platform, "action": verb, "slices": matched})
			}
			fmt.Fprintf(app.Out, "%s: %s requested for %d slice(s)\n", *platform, verb, matched)
			return nil
		},
	}
	cmd.Flags().StringVar(&sliceID, "slice", "", "slice workflow ID")
	cmd.Flags().BoolVar(&all, "all", false, "every dead-lettered slice of the platform")
	nameArgument(cmd, "platform", platform)
	return cmd
}

// requirePlatform checks the platform is named and, when there is a
// platforms file, configured in it.
func (a *App) requirePlatform(ctx context.Context, name string) error {
	if name == "" {
		return Usage(fmt.Errorf("name the platform: as the argument, or --platform"))
	}
	f, err := a.loadPlatformsIfAny()
	if err != nil || f == nil {
		return err
	}
	_, err = a.selectKnown(ctx, f, []string{name})
	return err
}

// writeDeadLetterTable is `dlq list`'s table. NEXT RETRY is when the
// dead-letter workflow runs the slice again on its own, "running" while a
// try runs, or "operator" when its cause (or the platform's
// dead_letter_retry: off) leaves it to an operator; AUTO counts the
// automatic tries made.
func writeDeadLetterTable(w io.Writer, entries []api.DeadLetterEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLICE\tFAILURES\tATTEMPTS\tLAST FAILED\tNEXT RETRY\tAUTO\tREPROCESSING\tERROR")
	for _, e := range entries {
		next := fmtTime(e.NextRetryAt)
		switch {
		case e.Reprocessing:
			next = "running"
		case e.NextRetryAt.IsZero():
			next = "operator"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%d\t%v\t%s\n", term(e.SliceID), e.Failures, e.Attempts, fmtTime(e.LastFailedAt),
			next, e.AutoRetries, e.Reprocessing, clipText(causeFirst(e.Error, e.Platform), 100))
	}
	return tw.Flush()
}
