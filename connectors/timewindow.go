package connectors

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/textclip"
)

// Time windows and timestamps: a window's bounds at a platform's
// precision, and times in the formats platforms write them.

// checkWindow rejects an empty or reversed window before any request.
func checkWindow(platform string, req PageRequest) error {
	if !req.From.Before(req.To) {
		return &PermanentError{Platform: platform, Msg: fmt.Sprintf("empty window [%s, %s)", req.From.Format(time.RFC3339Nano), req.To.Format(time.RFC3339Nano))}
	}
	return nil
}

// ceilTime rounds t up to a multiple of unit (a platform's timestamp precision).
func ceilTime(t time.Time, unit time.Duration) time.Time {
	if r := t.Truncate(unit); !r.Equal(t) {
		return r.Add(unit)
	}
	return t
}

// lastInstantBefore is the last instant of precision unit before to: the
// inclusive upper bound that selects exactly the times before to.
func lastInstantBefore(to time.Time, unit time.Duration) time.Time {
	return ceilTime(to, unit).Add(-unit)
}

// timePrecision is the smallest step a time format can express.
func timePrecision(format string) time.Duration {
	switch format {
	case "rfc3339nano":
		return time.Nanosecond
	case "unix_ms":
		return time.Millisecond
	case "rfc3339", "unix":
		return time.Second
	}
	for _, frac := range []struct {
		s string
		d time.Duration
	}{{".000000000", time.Nanosecond}, {".000000", time.Microsecond}, {".000", time.Millisecond}} {
		if strings.Contains(format, frac.s) {
			return frac.d
		}
	}
	return time.Second
}

// formatTime writes t (in UTC) in a named format or Go layout.
func formatTime(format string, t time.Time) string {
	t = t.UTC()
	switch format {
	case "rfc3339", "":
		return t.Format(time.RFC3339)
	case "rfc3339nano":
		return t.Format(time.RFC3339Nano)
	case "unix":
		return strconv.FormatInt(t.Unix(), 10)
	case "unix_ms":
		return strconv.FormatInt(t.UnixMilli(), 10)
	}
	return t.Format(format)
}

// parseTime reads a time in a named format or Go layout, as UTC. RFC 3339
// accepts fractions either way; unix formats accept numbers and strings; a
// layout without a zone is taken as UTC.
func parseTime(format string, v any) (time.Time, error) {
	s, ok := scalarText(v)
	if !ok {
		return time.Time{}, fmt.Errorf("%s is not a time", showJSON(v))
	}
	var t time.Time
	var err error
	switch format {
	case "rfc3339", "rfc3339nano", "":
		t, err = time.Parse(time.RFC3339Nano, s)
	case "unix", "unix_ms":
		var n int64
		if n, err = strconv.ParseInt(s, 10, 64); err == nil {
			t = time.Unix(n, 0)
			if format == "unix_ms" {
				t = time.UnixMilli(n)
			}
		}
	default:
		t, err = time.Parse(format, s)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a time in format %s", textclip.Value(s), format)
	}
	return t.UTC(), nil
}
