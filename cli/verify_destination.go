package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/store"
)

// DefaultDeliverySettle is how old an accepted change must be before
// `verify --destination` expects it delivered: a healthy destination is
// seconds behind the feed, so a change still pending after this is late.
const DefaultDeliverySettle = time.Minute

// destinationVerifyReport is delivered vs accepted for one destination.
type destinationVerifyReport struct {
	Destination string `json:"destination"`
	// Running: its Delivery workflow answered. Without it, Acked is the
	// store's record of the destination (AckedFrom "store"), which trails
	// the workflow's by up to a batch, and nothing is known as set aside.
	Running   bool   `json:"running"`
	State     string `json:"state"`
	Acked     int64  `json:"acked"`
	AckedFrom string `json:"acked_from"`
	Head      int64  `json:"head"`
	// Until is the cutoff: changes the store accepted before it must be
	// delivered or set aside.
	Until     time.Time                  `json:"until"`
	Platforms []destinationPlatformCount `json:"platforms"`
	Total     destinationPlatformCount   `json:"total"`
	Poison    []api.PoisonChange         `json:"poison,omitempty"`
	// Skipped counts set-aside changes an operator dropped; they count
	// as delivered (they are at or below Acked and no longer set aside).
	Skipped   int64  `json:"skipped"`
	LastError string `json:"last_error,omitempty"`
	OK        bool   `json:"ok"`
}

// destinationPlatformCount counts one platform's retained changes up to
// the feed's head, as the destination stands.
type destinationPlatformCount struct {
	Platform string `json:"platform"`
	// Accepted = Delivered + Poison + Pending.
	Accepted  int64 `json:"accepted"`
	Delivered int64 `json:"delivered"`
	Poison    int64 `json:"poison"`
	Pending   int64 `json:"pending"`
	// Overdue are the pending changes accepted before the cutoff.
	Overdue int64 `json:"overdue"`
}

// otherPlatforms names the changes of platforms no longer in the file
// that a destination without a platforms list still delivers.
const otherPlatforms = "(other)"

// compactedPoison names set-aside changes compaction has removed since.
const compactedPoison = "(compacted)"

// verifyDestination reports delivered vs accepted for one destination and
// fails (exit 1) when a change accepted before the cutoff is neither
// delivered nor set aside.
func (a *App) verifyDestination(ctx context.Context, name, until string, settle time.Duration) error {
	f, err := a.loadPlatformsIfAny()
	if err != nil {
		return err
	}
	if f == nil {
		f = &config.File{}
	}
	// The registry's settings, or the file's for one not registered yet.
	dests, err := a.selectDestinations(ctx, []string{name})
	if err != nil {
		return err
	}
	d := dests[0].Destination
	if settle < 0 {
		return Usage(fmt.Errorf("--settle %s: must not be negative", settle))
	}
	now := time.Now().UTC()
	cutoff := deliveryCutoff(d, now, settle)
	if until != "" {
		if cutoff, err = parseTime("until", until, now); err != nil {
			return err
		}
	}
	c, err := a.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := store.Open(ctx, a.Process.StoreDSN)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	r, err := buildDestinationVerify(ctx, c, st, d, f.Names(), cutoff)
	if err != nil {
		return err
	}
	if a.Output == "json" {
		if err := writeJSON(a, r); err != nil {
			return err
		}
	} else if err := printDestinationVerify(a, r); err != nil {
		return err
	}
	if !r.OK {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %d changes accepted before %s are neither delivered nor set aside (%s, acked seq %d)",
			r.Destination, r.Total.Overdue, r.Until.Format(time.RFC3339), r.State, r.Acked)}
	}
	return nil
}

// deliveryCutoff is now minus settle; for a destination with work windows
// that are closed now, the end of the last open period minus settle, since
// nothing accepted after it can have been delivered.
func deliveryCutoff(d config.Destination, now time.Time, settle time.Duration) time.Time {
	cutoff := now.Add(-settle)
	ws, err := config.ParseWindows(d.Windows)
	if err != nil || len(ws) == 0 || ws.OpenAt(now) {
		return cutoff
	}
	// Windows are whole minutes: step back to the last open minute, at most
	// a week and a day (every window recurs weekly).
	for t := now.Truncate(time.Minute); now.Sub(t) <= 8*24*time.Hour; t = t.Add(-time.Minute) {
		if ws.OpenAt(t) {
			if closed := t.Add(time.Minute).Add(-settle); closed.Before(cutoff) {
				return closed
			}
			return cutoff
		}
	}
	return cutoff
}

func buildDestinationVerify(ctx context.Context, c client.Client, st store.Store, d config.Destination, filePlatforms []string, cutoff time.Time) (destinationVerifyReport, error) {
	r := destinationVerifyReport{Destination: d.Name, Until: cutoff, AckedFrom: "workflow"}
	status, running, err := deliveryStatus(ctx, c, d.Name)
	if err != nil {
		return r, err
	}
	r.Running = running
	if running {
		r.Acked, r.Poison, r.Skipped, r.LastError = status.State.Acked, status.State.Poison, status.State.Counts.Skipped, status.State.LastError
		r.State = deliveryReport{Running: true, Status: &status}.state()
	} else {
		acks, err := st.Acks(ctx)
		if err != nil {
			return r, err
		}
		r.Acked, r.AckedFrom, r.State = acks[d.Name], "store", "not running"
	}
	// Read after the acknowledged seq, so nothing counts as delivered that
	// the head does not hold.
	head, err := st.Head(ctx)
	if err != nil {
		return r, err
	}
	r.Head = head.LastSeq

	poisonBy, err := poisonPlatforms(ctx, st, r.Poison)
	if err != nil {
		return r, err
	}
	platforms := d.Platforms
	if len(platforms) == 0 {
		platforms = append(slices.Clone(filePlatforms), otherPlatforms)
	}
	var listed destinationPlatformCount
	for _, p := range platforms {
		var n destinationPlatformCount
		if p == otherPlatforms {
			if n, err = countDestination(ctx, st, "", r.Acked, r.Head, cutoff); err != nil {
				return r, err
			}
			n.Accepted, n.Pending, n.Overdue = n.Accepted-listed.Accepted, n.Pending-listed.Pending, n.Overdue-listed.Overdue
		} else if n, err = countDestination(ctx, st, p, r.Acked, r.Head, cutoff); err != nil {
			return r, err
		}
		n.Platform = p
		n.Poison = poisonBy[p]
		if p == otherPlatforms {
			for q, k := range poisonBy {
				if q != compactedPoison && !slices.Contains(platforms, q) {
					n.Poison += k
				}
			}
		}
		n.Delivered = n.Accepted - n.Pending - n.Poison
		if p == otherPlatforms && n.Accepted == 0 {
			continue
		}
		listed.Accepted, listed.Pending, listed.Overdue = listed.Accepted+n.Accepted, listed.Pending+n.Pending, listed.Overdue+n.Overdue
		r.Platforms = append(r.Platforms, n)
	}
	r.Total.Platform = "total"
	for _, n := range r.Platforms {
		r.Total.Accepted += n.Accepted
		r.Total.Delivered += n.Delivered
		r.Total.Poison += n.Poison
		r.Total.Pending += n.Pending
		r.Total.Overdue += n.Overdue
	}
	r.OK = r.Total.Overdue == 0
	return r, nil
}

func countDestination(ctx context.Context, st store.Store, platform string, acked, head int64, cutoff time.Time) (destinationPlatformCount, error) {
	var n destinationPlatformCount
	var err error
	if n.Accepted, err = st.CountChanges(ctx, platform, 0, head); err != nil {
		return n, err
	}
	if n.Pending, err = st.CountChanges(ctx, platform, acked, head); err != nil {
		return n, err
	}
	if n.Overdue, err = st.CountChangesCommittedBefore(ctx, platform, acked, cutoff); err != nil {
		return n, err
	}
	// A change committed after the head was read is not counted above.
	n.Overdue = min(n.Overdue, n.Pending)
	return n, nil
}

// poisonPlatforms counts the set-aside changes per platform, reading each
// from the feed (compacted ones count under compactedPoison).
func poisonPlatforms(ctx context.Context, st store.Store, poison []api.PoisonChange) (map[string]int64, error) {
	out := map[string]int64{}
	for _, p := range poison {
		cs, err := st.Changes(ctx, store.ChangeQuery{After: p.Seq - 1, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(cs) == 0 || cs[0].Seq != p.Seq {
			out[compactedPoison]++
			continue
		}
		out[cs[0].Platform]++
	}
	return out, nil
}

func printDestinationVerify(a *App, r destinationVerifyReport) error {
	source := "delivery/" + r.Destination
	if !r.Running {
		source = "the store's record; delivery/" + r.Destination + " is not running"
	}
	fmt.Fprintf(a.Out, "%s: acked seq %d (%s, %s), feed head %d; changes accepted before %s must be delivered or set aside\n",
		r.Destination, r.Acked, source, r.State, r.Head, r.Until.Format(time.RFC3339))
	tw := tabwriter.NewWriter(a.Out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PLATFORM\tACCEPTED\tDELIVERED\tSET ASIDE\tPENDING\tOVERDUE\t")
	for _, n := range append(slices.Clone(r.Platforms), r.Total) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", n.Platform, n.Accepted, n.Delivered, n.Poison, n.Pending, n.Overdue)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for i, p := range r.Poison {
		if i == 20 {
			fmt.Fprintf(a.Out, "  ... and %d more set aside (all of them with -o json)\n", len(r.Poison)-i)
			break
		}
		fmt.Fprintf(a.Out, "  set aside  seq %d: %s (ordersync deliveries retry %s --seq %d)\n", p.Seq, clipText(p.Reason, 200), term(r.Destination), p.Seq)
	}
	if r.LastError != "" {
		fmt.Fprintf(a.Out, "  last error: %s\n", clipText(r.LastError, 200))
	}
	return nil
}

func joinOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
