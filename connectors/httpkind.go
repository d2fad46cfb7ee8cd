package connectors

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/textclip"
)

// httpKindConnector is the declarative connector: everything it knows about
// the platform comes from the platform's options (HTTPOptions), so a
// JSON API that lists orders by update time can be added without Go code.
type httpKindConnector struct {
	platform string
	cred     config.CredentialRef
	opts     HTTPOptions
	url      string
	origin   origin // the endpoint's; link pagination never leaves it
	pageSize int
	http     *resty.Client
	src      credentials.Source // the secret, asked per request
}

// newHTTPKind builds the connector of kind "http" from its options (see
// HTTPOptions and docs/connectors.md). The secret is asked of src
// per request and put where options.auth says (authorize).
func newHTTPKind(p config.Platform, o *HTTPOptions, src credentials.Source) (Connector, error) {
	base, err := httpEndpoint(p)
	if err != nil {
		return nil, err
	}
	opts := *o
	u, _ := url.Parse(base)
	c := &httpKindConnector{platform: p.Name, cred: p.Credentials, opts: opts, url: base + opts.Path,
		origin: originOf(u), pageSize: p.PageSize, http: newHTTPClient(p), src: src}
	if err := checkStaticSecret(p, src, func(secret string) error {
		return c.authorize(c.http.R(), c.url, secret)
	}); err != nil {
		return nil, err
	}
	for k, v := range opts.Headers {
		c.http.SetHeader(k, v)
	}
	return c, nil
}

// authorize puts the secret on a request to target as options.auth says.
// A query credential the target already carries (a next link that repeats
// it) is not added twice.
func (c *httpKindConnector) authorize(r *resty.Request, target, secret string) error {
	switch c.opts.Auth.Type {
	case "bearer":
		r.SetAuthToken(secret)
	case "header":
		r.SetHeader(c.opts.Auth.Name, c.opts.Auth.Prefix+secret)
	case "query":
		if u, err := url.Parse(target); err != nil || !u.Query().Has(c.opts.Auth.Name) {
			r.SetQueryParam(c.opts.Auth.Name, secret)
		}
	case "basic":
		user, pass, ok := strings.Cut(secret, ":")
		if !ok {
			return &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("credentials %s: auth type basic needs the secret as user:password", c.cred)}
		}
		r.SetBasicAuth(user, pass)
	}
	return nil
}

// ListOrders fetches one page of the orders updated in [req.From, req.To).
// The token is the cursor (cursor), the next URL (link), the next offset
// (offset) or the next page number (page).
func (c *httpKindConnector) ListOrders(ctx context.Context, req PageRequest) (Page, error) {
	if err := checkWindow(c.platform, req); err != nil {
		return Page{}, err
	}
	pg := c.opts.Pagination
	size := pageSize(req, c.pageSize)
	target, q, err := c.request(req, size)
	if err != nil {
		return Page{}, err
	}
	resp, err := sendWithSecret(ctx, c.platform, c.src, func(secret string) (*resty.Response, error) {
		r := c.http.R().SetContext(ctx).SetQueryParams(q)
		if err := c.authorize(r, target, secret); err != nil {
			return nil, err
		}
		return r.Get(target)
	})
	if err != nil {
		return Page{}, asTransportError(c.platform, err)
	}
	if err := c.classify(resp); err != nil {
		return Page{}, err
	}
	body := resp.Body()
	var path []string
	if c.opts.RecordsPath != "." {
		path = strings.Split(c.opts.RecordsPath, ".")
	}
	items, err := decodeArrayPath(c.platform, req.Page, body, path)
	if err != nil {
		return Page{}, err
	}
	page := Page{Orders: make([]Order, 0, len(items)), RateLimit: headerFloat(resp.Header(), c.opts.Errors.RateLimitHeader)}
	for i, it := range items {
		o, err := c.order(it.Raw)
		if err != nil {
			return Page{}, itemError(c.platform, req.Page, i, it, err)
		}
		page.Orders = append(page.Orders, o)
	}
	full := c.opts.PageSizeParam == "" || len(items) >= size // a short page is the last one
	switch pg.Style {
	case "cursor":
		page.NextToken, err = c.cursor(body, req.Page)
	case "link":
		page.NextToken, err = c.nextLink(resp, req.Page)
	case "offset":
		if len(items) > 0 && full {
			off, _ := strconv.Atoi(req.Token)
			page.NextToken = strconv.Itoa(off + len(items))
		}
	case "page":
		n := *pg.StartPage
		if req.Token != "" {
			n, _ = strconv.Atoi(req.Token)
		}
		more := len(items) > 0 && full
		if total, err := strconv.Atoi(strings.TrimSpace(resp.Header().Get(pg.TotalPagesHeader))); pg.TotalPagesHeader != "" && err == nil {
			more = n-*pg.StartPage+1 < total
		}
		if more {
			page.NextToken = strconv.Itoa(n + 1)
		}
	}
	if err != nil {
		return Page{}, err
	}
	return page, nil
}

// request builds the URL and query of one page request.
func (c *httpKindConnector) request(req PageRequest, size int) (string, map[string]string, error) {
	pg, w := c.opts.Pagination, c.opts.Window
	q := map[string]string{}
	if pg.Style == "link" && req.Token != "" {
		// Follow the platform's next link as it is. nextLink checked its
		// origin; again here, so a forged token cannot send the credential
		// elsewhere either.
		if _, err := sameOriginLink(c.platform, req.Page, c.origin, nil, req.Token); err != nil {
			return "", nil, err
		}
		return req.Token, q, nil
	}
	if req.Token == "" || !pg.TokenOnly {
		prec := timePrecision(w.Format)
		to := ceilTime(req.To, prec)
		if w.ToInclusive {
			to = lastInstantBefore(req.To, prec)
		}
		q[w.FromParam] = formatTime(w.Format, req.From)
		q[w.ToParam] = formatTime(w.Format, to)
		for k, v := range c.opts.ExtraQuery {
			q[k] = v
		}
	}
	if c.opts.PageSizeParam != "" && size > 0 {
		q[c.opts.PageSizeParam] = strconv.Itoa(size)
	}
	switch pg.Style {
	case "cursor":
		if req.Token != "" {
			q[pg.TokenParam] = req.Token
		}
	case "offset", "page":
		param, n := pg.OffsetParam, 0
		if pg.Style == "page" {
			param, n = pg.PageParam, *pg.StartPage
		}
		if req.Token != "" {
			v, err := strconv.Atoi(req.Token)
			if err != nil || v < 0 {
				return "", nil, &PermanentError{Platform: c.platform, Msg: fmt.Sprintf("page token %q is not a number", textclip.Value(req.Token))}
			}
			n = v
		}
		q[param] = strconv.Itoa(n)
	}
	return c.url, q, nil
}

// cursor reads the next token from the body; absent, null or "" ends the window.
func (c *httpKindConnector) cursor(body []byte, page int) (string, error) {
	m, err := decodeObject(body)
	if err != nil {
		return "", &MalformedError{Platform: c.platform, Page: page, Offset: -1, Err: err}
	}
	v, ok := lookup(m, c.opts.Pagination.TokenPath)
	if !ok || v == nil {
		return "", nil
	}
	s, ok := scalarText(v)
	if !ok {
		return "", &MalformedError{Platform: c.platform, Page: page, Offset: -1, Err: fmt.Errorf("next token at %q is %s, not a string", c.opts.Pagination.TokenPath, showJSON(v))}
	}
	return s, nil
}

// nextLink is the absolute URL of the Link header's rel="next", or "". A
// link to another origin fails the page that carries it, before any
// request is made to it.
func (c *httpKindConnector) nextLink(resp *resty.Response, page int) (string, error) {
	next := relNextLink(resp.Header())
	if next == "" {
		return "", nil
	}
	u, err := sameOriginLink(c.platform, page, c.origin, resp.RawResponse.Request.URL, next)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}
