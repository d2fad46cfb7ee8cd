package connectors

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-resty/resty/v2"
)

// A credential goes only to the origin (scheme, host, port) it was
// configured for. A platform picks where the next request goes in two ways,
// a redirect and a next-page URL, and both are checked here: net/http would
// otherwise forward custom headers (X-Shopify-Access-Token, an API key) to
// any host, and Authorization to the same host on any port.

// maxRedirects bounds the same-origin redirects of one request, as net/http does.
const maxRedirects = 10

// origin is a URL's scheme, host and port, lower-cased and with the default
// port made explicit, so https://Shop.example and https://shop.example:443
// are one origin.
type origin struct{ scheme, host, port string }

func originOf(u *url.URL) origin {
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	if o.port == "" {
		o.port = defaultPorts[o.scheme]
	}
	return o
}

var defaultPorts = map[string]string{"http": "80", "https": "443"}

// String is the origin as a URL prefix, without a default port. It never
// holds a path, query or user info, which may carry credentials.
func (o origin) String() string {
	host := o.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	if o.port == "" || o.port == defaultPorts[o.scheme] {
		return o.scheme + "://" + host
	}
	return o.scheme + "://" + net.JoinHostPort(o.host, o.port)
}

// sameOriginRedirects is the redirect policy of every platform client: a
// redirect is followed only within the origin of the request that started
// it (a token endpoint's requests within the token endpoint's origin), at
// most maxRedirects times. Anything else is refused before the new request
// is sent; retrying would meet the same redirect, so it is permanent.
func sameOriginRedirects(platform string) resty.RedirectPolicy {
	return resty.RedirectPolicyFunc(func(req *http.Request, via []*http.Request) error {
		from, to := originOf(via[0].URL), originOf(req.URL)
		if from != to {
			status := "a redirect"
			if req.Response != nil {
				status = fmt.Sprintf("a %d redirect", req.Response.StatusCode)
			}
			return &PermanentError{Platform: platform, Msg: fmt.Sprintf(
				"refused %s from %s to %s: requests carry credentials and never leave their endpoint's origin", status, from, to)}
		}
		if len(via) >= maxRedirects {
			return &PermanentError{Platform: platform, Msg: fmt.Sprintf("stopped after %d redirects within %s", maxRedirects, from)}
		}
		return nil
	})
}

// sameOriginLink resolves a next-page URL the platform supplied (a Link
// header, a body field) against base, the URL of the response that carried
// it, and accepts it only on the endpoint's origin. The error names both
// origins, never the link, whose query may carry credentials.
func sameOriginLink(platform string, page int, endpoint origin, base *url.URL, link string) (*url.URL, error) {
	ref, err := url.Parse(link)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // without the link url.Parse quotes
	}
	if err != nil {
		return nil, &MalformedError{Platform: platform, Page: page, Offset: -1, Err: fmt.Errorf("next-page link is not a URL: %v", err)}
	}
	if base != nil {
		ref = base.ResolveReference(ref)
	}
	if !ref.IsAbs() || ref.Host == "" {
		return nil, &PermanentError{Platform: platform, Msg: fmt.Sprintf("refused a next-page link that is not an absolute URL on %s", endpoint)}
	}
	if got := originOf(ref); got != endpoint {
		return nil, &PermanentError{Platform: platform, Msg: fmt.Sprintf(
			"refused a next-page link to %s, not the endpoint's origin %s: requests carry credentials and never leave it", got, endpoint)}
	}
	return ref, nil
}

// refusedRedirect is the PermanentError of sameOriginRedirects inside a
// failed request's error, or nil. It is returned alone: the *url.Error
// around it repeats the request URL, whose query may carry credentials.
func refusedRedirect(err error) *PermanentError {
	var ue *url.Error
	var pe *PermanentError
	if errors.As(err, &ue) && errors.As(ue.Err, &pe) {
		return pe
	}
	return nil
}
