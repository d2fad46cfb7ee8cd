package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/internal/searchattr"
	"github.com/ordersync/ordersync/internal/textclip"
)

// platformStatus is one row of `platform status`.
type platformStatus struct {
	Platform    string            `json:"platform"`
	Running     bool              `json:"running"`
	Cursor      *api.CursorStatus `json:"cursor,omitempty"`
	DeadLetters int               `json:"dead_letters"`
	// Progress is how far the watermark has come from start to now, 0..1.
	Progress float64 `json:"progress"`
	// State is the table's STATE column: what the cursor waits for, or
	// "fetching", or "not started".
	State string `json:"state"`
	// AsOf is when this row was read; the cursor's lag_seconds is computed
	// then, not at the cursor's last workflow task.
	AsOf time.Time `json:"as_of"`
	// Error says why the platform's workflows could not be read (a
	// workflow whose tasks fail answers no query); the other rows are
	// still shown, and the command exits 1.
	Error string `json:"error,omitempty"`
	// Credential is the platform's stored credential's health (kind,
	// expiries, last refresh, re-authorization), read from the store;
	// absent for static credentials.
	Credential *platformCredential `json:"credential,omitempty"`
}

func newPlatformStatusCommand(app *App) *cobra.Command {
	var watch bool
	var every time.Duration
	var state string
	var minLag time.Duration
	filter := accounts.Filter{Class: accounts.ClassPlatform}
	cmd := &cobra.Command{
		Use:   "status [PLATFORM...]",
		Short: "Show backfill progress, lag, in-flight slices, dead letters and why a cursor waits",
		Long: `For each platform (all by default): a progress bar of the watermark from the
platform's start to now, the lag (now - watermark), slices in flight, the
number of dead-lettered slices, and what the cursor waits for (paused,
circuit breaker open, outside its work window, settling, concurrency limit,
retry back-off, re-sweep pending, draining before continue-as-new).
LATE counts orders first seen by a re-sweep (resweep_delay): the platform
showed them later than the overlap covers, so the overlap is too small.
NOT STORED counts orders the platform sent that were set aside: an order
without a usable updated_at or with lines the store refuses (more than
10,000, a missing or repeated line id, an oversized field, a unit price
that is not a decimal), or a version stamped further ahead of now than
ORDERSYNC_MAX_FUTURE_SKEW (it would pin the order); -o json splits them
into counts.orders_rejected and counts.orders_future_stamped, and the
worker logs each with platform and order id.
A platform whose credentials are {stored: NAME} gets a row in a second
table (credential in JSON), read from the store without the keys: the
credential's kind, when its access and refresh tokens expire, its last
refresh, whether it needs re-authorization (re-install the app) and its
last refresh error; never a secret.
Without names it shows a page of the account registry (--limit, then --after
the last name shown; --state and --kind filter); with nothing registered, the
platforms file's platforms, or else every cursor running on the server. Each
query has its own timeout: a cursor whose task queue no worker polls is one
failed row, the others are shown. --min-lag keeps the cursors at least that
far behind now (and the rows that could not be read). --watch refreshes; with -o json it writes one JSON document per line (no
screen codes). In JSON, state is the STATE column and lag_seconds is
computed when the status is read (as_of).`,
		Example: "  ordersync platform status\n  ordersync platform status --watch\n  ordersync platform status sim-acme -o json\n" +
			"  ordersync platform status --kind shopify --min-lag 1h --limit 1000",
		RunE: func(cmd *cobra.Command, args []string) error {
			filter.State = accounts.State(state)
			if state != "" && (filter.State != accounts.Active && filter.State != accounts.Paused) {
				return Usage(fmt.Errorf("--state %q: want active or paused", state))
			}
			c, err := app.Dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			names, err := app.statusNames(cmd.Context(), c, args, filter)
			if err != nil {
				return err
			}
			creds, cerr := app.openCredentialLookup(cmd.Context())
			if cerr != nil {
				fmt.Fprintf(app.Err, "stored credentials not shown: %s\n", clipText(cerr.Error(), 200))
			}
			defer creds.Close()
			if !watch {
				rows, err := collectStatus(cmd.Context(), c, names)
				if rows == nil {
					return err
				}
				creds.fill(cmd.Context(), rows)
				rows = laggingOnly(rows, minLag)
				if rerr := app.renderStatus(rows, time.Now()); rerr != nil {
					return rerr
				}
				return err // a platform that could not be read: after the others are shown
			}
			ctx, stop := SignalContext()
			defer stop()
			for {
				rows, err := collectStatus(ctx, c, names)
				if rows == nil && err != nil && ctx.Err() == nil {
					return err
				}
				creds.fill(ctx, rows)
				rows = laggingOnly(rows, minLag)
				if ctx.Err() != nil {
					return nil
				}
				if app.Output == "json" {
					// One JSON document per line, for scripts and jq.
					if err := json.NewEncoder(app.Out).Encode(rows); err != nil {
						return err
					}
				} else {
					fmt.Fprint(app.Out, "\033[H\033[2J")
					fmt.Fprintf(app.Out, "ordersync status  %s  (every %s, Ctrl-C to stop)\n\n", time.Now().UTC().Format(time.RFC3339), every)
					if err := app.renderStatus(rows, time.Now()); err != nil {
						return err
					}
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(every):
				}
			}
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only registered platforms in this state: active or paused")
	cmd.Flags().StringVar(&filter.Kind, "kind", "", "only registered platforms of this kind")
	cmd.Flags().StringVar(&filter.After, "after", "", "start after this name (the last of the previous page)")
	cmd.Flags().IntVar(&filter.Limit, "limit", 100, "platforms per page (at most 1000)")
	durationDaysVar(cmd.Flags(), &minLag, "min-lag", 0, "only cursors at least this far behind now (and rows that could not be read)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "refresh until Ctrl-C")
	durationDaysVar(cmd.Flags(), &every, "every", 2*time.Second, "refresh interval with --watch")
	namesFlag(cmd, "platform", "p", "platform", 0, 0)
	return cmd
}

// collectStatus reads every platform's row. A platform whose workflows
// cannot be read gets a row with its error, and the errors are returned
// beside the rows: one stuck workflow must not hide every other platform.
// Rows are nil only when the context ended.
// laggingOnly keeps the rows whose cursor is at least minLag behind now,
// and the rows that could not be read (their lag is unknown); every row
// when minLag is 0.
func laggingOnly(rows []platformStatus, minLag time.Duration) []platformStatus {
	if minLag <= 0 {
		return rows
	}
	out := rows[:0:0]
	for _, r := range rows {
		if r.Error != "" || (r.Cursor != nil && r.Cursor.LagSeconds >= minLag.Seconds()) {
			out = append(out, r)
		}
	}
	return out
}

// statusQueryTimeout bounds one query of a status: a cursor whose task
// queue no worker polls costs its own row this long and is shown as
// failed, never the rows of the others.
const statusQueryTimeout = 5 * time.Second

// statusNames is what status shows: the named platforms; else a page of
// the registry (filtered); else, with nothing registered, the platforms
// file's or the cursors running on the server.
func (a *App) statusNames(ctx context.Context, c client.Client, args []string, filter accounts.Filter) ([]string, error) {
	if len(args) > 0 {
		return args, nil
	}
	reg, closeReg, err := a.openRegistry(ctx)
	if err != nil {
		return nil, err
	}
	defer closeReg()
	entries, err := reg.List(ctx, filter)
	if err != nil {
		return nil, err
	}
	if len(entries) > 0 || filter.After != "" || filter.State != "" || filter.Kind != "" {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name
		}
		if limit := min(max(filter.Limit, 1), accounts.MaxPage); len(entries) == limit {
			fmt.Fprintf(a.Err, "more: ordersync platform status --after %s\n", entries[len(entries)-1].Name)
		}
		return names, nil
	}
	return a.platformNames(ctx, c, nil, api.CursorWorkflowType)
}

func collectStatus(ctx context.Context, c client.Client, names []string) ([]platformStatus, error) {
	rows := make([]platformStatus, 0, len(names))
	now := time.Now()
	var errs []error
	failed := func(row platformStatus, err error) {
		row.State, row.Error = "query failed", textclip.Message(err.Error())
		rows = append(rows, row)
		errs = append(errs, err)
	}
	for _, n := range names {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		row := platformStatus{Platform: n, State: "not started", AsOf: now.UTC()}
		qctx, cancel := context.WithTimeout(ctx, statusQueryTimeout)
		st, found, err := cursorStatus(qctx, c, n)
		cancel()
		if err != nil {
			failed(row, err)
			continue
		}
		if found {
			st.LagSeconds = math.Max(0, now.Sub(st.Watermark).Seconds())
			row.Running, row.Cursor, row.State = true, &st, describeState(&st)
			if total := now.Sub(st.Start); total > 0 {
				row.Progress = math.Max(0, math.Min(1, st.Watermark.Sub(st.Start).Seconds()/total.Seconds()))
			}
		}
		qctx, cancel = context.WithTimeout(ctx, statusQueryTimeout)
		dl, err := deadLetters(qctx, c, n)
		cancel()
		if err != nil {
			failed(row, err)
			continue
		}
		row.DeadLetters = len(dl)
		rows = append(rows, row)
	}
	return rows, errors.Join(errs...)
}

func (a *App) renderStatus(rows []platformStatus, now time.Time) error {
	if a.Output == "json" {
		return writeJSON(a, rows)
	}
	if err := renderStatusTable(a.Out, rows, now); err != nil {
		return err
	}
	return renderCredentialTable(a.Out, rows, now)
}

func renderStatusTable(w io.Writer, rows []platformStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLATFORM\tBACKFILL\tWATERMARK\tLAG\tIN FLIGHT\tDLQ\tLATE\tNOT STORED\tSTATE\tLAST ERROR")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\tquery failed\t%s\n", term(r.Platform), clipText(r.Error, 80))
			continue
		}
		if !r.Running {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%d\t-\t-\tnot started\t\n", term(r.Platform), r.DeadLetters)
			continue
		}
		st := r.Cursor
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", term(r.Platform), progressBar(r.Progress, 20),
			fmtTime(st.Watermark), fmtLag(now.Sub(st.Watermark)), len(st.InFlight), r.DeadLetters,
			st.Counts.LateArrivals, st.Counts.OrdersRejected+st.Counts.OrdersFutureStamped,
			term(describeState(st)), clipText(causeFirst(st.LastError, r.Platform), 80))
	}
	return tw.Flush()
}

func progressBar(frac float64, width int) string {
	filled := int(math.Round(frac * float64(width)))
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "] " + fmt.Sprintf("%3.0f%%", frac*100)
}

func fmtLag(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String()
}

// describeState is the STATE column: the cursor's state in the word its
// PlatformState search attribute holds (so the same word filters the Web
// UI's list), then why it waits. A paused cursor's or an open breaker's
// wait reason already says so, and stands alone. Alerts the webhook has
// not taken yet are said last: the cursor fetches on while they wait.
func describeState(st *api.CursorStatus) string {
	state := describeWait(st)
	switch st.PlatformState {
	case "", searchattr.PlatformPaused, searchattr.PlatformBreakerOpen:
	default:
		state = st.PlatformState + ", " + state
	}
	if r := st.StatedRate; r > 0 && (st.Settings.RateLimit.RPS == 0 || r < st.Settings.RateLimit.RPS) {
		// Paced below the setting: the platform's own statement rules.
		state += fmt.Sprintf("; platform states %g req/s", r)
	}
	if pc := st.Pacing; pc != nil {
		state += "; " + describePacing(pc)
	}
	if st.AlertsPending > 0 {
		state += fmt.Sprintf("; %d alert(s) not delivered", st.AlertsPending)
	}
	return state
}

// describePacing says, for a platform with webhook_interval, which
// interval the cursor polls at and why (hybrid pacing, docs/webhooks.md).
func describePacing(pc *api.Pacing) string {
	const stamp = "01-02 15:04:05Z"
	why := pc.Reason
	switch {
	case pc.Live:
		why = "webhooks live, last event " + pc.LastEventAt.UTC().Format(stamp)
	case pc.CheckedAt.IsZero():
	case pc.LastEventAt.IsZero():
		why = "webhooks not live: no event yet"
	case pc.LiveFor != "":
		if d, err := time.ParseDuration(pc.LiveFor); err == nil {
			why = "webhooks not live since " + pc.LastEventAt.Add(d).UTC().Format(stamp)
		}
	}
	return "polling every " + pc.Interval + " (" + why + ")"
}

func describeWait(st *api.CursorStatus) string {
	if st.Waiting == "" {
		return "fetching" // cursors of v0.1 left some waits unnamed
	}
	if !st.WaitUntil.IsZero() {
		return fmt.Sprintf("%s until %s", st.Waiting, st.WaitUntil.UTC().Format("01-02 15:04:05Z"))
	}
	return st.Waiting
}
