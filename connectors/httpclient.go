package connectors

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
)

// A platform's HTTP client and the parts of a request every HTTP kind
// shares: the client's limits and headers, the endpoint, the page size and
// the Link header's next page.

// maxResponseBody bounds a response body so a broken or hostile platform
// cannot exhaust a worker's memory.
const maxResponseBody = 64 << 20

// userAgent identifies ordersync to platforms.
const userAgent = "ordersync (+https://github.com/ordersync/ordersync)"

// defaultTimeout applies when a platform has no timeout configured.
const defaultTimeout = 30 * time.Second

// newHTTPClient returns a resty client for a platform: p.Timeout bounds each
// whole request (body included); resty's own retries are off because
// Temporal retries activities; redirects stay within the request's origin
// (see origin.go); nothing is logged, since headers carry secrets and bodies
// carry personal data. The caller adds authentication.
func newHTTPClient(p config.Platform) *resty.Client {
	timeout := p.Timeout.D()
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	return resty.New().
		SetTimeout(timeout).
		SetRetryCount(0).
		SetDebug(false).
		SetDisableWarn(true).
		SetLogger(silentLogger{}).
		SetRedirectPolicy(sameOriginRedirects(p.Name)).
		SetResponseBodyLimit(maxResponseBody).
		SetHeader("User-Agent", userAgent).
		SetHeader("Accept", "application/json")
}

type silentLogger struct{}

func (silentLogger) Errorf(string, ...any) {}
func (silentLogger) Warnf(string, ...any)  {}
func (silentLogger) Debugf(string, ...any) {}

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

// relNextLink returns the target of the rel="next" entry of RFC 8288 Link
// headers (Shopify's page_info pagination), or "". Targets may hold commas.
func relNextLink(h http.Header) string {
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
