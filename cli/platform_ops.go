package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
)

func newPlatformListCommand(app *App) *cobra.Command {
	var filter accounts.Filter
	var state string
	var noCursors bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List registered platforms (a page at a time) and the state of their cursors",
		Long: `Lists the platforms of the account registry in name order, one page at a
time (--limit, then --after the last name shown), filtered by --state,
--kind or --task-queue. Each listed cursor is asked for its state, each
with a short timeout of its own: a cursor whose task queue no worker polls
shows "no answer" and the rest of the list is unaffected. --no-cursors
lists from the registry alone (fast at any size).

With no platform registered yet, the platforms file is listed instead.`,
		Example: "  ordersync platform list\n  ordersync platform list --state paused --kind shopify -o json\n" +
			"  ordersync platform list --limit 100 --after shopify-m",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter.Class, filter.State = accounts.ClassPlatform, accounts.State(state)
			if state != "" && !filter.State.Valid() {
				return Usage(fmt.Errorf("--state %q: want active, paused or removed", state))
			}
			type row struct {
				Platform  string         `json:"platform"`
				Kind      string         `json:"kind"`
				TaskQueue string         `json:"task_queue"`
				Cursor    string         `json:"cursor,omitempty"`
				Watermark time.Time      `json:"watermark,omitzero"`
				State     accounts.State `json:"state,omitempty"`
				Revision  int64          `json:"revision,omitempty"`
			}
			var rows []row
			reg, closeReg, err := app.openRegistry(cmd.Context())
			if err != nil {
				return err
			}
			defer closeReg()
			entries, err := reg.List(cmd.Context(), filter)
			if err != nil {
				return err
			}
			for _, e := range entries {
				rows = append(rows, row{Platform: e.Name, Kind: e.Kind, TaskQueue: e.TaskQueue, State: e.State, Revision: e.Revision})
			}
			if len(entries) == 0 && filter.After == "" && filter.State == "" && filter.Kind == "" && filter.TaskQueue == "" {
				f, err := app.loadPlatformsIfAny()
				if err != nil {
					return err
				}
				if f != nil {
					printWarnings(app, f)
					for _, p := range f.Platforms {
						rows = append(rows, row{Platform: p.Name, Kind: p.Kind, TaskQueue: p.TaskQueue})
					}
				}
			}
			if !noCursors && len(rows) > 0 {
				c, err := app.Dial(cmd.Context())
				if err != nil {
					return err
				}
				defer c.Close()
				for i := range rows {
					if rows[i].State == accounts.Removed {
						continue
					}
					qctx, cancel := context.WithTimeout(cmd.Context(), listQueryTimeout)
					st, found, err := cursorStatus(qctx, c, rows[i].Platform)
					cancel()
					switch {
					case err != nil && cmd.Context().Err() != nil:
						return err
					case err != nil:
						rows[i].Cursor = "no answer"
					case !found:
						rows[i].Cursor = "not started"
					case st.Paused:
						rows[i].Cursor, rows[i].Watermark = "paused", st.Watermark
					default:
						rows[i].Cursor, rows[i].Watermark = "running", st.Watermark
					}
				}
			}
			if app.Output == "json" {
				return writeJSON(app, rows)
			}
			tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLATFORM\tKIND\tTASK QUEUE\tCURSOR\tWATERMARK\tSTATE\tREVISION")
			for _, r := range rows {
				state, rev := string(r.State), fmt.Sprint(r.Revision)
				if r.State == "" {
					state, rev = "not registered", "-"
				}
				cursor := r.Cursor
				if cursor == "" {
					cursor = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", term(r.Platform), term(r.Kind), term(r.TaskQueue), cursor, fmtTime(r.Watermark), state, rev)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if limit := min(max(filter.Limit, 1), accounts.MaxPage); len(entries) == limit {
				fmt.Fprintf(app.Err, "more: ordersync platform list --after %s\n", entries[len(entries)-1].Name)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only platforms in this state: active, paused or removed (default: not removed)")
	cmd.Flags().StringVar(&filter.Kind, "kind", "", "only platforms of this kind")
	cmd.Flags().StringVar(&filter.TaskQueue, "task-queue", "", "only platforms on this task queue")
	cmd.Flags().StringVar(&filter.After, "after", "", "start after this name (the last of the previous page)")
	cmd.Flags().IntVar(&filter.Limit, "limit", 100, "platforms per page (at most 1000)")
	cmd.Flags().BoolVar(&noCursors, "no-cursors", false, "do not ask the cursors for their state")
	return cmd
}

// listQueryTimeout bounds one cursor's answer in a list: an unserved queue
// costs its own row this long, never the whole list.
const listQueryTimeout = 3 * time.Second

func newPlatformPauseCommand(app *App, pause bool) *cobra.Command {
	var reason string
	var timeout time.Duration
	use, short, name := "resume PLATFORM...", "Let paused cursors start slices again", api.SignalResume
	long := "Lets each named cursor start slices again, and closes its circuit breaker."
	if pause {
		use, short, name = "pause PLATFORM...", "Stop cursors from starting new slices (running slices finish)", api.SignalPause
		long = "Stops each named cursor from starting new slices; running slices finish."
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    long + "\n\n" + updateWaitHelp,
		Example: "  ordersync platform " + name + " sim-acme\n  ordersync platform " + name + " sim-acme sim-globex --timeout 1m\n  ordersync platform " + name + " -p sim-acme   # the same as the first",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			platforms, err := app.resolvePlatforms(cmd.Context(), args)
			if err != nil {
				return err
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			for _, p := range platforms {
				var st api.CursorStatus
				var err error
				if pause {
					err = app.updateCursor(cmd.Context(), c, p, timeout, name, &st, api.PauseRequest{Reason: reason})
				} else {
					err = app.updateCursor(cmd.Context(), c, p, timeout, name, &st)
				}
				if err != nil {
					return err
				}
				if err := app.recordPaused(cmd.Context(), p.Name, pause); err != nil {
					return err
				}
				if app.Output == "json" {
					if err := writeJSON(app, st); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(app.Out, "%s: %s\n", p.Name, map[bool]string{true: "paused", false: "running"}[st.Paused])
			}
			return nil
		},
	}
	if pause {
		cmd.Flags().StringVar(&reason, "reason", "", "why, shown in status")
	}
	addTimeoutFlag(cmd, &timeout)
	namesFlag(cmd, "platform", "p", "platform", 1, 0)
	return cmd
}

func newPlatformApplyCommand(app *App) *cobra.Command {
	var dryRun bool
	var timeout time.Duration
	var opts accounts.ApplyOptions
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Make the registry hold the platforms file's settings; start, update (and prune) cursors",
		Long: `Validates the whole platforms file first: if anything is wrong, every problem
is printed and nothing changes. Then it makes the account registry hold the
file's platforms: a new platform is registered and its cursor started; a
changed one is written (a new revision) and its running cursor and workers
follow at once (identity too: workers resolve it from the registry by name);
an unchanged one has its cursor started if it does not run. With --prune,
registered platforms the file no longer lists are removed (their cursors
end; --discard-dead-letters ends their dead-letter workflows too). With
--dry-run it prints the changes, with the settings that differ, and writes
nothing.

A platform registered for the first time whose cursor already runs keeps
the task queue it runs on. The destinations block is applied the same way:
a new destination is registered and its Delivery started, a changed one
written and its Delivery reconfigured, and with --prune a registered
destination the file lost is removed (its Delivery ends and it no longer
holds the change feed).
Credentials need not resolve on the machine that runs apply.

` + updateWaitHelp,
		Example: "  ordersync platform apply -f platforms.yaml\n  ordersync platform apply -f platforms.yaml --dry-run --prune",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := app.LoadPlatforms()
			if err != nil {
				return err
			}
			svc, _, done, err := app.accountService(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			opts.DryRun = dryRun
			type change struct {
				Platform string   `json:"platform"`
				Action   string   `json:"action"`
				Fields   []string `json:"fields,omitempty"`
				Revision int64    `json:"revision,omitempty"`
				Note     string   `json:"note,omitempty"`
			}
			var changes []change
			applied, err := svc.ApplyPlatforms(cmd.Context(), f.Platforms, opts)
			for _, ch := range applied {
				action := map[string]string{accounts.ActionAdd: "started", accounts.ActionUpdate: "updated",
					accounts.ActionUnchanged: "unchanged", accounts.ActionRemove: "removed"}[ch.Action]
				if dryRun && ch.Action != accounts.ActionUnchanged {
					action = "would be " + action
				}
				changes = append(changes, change{ch.Platform, action, ch.Fields, ch.Revision, ch.Note})
			}
			if err != nil {
				for _, ch := range changes { // what was done before the failure
					fmt.Fprintf(app.Out, "%s: %s\n", ch.Platform, ch.Action)
				}
				return registryError(err)
			}
			// The destinations block goes through the registry too (with
			// --prune, registered destinations the file lost are removed).
			dapplied, err := svc.ApplyDestinations(cmd.Context(), f.Destinations, opts)
			for _, ch := range dapplied {
				action := map[string]string{accounts.ActionAdd: "delivery started", accounts.ActionUpdate: "delivery settings updated",
					accounts.ActionUnchanged: "delivery unchanged", accounts.ActionRemove: "delivery removed"}[ch.Action]
				if dryRun {
					action = map[string]string{accounts.ActionAdd: "delivery would be started", accounts.ActionUpdate: "delivery settings would be updated",
						accounts.ActionUnchanged: "delivery unchanged", accounts.ActionRemove: "delivery would be removed"}[ch.Action]
				}
				changes = append(changes, change{"destination " + ch.Destination, action, ch.Fields, ch.Revision, ""})
			}
			if err != nil {
				for _, ch := range changes {
					fmt.Fprintf(app.Out, "%s: %s\n", ch.Platform, ch.Action)
				}
				return registryError(err)
			}
			if app.Output == "json" {
				return writeJSON(app, changes)
			}
			for _, ch := range changes {
				line := fmt.Sprintf("%s: %s", ch.Platform, ch.Action)
				if len(ch.Fields) > 0 {
					line += " (" + strings.Join(ch.Fields, ", ") + ")"
				}
				if ch.Note != "" {
					line += "; " + ch.Note
				}
				fmt.Fprintln(app.Out, line)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only say what would change")
	cmd.Flags().BoolVar(&opts.Prune, "prune", false, "remove registered platforms and destinations the file does not list")
	cmd.Flags().BoolVar(&opts.ReuseRemoved, "reuse-removed", false, "let the file take names of removed platforms and destinations")
	cmd.Flags().BoolVar(&opts.DiscardDeadLetters, "discard-dead-letters", false, "with --prune: end the removed platforms' dead-letter workflows too")
	addTimeoutFlag(cmd, &timeout)
	return cmd
}

func writeJSON(app *App, v any) error {
	enc := json.NewEncoder(app.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
