package tuning

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is one allowed pull period, parsed from "MON-FRI 00:00-06:00 Europe/Berlin".
// Days are MON..SUN as a range, a comma list or both ("MON-WED,FRI"), or "*"
// for every day; the zone is optional (UTC). An end at or before the start
// runs past midnight ("FRI 22:00-02:00" ends Saturday 02:00); "24:00" is the
// end of the day.
type Window struct {
	Days  [7]bool // indexed by time.Weekday
	Start int     // minutes after midnight
	End   int     // minutes after midnight, 1..1440
	Zone  *time.Location
}

// Windows is a platform's set of windows. An empty set means always open.
type Windows []Window

var weekdays = map[string]time.Weekday{
	"SUN": time.Sunday, "MON": time.Monday, "TUE": time.Tuesday, "WED": time.Wednesday,
	"THU": time.Thursday, "FRI": time.Friday, "SAT": time.Saturday,
}

// ParseWindows parses every spec; the error names the first bad one.
func ParseWindows(specs []string) (Windows, error) {
	out := make(Windows, 0, len(specs))
	for _, s := range specs {
		w, err := ParseWindow(s)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// ParseWindow parses one window spec.
func ParseWindow(spec string) (Window, error) {
	var w Window
	fields := strings.Fields(spec)
	if len(fields) < 2 || len(fields) > 3 {
		return w, fmt.Errorf("%q: want \"DAYS HH:MM-HH:MM [Zone]\", e.g. \"MON-FRI 00:00-06:00 Europe/Berlin\"", spec)
	}
	if err := parseDays(fields[0], &w.Days); err != nil {
		return w, fmt.Errorf("%q: %w", spec, err)
	}
	from, to, ok := strings.Cut(fields[1], "-")
	if !ok {
		return w, fmt.Errorf("%q: time range %q must look like 00:00-06:00", spec, fields[1])
	}
	var err error
	if w.Start, err = parseClock(from, false); err != nil {
		return w, fmt.Errorf("%q: %w", spec, err)
	}
	if w.End, err = parseClock(to, true); err != nil {
		return w, fmt.Errorf("%q: %w", spec, err)
	}
	if w.Start == w.End%1440 && w.End != 1440 && w.Start != 0 {
		return w, fmt.Errorf("%q: window is empty (start equals end)", spec)
	}
	w.Zone = time.UTC
	if len(fields) == 3 {
		if w.Zone, err = time.LoadLocation(fields[2]); err != nil {
			return w, fmt.Errorf("%q: unknown time zone %q", spec, fields[2])
		}
	}
	return w, nil
}

func parseDays(s string, days *[7]bool) error {
	if s == "*" || strings.EqualFold(s, "DAILY") {
		for i := range days {
			days[i] = true
		}
		return nil
	}
	for _, part := range strings.Split(strings.ToUpper(s), ",") {
		a, b, isRange := strings.Cut(part, "-")
		from, ok := weekdays[a]
		if !ok {
			return fmt.Errorf("unknown day %q (use MON..SUN)", a)
		}
		to := from
		if isRange {
			if to, ok = weekdays[b]; !ok {
				return fmt.Errorf("unknown day %q (use MON..SUN)", b)
			}
		}
		for d := from; ; d = (d + 1) % 7 {
			days[d] = true
			if d == to {
				break
			}
		}
	}
	return nil
}

func parseClock(s string, isEnd bool) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || mm < 0 || mm > 59 || hh < 0 || hh > 24 || (hh == 24 && (mm != 0 || !isEnd)) {
		return 0, fmt.Errorf("time %q must be HH:MM between 00:00 and 24:00", s)
	}
	return hh*60 + mm, nil
}

// intervals lists this window's concrete periods that could touch t.
func (w Window) intervals(t time.Time) [][2]time.Time {
	local := t.In(w.Zone)
	y, mo, d := local.Date()
	var out [][2]time.Time
	for off := -1; off <= 7; off++ {
		day := time.Date(y, mo, d+off, 0, 0, 0, 0, w.Zone)
		if !w.Days[day.Weekday()] {
			continue
		}
		start := day.Add(time.Duration(w.Start) * time.Minute)
		endDay := day
		if w.End <= w.Start {
			endDay = time.Date(y, mo, d+off+1, 0, 0, 0, 0, w.Zone)
		}
		end := endDay.Add(time.Duration(w.End) * time.Minute)
		out = append(out, [2]time.Time{start, end})
	}
	return out
}

// OpenAt reports whether t falls inside a window. No windows: always open.
func (ws Windows) OpenAt(t time.Time) bool {
	if len(ws) == 0 {
		return true
	}
	for _, w := range ws {
		for _, iv := range w.intervals(t) {
			if !t.Before(iv[0]) && t.Before(iv[1]) {
				return true
			}
		}
	}
	return false
}

// NextOpen returns t when a window is open at t, else the next moment one
// opens (zero time if none opens within a week, which cannot happen for a
// valid non-empty set).
func (ws Windows) NextOpen(t time.Time) time.Time {
	if ws.OpenAt(t) {
		return t
	}
	var best time.Time
	for _, w := range ws {
		for _, iv := range w.intervals(t) {
			if iv[0].After(t) && (best.IsZero() || iv[0].Before(best)) {
				best = iv[0]
			}
		}
	}
	return best.UTC()
}

// ClosesAt returns when the open period containing t ends, following
// windows that touch or overlap, looking at most a week ahead (windows open
// around the clock report t plus about a week); zero when no windows are
// configured or t is outside every window.
func (ws Windows) ClosesAt(t time.Time) time.Time {
	if len(ws) == 0 || !ws.OpenAt(t) {
		return time.Time{}
	}
	end, horizon := t, t.Add(7*24*time.Hour)
	for moved := true; moved && end.Before(horizon); {
		moved = false
		for _, w := range ws {
			for _, iv := range w.intervals(end) {
				if !end.Before(iv[0]) && end.Before(iv[1]) {
					end, moved = iv[1], true
				}
			}
		}
	}
	return end.UTC()
}
