package connectors

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync/config"
)

// Helpers the declarative http kind shares with the platform connectors:
// window bounds at a platform's timestamp precision, time formats, order
// errors and lookups in decoded JSON.

// CeilTime rounds t up to a multiple of unit (a platform's timestamp precision).
func CeilTime(t time.Time, unit time.Duration) time.Time {
	if r := t.Truncate(unit); !r.Equal(t) {
		return r.Add(unit)
	}
	return t
}

// LastInstantBefore is the last instant of precision unit before to: the
// inclusive upper bound that selects exactly the times before to.
func LastInstantBefore(to time.Time, unit time.Duration) time.Time {
	return CeilTime(to, unit).Add(-unit)
}

// CheckWindow rejects an empty or reversed window before any request.
func CheckWindow(platform string, req PageRequest) error {
	if !req.From.Before(req.To) {
		return &PermanentError{Platform: platform, Msg: fmt.Sprintf("empty window [%s, %s)", req.From.Format(time.RFC3339Nano), req.To.Format(time.RFC3339Nano))}
	}
	return nil
}

// ItemError is a MalformedError for one order of a page: the offset points
// into the body where the order (or, for a JSON error, the bad byte) is.
func ItemError(platform string, page, index int, it JSONItem, err error) *MalformedError {
	off := it.Offset
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		off += JSONErrorOffset(err, len(it.Raw))
	}
	return &MalformedError{Platform: platform, Page: page, Offset: off, Err: fmt.Errorf("order %d: %w", index, err)}
}

// decodeObject decodes one JSON object keeping numbers as json.Number, so
// ids and amounts keep their literal text.
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// lookup follows a dot-separated path through nested objects.
func lookup(v any, path string) (any, bool) {
	if path == "" || path == "." {
		return v, true
	}
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// scalarText is a JSON scalar as text: a string as is, a number as written.
// ok is false for null, objects and arrays.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
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
		return time.Time{}, fmt.Errorf("%q is not a time in format %s", s, format)
	}
	return t.UTC(), nil
}

func showJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// httpEndpoint checks p.Endpoint and returns it without a trailing slash.
func httpEndpoint(p config.Platform) (string, error) {
	u, err := url.Parse(p.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &PermanentError{Platform: p.Name, Msg: fmt.Sprintf("endpoint %q is not an http(s) URL", p.Endpoint)}
	}
	return strings.TrimRight(p.Endpoint, "/"), nil
}

// pageSize is the request's page size, else the platform's.
func pageSize(req PageRequest, platformSize int) int {
	if req.PageSize > 0 {
		return req.PageSize
	}
	return platformSize
}

// asTransportError passes classified errors (a failed token refresh) through,
// a refused redirect without the request URL around it, and classifies the
// rest as TransportError does.
func asTransportError(platform string, err error) error {
	if refused := refusedRedirect(err); refused != nil {
		return refused
	}
	var rl *RateLimitError
	var te *TransientError
	var pe *PermanentError
	var me *MalformedError
	if errors.As(err, &rl) || errors.As(err, &te) || errors.As(err, &pe) || errors.As(err, &me) {
		return err
	}
	return TransportError(platform, err)
}

// NextLink returns the target of the rel="next" entry of RFC 8288 Link
// headers (Shopify's page_info pagination), or "". Targets may hold commas.
func NextLink(h http.Header) string {
	for _, line := range h.Values("Link") {
		for rest := line; ; {
			start, end := strings.IndexByte(rest, '<'), strings.IndexByte(rest, '>')
			if start < 0 || end < start {
				break
			}
			target, params := rest[start+1:end], rest[end+1:]
			rest = params
			if next := strings.IndexByte(params, '<'); next >= 0 {
				params = params[:next]
			}
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(strings.Trim(strings.TrimSpace(p), ", "), "=")
				if strings.EqualFold(strings.TrimSpace(k), "rel") && slices.Contains(strings.Fields(strings.ToLower(strings.Trim(v, `"`))), "next") {
					return target
				}
			}
		}
	}
	return ""
}
