package connectors

import (
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ordersync/ordersync/config"
)

// httpSpec is the declarative kind http (httpkind.go): any JSON API,
// described by its options; nothing is known of its limits.
var httpSpec = Spec[HTTPOptions]{Name: "http", New: newHTTPKind}

// HTTPOptions configure the declarative kind http: how to ask a JSON API for
// the orders updated in a window, page by page, and where to find them in its
// answers. Paths into JSON are dot-separated keys ("data.orders").
type HTTPOptions struct {
	// Path is appended to the endpoint, e.g. /orders.
	Path string   `yaml:"path"`
	Auth HTTPAuth `yaml:"auth"`
	// Window names the query parameters of the window [from, to).
	Window HTTPWindow `yaml:"window"`
	// PageSizeParam is the query parameter of the page size; empty: not sent.
	PageSizeParam string         `yaml:"page_size_param"`
	Pagination    HTTPPagination `yaml:"pagination"`
	// RecordsPath is where the array of orders is; "." when the body is the array.
	RecordsPath string     `yaml:"records_path"`
	Fields      HTTPFields `yaml:"fields"`
	// Lines say where an order's lines are; unset, the API's orders count
	// as listed without lines and the store keeps the lines it has.
	Lines  HTTPLines  `yaml:"lines"`
	Errors HTTPErrors `yaml:"errors"`
	// ExtraQuery is sent with every first-page request, e.g. {status: any}.
	ExtraQuery map[string]string `yaml:"extra_query"`
	// Headers are sent with every request; never secrets (use credentials).
	Headers map[string]string `yaml:"headers"`
	// Get is the API's get-one-order call, which `orders refetch` uses;
	// unset, the platform cannot refetch one order.
	Get HTTPGet `yaml:"get"`
}

// HTTPGet describes the get-one-order call: GET endpoint + Path with
// {id} replaced by the order's id (path-escaped), authenticated like a
// page. Its answer is one order, read with the same fields and lines.
type HTTPGet struct {
	// Path is appended to the endpoint, e.g. /orders/{id}; it holds {id}
	// exactly once and no query.
	Path string `yaml:"path"`
	// RecordPath is where the order is in the answer ("data.order"); "."
	// or empty when the body is the order.
	RecordPath string `yaml:"record_path"`
	// NotFoundStatus are the statuses that mean "no such order" (default
	// 404): reported by the refetch, never retried.
	NotFoundStatus []int `yaml:"not_found_status"`
}

// HTTPAuth says how the resolved secret is sent.
type HTTPAuth struct {
	// Type is bearer (Authorization: Bearer <secret>, the default), header
	// (header Name: Prefix<secret>), query (parameter Name=<secret>) or basic
	// (the secret is "user:password").
	Type   string `yaml:"type"`
	Name   string `yaml:"name"`
	Prefix string `yaml:"prefix"`
}

// HTTPWindow names the window parameters and their time format.
type HTTPWindow struct {
	FromParam string `yaml:"from_param"`
	ToParam   string `yaml:"to_param"`
	// Format is rfc3339 (the default), rfc3339nano, unix, unix_ms or a Go layout.
	Format string `yaml:"format"`
	// ToInclusive says the API includes orders updated exactly at `to`; the
	// connector then sends the last instant before the window's end.
	ToInclusive bool `yaml:"to_inclusive"`
}

// HTTPPagination says how to get the next page.
type HTTPPagination struct {
	// Style is cursor (a token from the body), link (Link header rel="next"),
	// offset (records skipped), page (page number) or none (one page).
	Style      string `yaml:"style"`
	TokenParam string `yaml:"token_param"` // cursor: the token's query parameter
	TokenPath  string `yaml:"token_path"`  // cursor: where the next token is; absent or empty ends
	// TokenOnly sends only the token and page size on later pages (APIs that
	// reject filters next to a cursor); by default every parameter is repeated.
	TokenOnly        bool   `yaml:"token_only"`
	OffsetParam      string `yaml:"offset_param"`       // offset
	PageParam        string `yaml:"page_param"`         // page
	StartPage        *int   `yaml:"start_page"`         // page: the first page's number, default 1
	TotalPagesHeader string `yaml:"total_pages_header"` // page: e.g. X-WP-TotalPages (optional)
}

// HTTPFields are the paths of an order's fields inside one record.
type HTTPFields struct {
	ID        string `yaml:"id"`         // required; a string or a number
	UpdatedAt string `yaml:"updated_at"` // required
	CreatedAt string `yaml:"created_at"`
	Status    string `yaml:"status"`
	Currency  string `yaml:"currency"`
	Total     string `yaml:"total"` // a decimal string or number, kept as written
	LineItems string `yaml:"line_items"`
	// TimeFormat is the format of updated_at and created_at, as window.format.
	TimeFormat string `yaml:"time_format"`
}

// HTTPLines are the paths of an order's lines: Path is the array of lines
// inside one record, the others are paths inside one line.
type HTTPLines struct {
	Path string `yaml:"path"`
	// ID is optional: without it a line's id is its 1-based position.
	ID       string `yaml:"id"`
	SKU      string `yaml:"sku"`
	Title    string `yaml:"title"`
	Quantity string `yaml:"quantity"` // required with path; an integer number or string
	// UnitPrice is a decimal string or number, kept as written.
	UnitPrice string `yaml:"unit_price"`
	// Currency defaults to the order's currency.
	Currency string `yaml:"currency"`
}

// HTTPErrors map responses to error classes.
type HTTPErrors struct {
	// RetryableStatus are transient (default: 408, 425 and every 5xx).
	RetryableStatus []int `yaml:"retryable_status"`
	// RateLimitStatus mean "slow down" (default 429).
	RateLimitStatus []int `yaml:"rate_limit_status"`
	// MessagePath is where an error body holds its message (default: the usual shapes).
	MessagePath      string `yaml:"message_path"`
	RetryAfterHeader string `yaml:"retry_after_header"` // default Retry-After
	RateLimitHeader  string `yaml:"rate_limit_header"`  // requests/s; default X-RateLimit-Limit
}

var (
	jsonPath  = regexp.MustCompile(`^[^.\s]+(\.[^.\s]+)*$`)
	paramName = regexp.MustCompile(`^[A-Za-z0-9_.\-\[\]]+$`)
)

// timeFormatNames are the named formats of window.format and fields.time_format.
var timeFormatNames = []string{"rfc3339", "rfc3339nano", "unix", "unix_ms"}

// checkTimeFormat accepts a named format or a Go layout that keeps a time to
// the second (it must round-trip 2001-02-03T04:05:06Z).
func checkTimeFormat(f string) bool {
	if slices.Contains(timeFormatNames, f) {
		return true
	}
	ref := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	back, err := time.Parse(f, ref.Format(f))
	return err == nil && back.Equal(ref)
}

func (o *HTTPOptions) Finish(_ config.Platform, bad config.ProblemFunc) {
	if o.Path != "" && (!strings.HasPrefix(o.Path, "/") || strings.ContainsAny(o.Path, "?#")) {
		bad("path", "must start with / and hold no query (use extra_query), got %q", o.Path)
	}
	params := map[string]string{} // query parameter -> option that names it
	param := func(field, name string, required bool) {
		switch {
		case name == "" && required:
			bad(field, "is required")
		case name == "":
		case !paramName.MatchString(name):
			bad(field, "%q is not a query parameter name", name)
		case params[name] != "":
			bad(field, "%q is already used by %s", name, params[name])
		default:
			params[name] = field
		}
	}
	path := func(field, v string, required bool) {
		if (v != "" || required) && !jsonPath.MatchString(v) {
			bad(field, "must be a dot-separated path like data.orders, got %q", v)
		}
	}
	format := func(field string, f *string) {
		if *f == "" {
			*f = "rfc3339"
		}
		if !checkTimeFormat(*f) {
			bad(field, "%q is not one of %s nor a Go time layout that keeps year to second (like 2006-01-02 15:04:05)", *f, strings.Join(timeFormatNames, ", "))
		}
	}

	if o.Auth.Type == "" {
		o.Auth.Type = "bearer"
	}
	switch o.Auth.Type {
	case "bearer", "basic":
		if o.Auth.Name != "" {
			bad("auth.name", "is only used with type header or query")
		}
	case "header":
		if !paramName.MatchString(o.Auth.Name) {
			bad("auth.name", "is required with type header: the header that carries the secret")
		}
	case "query":
		param("auth.name", o.Auth.Name, true)
	default:
		bad("auth.type", "must be bearer, header, query or basic, got %q", o.Auth.Type)
	}
	if o.Auth.Prefix != "" && o.Auth.Type != "header" {
		bad("auth.prefix", "is only used with type header")
	}

	param("window.from_param", o.Window.FromParam, true)
	param("window.to_param", o.Window.ToParam, true)
	format("window.format", &o.Window.Format)
	param("page_size_param", o.PageSizeParam, false)

	pg := &o.Pagination
	uses := map[string][]string{ // style -> options it needs, in order
		"cursor": {"token_param", "token_path"}, "link": nil, "offset": {"offset_param"},
		"page": {"page_param"}, "none": nil,
	}
	need, ok := uses[pg.Style]
	if !ok {
		bad("pagination.style", "must be cursor, link, offset, page or none, got %q", pg.Style)
	}
	set := map[string]bool{"token_param": pg.TokenParam != "", "token_path": pg.TokenPath != "", "token_only": pg.TokenOnly,
		"offset_param": pg.OffsetParam != "", "page_param": pg.PageParam != "", "start_page": pg.StartPage != nil, "total_pages_header": pg.TotalPagesHeader != ""}
	allowed := map[string][]string{"cursor": {"token_only"}, "page": {"start_page", "total_pages_header"}}
	for _, f := range []string{"token_param", "token_path", "token_only", "offset_param", "page_param", "start_page", "total_pages_header"} {
		if ok && set[f] && !slices.Contains(need, f) && !slices.Contains(allowed[pg.Style], f) {
			bad("pagination."+f, "is not used with style %s", pg.Style)
		}
	}
	if ok {
		for _, f := range need {
			if !set[f] {
				bad("pagination."+f, "is required with style %s", pg.Style)
			}
		}
		param("pagination.token_param", pg.TokenParam, false)
		path("pagination.token_path", pg.TokenPath, false)
		param("pagination.offset_param", pg.OffsetParam, false)
		param("pagination.page_param", pg.PageParam, false)
	}
	if pg.Style == "page" && pg.StartPage == nil {
		one := 1
		pg.StartPage = &one
	}
	if pg.StartPage != nil && *pg.StartPage < 0 {
		bad("pagination.start_page", "must not be negative, got %d", *pg.StartPage)
	}

	if o.RecordsPath != "." {
		path("records_path", o.RecordsPath, true)
	}
	o.Get.finish(path, bad)
	path("fields.id", o.Fields.ID, true)
	path("fields.updated_at", o.Fields.UpdatedAt, true)
	for _, f := range [][2]string{{"created_at", o.Fields.CreatedAt}, {"status", o.Fields.Status},
		{"currency", o.Fields.Currency}, {"total", o.Fields.Total}, {"line_items", o.Fields.LineItems}} {
		path("fields."+f[0], f[1], false)
	}
	format("fields.time_format", &o.Fields.TimeFormat)

	l := o.Lines
	lineFields := [][2]string{{"id", l.ID}, {"sku", l.SKU}, {"title", l.Title}, {"quantity", l.Quantity},
		{"unit_price", l.UnitPrice}, {"currency", l.Currency}}
	switch {
	case l.Path != "":
		path("lines.path", l.Path, true)
		if l.Quantity == "" {
			bad("lines.quantity", "is required with lines.path: where a line holds its number of units")
		}
		for _, f := range lineFields {
			path("lines."+f[0], f[1], false)
		}
	case l != HTTPLines{}:
		bad("lines.path", "is required when lines are configured: the array of lines inside one order, like line_items")
	}

	e := &o.Errors
	if len(e.RateLimitStatus) == 0 {
		e.RateLimitStatus = []int{http.StatusTooManyRequests}
	}
	for _, c := range e.RetryableStatus {
		if c < 400 || c > 599 || slices.Contains(e.RateLimitStatus, c) {
			bad("errors.retryable_status", "%d must be a 4xx or 5xx status not in rate_limit_status", c)
		}
	}
	for _, c := range e.RateLimitStatus {
		if c < 400 || c > 599 {
			bad("errors.rate_limit_status", "%d must be a 4xx or 5xx status", c)
		}
	}
	path("errors.message_path", e.MessagePath, false)
	if e.RetryAfterHeader == "" {
		e.RetryAfterHeader = "Retry-After"
	}
	if e.RateLimitHeader == "" {
		e.RateLimitHeader = "X-RateLimit-Limit"
	}

	for _, k := range slices.Sorted(maps.Keys(o.ExtraQuery)) {
		param("extra_query."+k, k, false)
	}
	for _, k := range slices.Sorted(maps.Keys(o.Headers)) {
		h := http.CanonicalHeaderKey(k)
		switch {
		case h == "Authorization" || h == "Proxy-Authorization" || (o.Auth.Type == "header" && h == http.CanonicalHeaderKey(o.Auth.Name)):
			bad("headers."+k, "carries the secret; it comes from credentials, never from this file")
		case credentialLike(h):
			// Headers travel in workflow input, so they end up in Temporal
			// history: a literal API key here would leak.
			bad("headers."+k, "looks like a credential; put the secret in credentials and send it with auth.type header and auth.name %s", h)
		}
	}
}

// credentialLike says whether a header name suggests it carries a secret.
func credentialLike(header string) bool {
	h := strings.ToLower(header)
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "auth", "cookie", "signature", "session"} {
		if strings.Contains(h, w) {
			return true
		}
	}
	return false
}

// finish checks the get-one-order call and fills in its defaults.
func (g *HTTPGet) finish(path func(field, v string, required bool), bad config.ProblemFunc) {
	if g.Path == "" {
		if g.RecordPath != "" || len(g.NotFoundStatus) > 0 {
			bad("get.path", "is required when get is configured: the get-one-order path, like /orders/{id}")
		}
		return
	}
	if !strings.HasPrefix(g.Path, "/") || strings.ContainsAny(g.Path, "?#") || strings.Count(g.Path, "{id}") != 1 {
		bad("get.path", "must start with /, hold {id} exactly once and no query, like /orders/{id}; got %q", g.Path)
	}
	if g.RecordPath == "" {
		g.RecordPath = "."
	}
	if g.RecordPath != "." {
		path("get.record_path", g.RecordPath, true)
	}
	if len(g.NotFoundStatus) == 0 {
		g.NotFoundStatus = []int{http.StatusNotFound}
	}
	for _, c := range g.NotFoundStatus {
		if c < 400 || c > 499 || c == http.StatusTooManyRequests || c == http.StatusUnauthorized || c == http.StatusForbidden {
			bad("get.not_found_status", "%d must be a 4xx status other than 401, 403 and 429", c)
		}
	}
}
