package connectors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// An API unlike the simulator: nested fields, numeric ids and amounts,
// unix-millisecond times, five orders.
var genericOrders = func() []map[string]any {
	var out []map[string]any
	for i := range 5 {
		mod := time.Date(2026, 3, 1, 10, 10*i, 0, 0, time.UTC)
		out = append(out, map[string]any{"order_no": json.Number(strconv.Itoa(1001 + i)), "state": "open", "lines": i + 1,
			"meta":  map[string]any{"modified": json.Number(strconv.FormatInt(mod.UnixMilli(), 10)), "created": mod.Add(-time.Hour).UnixMilli()},
			"money": map[string]any{"amount": json.Number("12.5" + strconv.Itoa(i)), "ccy": "EUR"}})
	}
	return out
}()

var (
	genFrom   = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	genTo     = time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
	genFields = map[string]any{"id": "order_no", "updated_at": "meta.modified", "created_at": "meta.created", "status": "state",
		"currency": "money.ccy", "total": "money.amount", "line_items": "lines", "time_format": "unix_ms"}
)

func genericConn(t *testing.T, endpoint, secret string, options map[string]any) connectors.Connector {
	t.Helper()
	options["fields"] = genFields
	c, err := connectors.New(config.Platform{Name: "api", Kind: "http", Endpoint: endpoint, PageSize: 2,
		Timeout: config.Duration(5 * time.Second), Credentials: secretFile(t, secret), Options: options})
	require.NoError(t, err)
	return c
}

func TestHTTPKindPaginationStyles(t *testing.T) {
	var ts *httptest.Server
	mux := http.NewServeMux()
	// cursor: header auth, unix_ms window with an inclusive end, token alone on later pages.
	mux.HandleFunc("/cursor/orders", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		assert.Equal(t, "Key k-123", r.Header.Get("X-Api-Key"))
		assert.Equal(t, "en", r.Header.Get("Accept-Language"))
		n := 0
		if c := q.Get("cursor"); c != "" {
			assert.Equal(t, url.Values{"cursor": {c}, "count": {"2"}}, q)
			n, _ = strconv.Atoi(c)
		} else {
			assert.Equal(t, url.Values{"from": {"1772359200000"}, "to": {"1772362799999"}, "count": {"2"}, "state": {"all"}}, q)
		}
		body := map[string]any{"data": map[string]any{"orders": genericOrders[n:min(n+2, 5)]}, "meta": map[string]any{"next": nil}}
		if n+2 < 5 {
			body["meta"] = map[string]any{"next": strconv.Itoa(n + 2)}
		}
		b, _ := json.Marshal(body)
		writeBody(w, http.StatusOK, b)
	})
	// link: query auth, relative next links.
	mux.HandleFunc("/link/orders", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		assert.Equal(t, "k-123", q.Get("api_key"))
		n, _ := strconv.Atoi(q.Get("after"))
		if n == 0 {
			assert.Equal(t, "2026-03-01T10:00:00Z", q.Get("since"))
			assert.Equal(t, "2026-03-01T11:00:00Z", q.Get("until"))
		} else {
			assert.Equal(t, url.Values{"after": {q.Get("after")}, "limit": {"2"}, "api_key": {"k-123"}}, q, "the link as given, plus the key")
		}
		var hdr []string
		if n+2 < 5 {
			hdr = []string{"Link", `</link/orders?after=` + strconv.Itoa(n+2) + `&limit=2>; rel="next"`}
		}
		b, _ := json.Marshal(map[string]any{"items": genericOrders[n:min(n+2, 5)]})
		writeBody(w, http.StatusOK, b, hdr...)
	})
	// offset: basic auth, the body is the array, a short page ends.
	mux.HandleFunc("/offset/orders", func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		assert.Equal(t, "svc", user)
		assert.Equal(t, "pw:with:colons", pass)
		n, _ := strconv.Atoi(r.URL.Query().Get("skip"))
		b, _ := json.Marshal(genericOrders[min(n, 5):min(n+2, 5)])
		writeBody(w, http.StatusOK, b)
	})
	// page: zero-based pages and a total-pages header.
	mux.HandleFunc("/page/orders", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("p"))
		b, _ := json.Marshal(map[string]any{"orders": genericOrders[min(2*n, 5):min(2*n+2, 5)]})
		writeBody(w, http.StatusOK, b, "X-Total-Pages", "3")
	})
	ts = httptest.NewServer(mux)
	defer ts.Close()

	window := map[string]any{"from_param": "from", "to_param": "to", "format": "unix_ms", "to_inclusive": true}
	tests := []struct {
		name, secret string
		options      map[string]any
	}{
		{"cursor", "k-123", map[string]any{"path": "/cursor/orders", "auth": map[string]any{"type": "header", "name": "X-Api-Key", "prefix": "Key "},
			"window": window, "page_size_param": "count", "records_path": "data.orders", "extra_query": map[string]any{"state": "all"},
			"headers":    map[string]any{"Accept-Language": "en"},
			"pagination": map[string]any{"style": "cursor", "token_param": "cursor", "token_path": "meta.next", "token_only": true}}},
		{"link", "k-123", map[string]any{"path": "/link/orders", "auth": map[string]any{"type": "query", "name": "api_key"},
			"window": map[string]any{"from_param": "since", "to_param": "until"}, "records_path": "items",
			"pagination": map[string]any{"style": "link"}}},
		{"offset", "svc:pw:with:colons", map[string]any{"path": "/offset/orders", "auth": map[string]any{"type": "basic"},
			"window": window, "page_size_param": "limit", "records_path": ".",
			"pagination": map[string]any{"style": "offset", "offset_param": "skip"}}},
		{"page", "k-123", map[string]any{"path": "/page/orders", "window": window, "records_path": "orders",
			"pagination": map[string]any{"style": "page", "page_param": "p", "start_page": 0, "total_pages_header": "X-Total-Pages"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orders := fetchWindow(t, genericConn(t, ts.URL, tc.secret, tc.options), genFrom, genTo)
			require.Equal(t, []string{"1001", "1002", "1003", "1004", "1005"}, wooIDs(orders))
			o := orders[2]
			require.Equal(t, time.Date(2026, 3, 1, 10, 20, 0, 0, time.UTC), o.UpdatedAt)
			require.Equal(t, time.Date(2026, 3, 1, 9, 20, 0, 0, time.UTC), o.CreatedAt)
			require.Equal(t, "12.52", o.Total, "a JSON number keeps its literal text")
			require.Equal(t, "EUR", o.Currency)
			require.Equal(t, "open", o.Status)
			require.Equal(t, 3, o.LineCount, "line_items may be a count")
			require.JSONEq(t, string(must(json.Marshal(genericOrders[2]))), string(o.Raw))
		})
	}
	t.Run("a next link to another host is refused", func(t *testing.T) {
		c := genericConn(t, ts.URL, "k-123", tests[1].options)
		_, err := c.ListOrders(context.Background(), connectors.PageRequest{From: genFrom, To: genTo, Token: "https://evil.example/steal", Page: 2})
		require.True(t, connectors.IsPermanent(err))
		require.ErrorContains(t, err, "refused a next-page link to https://evil.example, not the endpoint's origin "+ts.URL)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
