package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/starter"
)

func newPlatformListCommand(app *App) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List configured platforms and the state of their cursors",
		Example: "  ordersync platform list\n  ordersync platform list -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := app.LoadPlatforms()
			if err != nil {
				return err
			}
			printWarnings(app, f)
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			type row struct {
				Platform  string    `json:"platform"`
				Kind      string    `json:"kind"`
				TaskQueue string    `json:"task_queue"`
				Cursor    string    `json:"cursor"`
				Watermark time.Time `json:"watermark,omitzero"`
			}
			var rows []row
			for _, p := range f.Platforms {
				st, found, err := cursorStatus(cmd.Context(), c, p.Name)
				if err != nil {
					return err
				}
				r := row{Platform: p.Name, Kind: p.Kind, TaskQueue: p.TaskQueue, Cursor: "not started"}
				if found {
					r.Cursor, r.Watermark = "running", st.Watermark
					if st.Paused {
						r.Cursor = "paused"
					}
				}
				rows = append(rows, r)
			}
			if app.Output == "json" {
				return writeJSON(app, rows)
			}
			tw := tabwriter.NewWriter(app.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLATFORM\tKIND\tTASK QUEUE\tCURSOR\tWATERMARK")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", term(r.Platform), term(r.Kind), term(r.TaskQueue), term(r.Cursor), fmtTime(r.Watermark))
			}
			return tw.Flush()
		},
	}
}

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
		Example: "  ordersync platform " + name + " sim-acme\n  ordersync platform " + name + " sim-acme sim-globex --timeout 1m",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := app.LoadPlatforms()
			if err != nil {
				return err
			}
			platforms, err := SelectPlatforms(f, args)
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
	return cmd
}

func newPlatformApplyCommand(app *App) *cobra.Command {
	var dryRun bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Validate the platforms file, push changed settings to running cursors, start new ones",
		Long: `Validates the whole platforms file first: if anything is wrong, every problem
is printed and nothing changes. Then, for each platform: a running cursor whose
settings differ gets them through the config update (they apply from its next
slice); a platform without a running cursor gets one started.

Tuning settings take effect at once. The identity of a platform (kind,
endpoint, credentials, options) must also be what every worker's platforms
file says, or its workers refuse to fetch: edit the file the workers read
first (they re-read it within seconds), then apply. Credentials need not
resolve on the machine that runs apply.

` + updateWaitHelp,
		Example: "  ordersync platform apply -f platforms.yaml\n  ordersync platform apply -f platforms.yaml --dry-run",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := app.LoadPlatforms()
			if err != nil {
				return err
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			type change struct {
				Platform string `json:"platform"`
				Action   string `json:"action"`
			}
			var changes []change
			for _, p := range f.Platforms {
				st, found, err := cursorStatus(cmd.Context(), c, p.Name)
				if err != nil {
					return err
				}
				action := "unchanged"
				switch {
				case !found:
					action = "started"
					if !dryRun {
						if _, err := starter.EnsureCursor(cmd.Context(), c, p, time.Now()); err != nil {
							return err
						}
					}
				case !sameSettings(st.Settings, p):
					action = "updated"
					if !dryRun {
						var out api.CursorStatus
						if err := app.updateCursor(cmd.Context(), c, p, timeout, api.SignalConfig, &out, p); err != nil {
							return err
						}
						// Reprocessing from the dead-letter workflow uses the new settings too.
						_ = c.SignalWorkflow(cmd.Context(), api.DeadLetterWorkflowID(p.Name), "", api.SignalDeadLetterConfig, p)
					}
				}
				if dryRun && action != "unchanged" {
					action = "would be " + action
				}
				changes = append(changes, change{p.Name, action})
			}
			for _, d := range f.Destinations {
				dst, running, err := deliveryStatus(cmd.Context(), c, d.Name)
				if err != nil {
					return err
				}
				action := "delivery unchanged"
				switch {
				case !running && dryRun:
					action = "delivery would be started"
				case !running:
					action = "delivery started"
					if _, err := starter.EnsureDelivery(cmd.Context(), c, d); err != nil {
						return err
					}
				case reflect.DeepEqual(dst.Settings, d):
				case dryRun:
					action = "delivery settings would be updated"
				default:
					uctx, cancel := context.WithTimeout(cmd.Context(), timeout)
					h, err := c.UpdateWorkflow(uctx, client.UpdateWorkflowOptions{WorkflowID: api.DeliveryWorkflowID(d.Name),
						UpdateName: api.SignalDeliveryConfig, Args: []any{d}, WaitForStage: client.WorkflowUpdateStageCompleted})
					if err == nil {
						err = h.Get(uctx, nil)
					}
					cancel()
					if err != nil {
						return fmt.Errorf("config %s: %w", api.DeliveryWorkflowID(d.Name), err)
					}
					action = "delivery settings updated"
				}
				changes = append(changes, change{"destination " + d.Name, action})
			}
			if app.Output == "json" {
				return writeJSON(app, changes)
			}
			for _, ch := range changes {
				fmt.Fprintf(app.Out, "%s: %s\n", ch.Platform, ch.Action)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only say what would change")
	addTimeoutFlag(cmd, &timeout)
	return cmd
}

// sameSettings compares settings as their JSON (what the cursor received).
func sameSettings(running, file config.Platform) bool {
	a, _ := json.Marshal(running)
	b, _ := json.Marshal(file)
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	return reflect.DeepEqual(x, y)
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
