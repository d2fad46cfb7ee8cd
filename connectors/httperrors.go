package connectors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"

	"github.com/ordersync/ordersync/internal/textclip"
)

// Classifying what went wrong with a request, the same way for every HTTP
// kind: no response (transportError), a status (statusError,
// responseError), a rate limit's wait (rateLimited) and the platform's own
// message (errorMessage).

// transportError classifies a request that got no HTTP status: timeouts,
// refused or dropped connections and cancellations are transient; a body
// over maxResponseBody and a refused redirect are permanent (retrying
// meets the same body or redirect).
func transportError(platform string, err error) error {
	if refused := refusedRedirect(err); refused != nil {
		return refused
	}
	if errors.Is(err, resty.ErrResponseBodyTooLarge) {
		return &PermanentError{Platform: platform, Msg: fmt.Sprintf("response body larger than %d bytes; lower page_size", maxResponseBody)}
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

// asTransportError passes classified errors (a failed token refresh) through,
// a refused redirect without the request URL around it, and classifies the
// rest as transportError does.
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
	return transportError(platform, err)
}

// statusError classifies a response by status: nil for 2xx; 429 is a
// RateLimitError (Retry-After honoured); 5xx and 408 are transient; any
// other status is permanent, carrying the platform's own message.
func statusError(platform string, resp *resty.Response) error {
	code := resp.StatusCode()
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusTooManyRequests:
		return &RateLimitError{
			Platform:   platform,
			RetryAfter: parseRetryAfter(resp.Header().Get("Retry-After"), time.Now()),
			Limit:      headerFloat(resp.Header(), "X-RateLimit-Limit"),
		}
	case code >= 500 || code == http.StatusRequestTimeout:
		return &TransientError{Platform: platform, Msg: fmt.Sprintf("HTTP %d: %s", code, errorMessage(code, resp.Body()))}
	}
	return &PermanentError{Platform: platform, Status: code, Msg: errorMessage(code, resp.Body())}
}

// authError is a rejected credential (401/403): permanent, with the
// platform's message and the credential reference to fix, never the secret.
func authError(platform string, cred config.CredentialRef, status int, msg string) *PermanentError {
	return &PermanentError{Platform: platform, Status: status,
		Msg: fmt.Sprintf("authentication failed: %s (check the credentials in %s)", msg, cred)}
}

// responseError classifies a response like statusError, with 401/403 as an
// authError and a 429's rate read from limitHeader (default X-RateLimit-Limit).
func responseError(platform string, cred config.CredentialRef, resp *resty.Response, limitHeader string) error {
	if limitHeader == "" {
		limitHeader = "X-RateLimit-Limit"
	}
	switch code := resp.StatusCode(); code {
	case http.StatusUnauthorized, http.StatusForbidden:
		return authError(platform, cred, code, errorMessage(code, resp.Body()))
	case http.StatusTooManyRequests:
		return rateLimited(platform, resp.Header(), "Retry-After", limitHeader)
	}
	return statusError(platform, resp)
}

// maxDerivedWait caps the wait rateLimited derives from a reported rate.
const maxDerivedWait = 5 * time.Minute

// rateLimited builds a RateLimitError from response headers. When the
// platform reports its rate but no Retry-After (SP-API), the wait is one
// request's worth, 1/rate (60 s at 0.0167/s), at most maxDerivedWait.
func rateLimited(platform string, h http.Header, retryAfterHeader, limitHeader string) *RateLimitError {
	rl := &RateLimitError{Platform: platform, RetryAfter: parseRetryAfter(h.Get(retryAfterHeader), time.Now()), Limit: headerFloat(h, limitHeader)}
	if rl.RetryAfter == 0 && rl.Limit > 0 {
		rl.RetryAfter = min(time.Duration(float64(time.Second)/rl.Limit), maxDerivedWait)
	}
	return rl
}

// parseRetryAfter reads a Retry-After value, delay-seconds or an HTTP date
// (RFC 9110 10.2.3), as a wait from now. Unknown or past values give 0.
func parseRetryAfter(v string, now time.Time) time.Duration {
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

// headerFloat reads a numeric header such as X-RateLimit-Limit; 0 if absent or not a number.
func headerFloat(h http.Header, name string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(h.Get(name)), 64)
	if err != nil || f < 0 || f != f {
		return 0
	}
	return f
}

// errorMessage extracts a platform's error message from a response body.
// It understands the common JSON shapes ({"error": ...}, {"message": ...},
// {"errors": [{"code","message"}]}, {"errors": {"field": [...]}}, OAuth's
// error_description) and falls back to the text, clipped, or the status text.
func errorMessage(status int, body []byte) string {
	var v any
	if json.Unmarshal(body, &v) == nil {
		if m := messageFrom(v, 0); m != "" {
			return textclip.Line(m)
		}
	}
	if t := strings.TrimSpace(string(body)); t != "" && !strings.HasPrefix(t, "<") {
		return textclip.Line(t)
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
