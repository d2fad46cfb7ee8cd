package connectors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
)

// Shared HTTP plumbing for the HTTP connectors: one way to build a client,
// to classify what went wrong, and to decode JSON with byte offsets.

// MaxResponseBody bounds a response body so a broken or hostile platform
// cannot exhaust a worker's memory.
const MaxResponseBody = 64 << 20

// UserAgent identifies ordersync to platforms.
const UserAgent = "ordersync (+https://github.com/ordersync/ordersync)"

// DefaultTimeout applies when a platform has no timeout configured.
const DefaultTimeout = 30 * time.Second

// NewHTTPClient returns a resty client for a platform: p.Timeout bounds each
// whole request (body included); resty's own retries are off because
// Temporal retries activities; redirects stay within the request's origin
// (see origin.go); nothing is logged, since headers carry secrets and bodies
// carry personal data. The caller adds authentication.
func NewHTTPClient(p config.Platform) *resty.Client {
	timeout := p.Timeout.D()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return resty.New().
		SetTimeout(timeout).
		SetRetryCount(0).
		SetDebug(false).
		SetDisableWarn(true).
		SetLogger(silentLogger{}).
		SetRedirectPolicy(sameOriginRedirects(p.Name)).
		SetResponseBodyLimit(MaxResponseBody).
		SetHeader("User-Agent", UserAgent).
		SetHeader("Accept", "application/json")
}

type silentLogger struct{}

func (silentLogger) Errorf(string, ...any) {}
func (silentLogger) Warnf(string, ...any)  {}
func (silentLogger) Debugf(string, ...any) {}

// TransportError classifies a request that got no HTTP status: timeouts,
// refused or dropped connections and cancellations are transient; a body
// over MaxResponseBody and a refused redirect are permanent (retrying
// meets the same body or redirect).
func TransportError(platform string, err error) error {
	if refused := refusedRedirect(err); refused != nil {
		return refused
	}
	if errors.Is(err, resty.ErrResponseBodyTooLarge) {
		return &PermanentError{Platform: platform, Msg: fmt.Sprintf("response body larger than %d bytes; lower page_size", MaxResponseBody)}
	}
	msg := "request failed"
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		msg = "request canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		msg = "request timed out"
	}
	return &TransientError{Platform: platform, Msg: msg, Err: err}
}

// StatusError classifies a response by status: nil for 2xx; 429 is a
// RateLimitError (Retry-After honoured); 5xx and 408 are transient; any
// other status is permanent, carrying the platform's own message.
func StatusError(platform string, resp *resty.Response) error {
	code := resp.StatusCode()
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests:
		return &RateLimitError{
			Platform:   platform,
			RetryAfter: ParseRetryAfter(resp.Header().Get("Retry-After"), time.Now()),
			Limit:      HeaderFloat(resp.Header(), "X-RateLimit-Limit"),
		}
	case code >= 500 || code == http.StatusRequestTimeout:
		return &TransientError{Platform: platform, Msg: fmt.Sprintf("HTTP %d: %s", code, ErrorMessage(code, resp.Body()))}
	}
	return &PermanentError{Platform: platform, Status: code, Msg: ErrorMessage(code, resp.Body())}
}

// ParseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date
// (RFC 9110 10.2.3), as a wait from now. Unknown or past values give 0.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs != secs {
			return 0
		}
		return time.Duration(min(secs, 1e9) * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// HeaderFloat reads a numeric header such as X-RateLimit-Limit; 0 if absent or not a number.
func HeaderFloat(h http.Header, name string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(h.Get(name)), 64)
	if err != nil || f < 0 || f != f {
		return 0
	}
	return f
}

// ErrorMessage extracts a platform's error message from a response body.
// It understands the common JSON shapes ({"error": ...}, {"message": ...},
// {"errors": [{"code","message"}]}, {"errors": {"field": [...]}}, OAuth's
// error_description) and falls back to the text, clipped, or the status text.
func ErrorMessage(status int, body []byte) string {
	var v any
	if json.Unmarshal(body, &v) == nil {
		if m := messageFrom(v, 0); m != "" {
			return clip(m)
		}
	}
	if t := strings.TrimSpace(string(body)); t != "" && !strings.HasPrefix(t, "<") {
		return clip(t)
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "HTTP " + strconv.Itoa(status)
}

func messageFrom(v any, depth int) string {
	if depth > 4 {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			if m := messageFrom(e, depth+1); m != "" {
				parts = append(parts, m)
			}
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		for _, k := range []string{"error_description", "message", "longMessage", "error", "errors", "detail", "title"} {
			if m := messageFrom(x[k], depth+1); m != "" {
				if code, ok := x["code"].(string); ok && code != "" && k != "error" {
					return code + ": " + m
				}
				return m
			}
		}
		if depth == 0 {
			return "" // a top-level object without a message field
		}
		keys := make([]string, 0, len(x)) // e.g. Shopify's {"errors": {"field": ["reason"]}}
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			if m := messageFrom(x[k], depth+1); m != "" {
				parts = append(parts, k+": "+m)
			}
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

// clip keeps error messages one short printable line.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return strings.TrimSpace(s)
}

// DecodeJSON unmarshals body into v. A syntax or type error becomes a
// MalformedError with the byte offset where parsing failed.
func DecodeJSON(platform string, page int, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &MalformedError{Platform: platform, Page: page, Offset: JSONErrorOffset(err, len(body)), Err: err}
	}
	return nil
}

// JSONErrorOffset is the byte offset a JSON error points at; bodyLen for a
// truncated body, -1 if unknown.
func JSONErrorOffset(err error, bodyLen int) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return int64(bodyLen)
	}
	return -1
}

// JSONItem is one element of a JSON array and where it starts in the body.
type JSONItem struct {
	Offset int64
	Raw    json.RawMessage
}

// DecodeArrayField returns the elements of the array under key field of a
// JSON object body, each with its byte offset, so a connector can report
// which order of a page is broken and where. A null field gives no elements;
// a missing field or any other shape is a MalformedError.
func DecodeArrayField(platform string, page int, body []byte, field string) ([]JSONItem, error) {
	return DecodeArrayPath(platform, page, body, []string{field})
}

// DecodeArrayPath is DecodeArrayField for an array nested in objects
// (path data, orders for {"data":{"orders":[...]}}); an empty path means the
// body itself is the array (WooCommerce).
func DecodeArrayPath(platform string, page int, body []byte, path []string) ([]JSONItem, error) {
	bad := func(off int64, err error) error {
		return &MalformedError{Platform: platform, Page: page, Offset: off, Err: err}
	}
	fail := func(err error) error { return bad(JSONErrorOffset(err, len(body)), err) }
	if !json.Valid(body) { // Unmarshal reports the exact offset; the Decoder only the value's start
		var v json.RawMessage
		return nil, fail(json.Unmarshal(body, &v))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for depth := 0; ; depth++ {
		at := skipSeparators(body, dec.InputOffset())
		t, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		name := strings.Join(path[:depth], ".")
		switch {
		case depth == len(path) && t == nil:
			return nil, nil
		case depth == len(path) && t != json.Delim('['):
			if depth == 0 {
				return nil, bad(0, errors.New("body is not a JSON array"))
			}
			return nil, bad(at, fmt.Errorf("field %q is not an array", name))
		case depth == len(path):
			return decodeItems(dec, body, fail)
		case t == nil:
			return nil, bad(-1, fmt.Errorf("field %q is missing", strings.Join(path, ".")))
		case t != json.Delim('{') && depth == 0:
			return nil, bad(0, errors.New("body is not a JSON object"))
		case t != json.Delim('{'):
			return nil, bad(at, fmt.Errorf("field %q is not an object", name))
		}
		if !seekKey(dec, path[depth]) {
			return nil, bad(-1, fmt.Errorf("field %q is missing", strings.Join(path, ".")))
		}
	}
}

// seekKey reads an object's members up to key, leaving the decoder at its
// value; false if the object has no such key. The body is valid JSON.
func seekKey(dec *json.Decoder, key string) bool {
	for dec.More() {
		t, err := dec.Token()
		if k, _ := t.(string); err != nil || k == key {
			return err == nil
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

func decodeItems(dec *json.Decoder, body []byte, fail func(error) error) ([]JSONItem, error) {
	var items []JSONItem
	for dec.More() {
		off := skipSeparators(body, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fail(err)
		}
		items = append(items, JSONItem{Offset: off, Raw: raw})
	}
	return items, nil
}

// skipSeparators moves an offset past whitespace, commas and colons, onto the next value.
func skipSeparators(body []byte, off int64) int64 {
	for off < int64(len(body)) {
		switch body[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// ValidDecimal reports whether s is a plain decimal number such as "12",
// "-3.50" or "0.125": what money amounts look like, with no exponent, so
// they can be stored exactly and never pass through a float.
func ValidDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasDot := strings.Cut(s, ".")
	return allDigits(intPart) && (!hasDot || allDigits(frac))
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// AuthError is a rejected credential (401/403): permanent, with the
// platform's message and the credential reference to fix, never the secret.
func AuthError(platform string, cred config.CredentialRef, status int, msg string) *PermanentError {
	return &PermanentError{Platform: platform, Status: status,
		Msg: fmt.Sprintf("authentication failed: %s (check the credentials in %s)", msg, cred)}
}

// ResponseError classifies a response like StatusError, with 401/403 as an
// AuthError and a 429's rate read from limitHeader (default X-RateLimit-Limit).
func ResponseError(platform string, cred config.CredentialRef, resp *resty.Response, limitHeader string) error {
	if limitHeader == "" {
		limitHeader = "X-RateLimit-Limit"
	}
	switch code := resp.StatusCode(); code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return AuthError(platform, cred, code, ErrorMessage(code, resp.Body()))
	case http.StatusTooManyRequests:
		return RateLimited(platform, resp.Header(), "Retry-After", limitHeader)
	}
	return StatusError(platform, resp)
}

// maxDerivedWait caps the wait RateLimited derives from a reported rate.
const maxDerivedWait = 5 * time.Minute

// RateLimited builds a RateLimitError from response headers. When the
// platform reports its rate but no Retry-After (SP-API), the wait is one
// request's worth, 1/rate (60 s at 0.0167/s), at most maxDerivedWait.
func RateLimited(platform string, h http.Header, retryAfterHeader, limitHeader string) *RateLimitError {
	rl := &RateLimitError{Platform: platform, RetryAfter: ParseRetryAfter(h.Get(retryAfterHeader), time.Now()), Limit: HeaderFloat(h, limitHeader)}
	if rl.RetryAfter == 0 && rl.Limit > 0 {
		rl.RetryAfter = min(time.Duration(float64(time.Second)/rl.Limit), maxDerivedWait)
	}
	return rl
}

// DecodeItems turns each JSON item into an Order with convert, so every
// connector reports a bad order the same way: platform, page, index, offset.
func DecodeItems[T any](platform string, page int, items []JSONItem, convert func(T, json.RawMessage) (Order, error)) ([]Order, error) {
	orders := make([]Order, 0, len(items))
	for i, it := range items {
		var v T
		err := describeFieldError(json.Unmarshal(it.Raw, &v))
		var o Order
		if err == nil {
			o, err = convert(v, it.Raw)
		}
		if err != nil {
			return nil, ItemError(platform, page, i, it, err)
		}
		orders = append(orders, o)
	}
	return orders, nil
}
