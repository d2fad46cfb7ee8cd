package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/ordersync/ordersync/internal/tuning"
	"github.com/ordersync/ordersync/store"
)

// dayDuration is a duration flag that also takes days ("7d", "1d12h"), as
// the time flags do (--from -2d).
type dayDuration struct{ p *time.Duration }

func (d dayDuration) String() string { return d.p.String() }
func (d dayDuration) Type() string   { return "duration" }
func (d dayDuration) Set(s string) error {
	v, err := tuning.ParseDays(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// durationDaysVar registers a duration flag that accepts day units.
func durationDaysVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(dayDuration{p}, name, usage)
}

// sinceSpec is `changes --since`: a sequence number, or a time (RFC3339 or
// relative to now) that names the first change committed at or after it.
type sinceSpec struct {
	seq  int64
	at   time.Time
	time bool
}

func parseSince(v string, now time.Time) (sinceSpec, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return sinceSpec{}, Usage(fmt.Errorf("--since %d: a sequence number is 0 or more (for a time relative to now give a unit: -2h, -2d)", n))
		}
		return sinceSpec{seq: n}, nil
	}
	t, err := parseTime("since", v, now)
	if err != nil {
		return sinceSpec{}, Usage(fmt.Errorf("--since %q: want a sequence number (1200), an RFC3339 time (2026-11-20T00:00:00Z) or a negative duration (-6h, -2d)", clipText(v, 60)))
	}
	return sinceSpec{at: t, time: true}, nil
}

// seqBefore finds the feed position just before the first change committed
// at or after t, by bisection over sequence numbers: each probe reads one
// change's keys by Seq (an index seek), so it costs about log2(last seq)
// reads, not a scan. Sequence numbers follow commit order; the commit
// stamps of changes committed concurrently may be out of order by the
// length of a transaction, so around t a change or two may be printed that
// was stamped just before t. The sequence number stays the exact way to
// resume.
func seqBefore(ctx context.Context, f store.Feed, t time.Time) (int64, error) {
	head, err := f.Head(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the change feed's head: %w", err)
	}
	// atOrAfter reports whether the first change after seq was committed
	// at or after t (or there is none).
	atOrAfter := func(seq int64) (bool, error) {
		page, err := f.Changes(ctx, store.ChangeQuery{After: seq, Limit: 1, KeysOnly: true})
		if err != nil {
			return false, fmt.Errorf("read the change feed after %d: %w", seq, err)
		}
		return len(page) == 0 || !page[0].CommittedAt.Before(t), nil
	}
	lo, hi := int64(0), head.LastSeq // atOrAfter(hi) holds: nothing follows the head
	if ok, err := atOrAfter(lo); err != nil || ok {
		return 0, err
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := atOrAfter(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// parseRange reads --from and --to (as parseTime does) and requires from
// to come before to.
func parseRange(from, to string, now time.Time) (time.Time, time.Time, error) {
	fromT, err := parseTime("from", from, now)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	toT, err := parseTime("to", to, now)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	if !fromT.Before(toT) {
		return time.Time{}, time.Time{}, Usage(fmt.Errorf("--from %s is not before --to %s", fromT.Format(time.RFC3339), toT.Format(time.RFC3339)))
	}
	return fromT, toT, nil
}
