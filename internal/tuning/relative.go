package tuning

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDays reads a duration as time.ParseDuration does, and also accepts
// days ("2d", "-1d12h", "1.5d"): operators think of backfills and
// retentions in days. A day is 24 hours here (no calendar, no DST).
//
// It is for the edges (CLI flags). ParseStart, which workflow code replays
// through CheckStructure, keeps Go's units so validation of recorded
// settings cannot change.
func ParseDays(s string) (time.Duration, error) {
	in := s
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || n < 0 || s[:i] == "" || strings.ContainsAny(s[:i], "eE+-") || n > 100000 {
			return 0, fmt.Errorf("%q is not a duration like 2d, 36h or -1d12h", in)
		}
		days = time.Duration(n * float64(24*time.Hour))
		s = s[i+1:]
	}
	var rest time.Duration
	if s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
			return 0, fmt.Errorf("%q is not a duration like 2d, 36h or -1d12h", in)
		}
		rest = d
	} else if days == 0 && !strings.HasSuffix(in, "d") {
		return 0, fmt.Errorf("%q is not a duration like 2d, 36h or -1d12h", in)
	}
	d := days + rest
	if neg {
		d = -d
	}
	return d, nil
}
