package connectors_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

// A hostile platform tries to make the connector carry its credential to
// another origin (scheme, host, port): by a redirect, or by a next-page URL.

// requestLog records every request a server receives.
type requestLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *requestLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.seen = append(l.seen, fmt.Sprintf("%s %s credential=%t", r.Method, r.URL.Path, hasCredential(r)))
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (l *requestLog) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// redirecting answers requests to path with a redirect to base+path,
// adding a query that must not appear in errors.
func redirecting(path, base string, status int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			next.ServeHTTP(w, r)
			return
		}
		http.Redirect(w, r, base+path+"?stolen=query-credential", status)
	})
}

// requireRefusal checks a refusal: permanent, naming both origins, and
// showing neither the secret (not even redacted) nor the refused URL's query.
func requireRefusal(t *testing.T, err error, f kindFixture, from, to string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, connectors.IsPermanent(err), "permanent: %v", err)
	require.ErrorContains(t, err, from)
	require.ErrorContains(t, err, to)
	msg := err.Error()
	require.NotContains(t, msg, "stolen")
	require.NotContains(t, msg, connectors.Redacted, "the message never held the secret")
	for _, s := range []string{f.secret, "s3cr3t-client", "Atzr|refresh-me", "cs_origin_secret", "access-token-1"} {
		require.NotContains(t, msg, s)
	}
}

func TestCrossOriginRedirectIsRefused(t *testing.T) {
	// Where the hostile platform sends the connector: its own host on
	// another port, another host name, another scheme.
	targets := []struct {
		name  string
		start func(h http.Handler) (srv *httptest.Server, base string)
	}{
		{"same host, another port", func(h http.Handler) (*httptest.Server, string) {
			s := httptest.NewServer(h)
			return s, s.URL
		}},
		{"another host", func(h http.Handler) (*httptest.Server, string) {
			s := httptest.NewServer(h)
			return s, "http://localhost:" + must(url.Parse(s.URL)).Port()
		}},
		{"another scheme", func(h http.Handler) (*httptest.Server, string) {
			s := httptest.NewTLSServer(h)
			return s, s.URL
		}},
	}
	type row struct {
		fixture kindFixture
		token   bool // the token endpoint redirects, not the order listing
	}
	var rows []row
	for _, f := range kindFixtures {
		rows = append(rows, row{fixture: f})
		if f.oauth {
			rows = append(rows, row{fixture: f, token: true})
		}
	}
	for _, rw := range rows {
		for _, tg := range targets {
			name := rw.fixture.name + " orders/" + tg.name
			if rw.token {
				name = rw.fixture.name + " token endpoint/" + tg.name
			}
			t.Run(name, func(t *testing.T) {
				f := rw.fixture
				var elsewhere requestLog
				other, base := tg.start(elsewhere.wrap(serveKind(f)))
				defer other.Close()

				var apiLog requestLog
				apiHandler, authHandler := apiLog.wrap(serveKind(f)), http.Handler(serveKind(f))
				status := http.StatusFound
				if rw.token {
					status = http.StatusTemporaryRedirect // keeps the POST and its form
					authHandler = redirecting("/token", base, status, authHandler)
				} else {
					apiHandler = redirecting(f.ordersPath, base, status, apiHandler)
				}
				api, auth := httptest.NewServer(apiHandler), httptest.NewServer(authHandler)
				defer api.Close()
				defer auth.Close()
				from := api.URL
				if rw.token {
					from = auth.URL
				}

				p, err := kindPlatform(t, f, api.URL, auth.URL).ListOrders(context.Background(), kindWindow)
				require.Empty(t, elsewhere.requests(), "the other origin received nothing")
				requireRefusal(t, err, f, from, base)
				require.ErrorContains(t, err, fmt.Sprintf("refused a %d redirect from %s to %s", status, from, base))
				require.Empty(t, p.Orders, "nothing from the other origin is taken as this platform's")
				if rw.token {
					require.Empty(t, apiLog.requests(), "no order request without a token")
				}
			})
		}
	}
	t.Run("token endpoint redirecting to the API's origin", func(t *testing.T) {
		// The token endpoint is an origin of its own: the client secret and
		// refresh token must not follow it even to the platform's API.
		f := kindFixtures[2] // amazon
		var apiLog requestLog
		api := httptest.NewServer(apiLog.wrap(serveKind(f)))
		defer api.Close()
		auth := httptest.NewServer(redirecting("/token", api.URL, http.StatusTemporaryRedirect, serveKind(f)))
		defer auth.Close()
		_, err := kindPlatform(t, f, api.URL, auth.URL).ListOrders(context.Background(), kindWindow)
		require.Empty(t, apiLog.requests())
		requireRefusal(t, err, f, auth.URL, api.URL)
	})
}

func TestSameOriginRedirectIsFollowed(t *testing.T) {
	// Every request (token endpoint included) is moved under /moved on
	// the same server, with 307 so a token POST keeps its method and form.
	moved := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rest, ok := strings.CutPrefix(r.URL.Path, "/moved"); ok {
				r.URL.Path = rest
				next.ServeHTTP(w, r)
				return
			}
			http.Redirect(w, r, "/moved"+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		})
	}
	for _, f := range kindFixtures {
		t.Run(f.name, func(t *testing.T) {
			var log requestLog
			ts := httptest.NewServer(moved(log.wrap(serveKind(f))))
			defer ts.Close()
			p, err := kindPlatform(t, f, ts.URL, ts.URL).ListOrders(context.Background(), kindWindow)
			require.NoError(t, err)
			require.Len(t, p.Orders, 1)
			require.Equal(t, f.wantID, p.Orders[0].ID)
			require.Contains(t, log.requests(), f.listMethod()+" "+f.ordersPath+" credential=true", "the credential went along to the same origin")
		})
	}
	t.Run("a redirect loop stops", func(t *testing.T) {
		f := kindFixtures[0] // sim
		var log requestLog
		ts := httptest.NewServer(log.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.RequestURI(), http.StatusFound)
		})))
		defer ts.Close()
		_, err := kindPlatform(t, f, ts.URL, ts.URL).ListOrders(context.Background(), kindWindow)
		require.True(t, connectors.IsPermanent(err))
		require.ErrorContains(t, err, "stopped after 10 redirects within "+ts.URL)
		require.Len(t, log.requests(), 10)
	})
}

func TestNextPageLinkToAnotherOrigin(t *testing.T) {
	// Kinds that follow a platform's URL refuse one on another origin at
	// the page that carries it; kinds that page by token or offset ignore
	// the URLs platforms also send. Either way the other origin hears nothing.
	tests := []struct {
		fixture kindFixture
		serve   func(f kindFixture, other string) http.HandlerFunc
		refused bool
	}{
		{kindFixtures[1], linkHeader(func(f kindFixture, other string) string {
			return other + f.ordersPath + "?limit=2&page_info=bmV4dA&stolen=query-credential"
		}), true}, // shopify
		{kindFixtures[6], linkHeader(func(f kindFixture, other string) string { return other + "/orders?after=1&stolen=query-credential" }), true}, // http, link
		{kindFixtures[3], func(f kindFixture, other string) http.HandlerFunc { // ebay: "next" in the body
			f.page = strings.Replace(f.page, `{"orders":`, `{"next":"`+other+f.ordersPath+`?offset=2","orders":`, 1)
			return serveKind(f)
		}, false},
		{kindFixtures[4], linkHeader(func(f kindFixture, other string) string { return other + f.ordersPath + "?page=2" }), false}, // woocommerce
	}
	for _, tc := range tests {
		f := tc.fixture
		t.Run(f.name, func(t *testing.T) {
			var elsewhere requestLog
			other := httptest.NewServer(elsewhere.wrap(serveKind(f)))
			defer other.Close()
			ts := httptest.NewServer(nil)
			defer ts.Close()
			ts.Config.Handler = tc.serve(f, other.URL)
			c := kindPlatform(t, f, ts.URL, ts.URL)
			p, err := c.ListOrders(context.Background(), kindWindow)
			require.Empty(t, elsewhere.requests(), "the other origin received nothing")
			if tc.refused {
				requireRefusal(t, err, f, ts.URL, other.URL)
				require.Empty(t, p.Orders)
			} else {
				require.NoError(t, err)
				require.Len(t, p.Orders, 1)
				require.Empty(t, p.NextToken)
			}
		})
	}
	t.Run("http, a link on the same origin in other letters is followed", func(t *testing.T) {
		f := kindFixtures[6]
		var log requestLog
		ts := httptest.NewServer(nil)
		defer ts.Close()
		ts.Config.Handler = log.wrap(linkHeader(func(f kindFixture, _ string) string {
			return strings.Replace(ts.URL, "http://", "HTTP://", 1) + "/orders?after=1"
		})(f, ""))
		c := kindPlatform(t, f, ts.URL, ts.URL)
		p, err := c.ListOrders(context.Background(), kindWindow)
		require.NoError(t, err)
		require.Equal(t, ts.URL+"/orders?after=1", p.NextToken)
		req := kindWindow
		req.Token, req.Page = p.NextToken, 2
		_, err = c.ListOrders(context.Background(), req)
		require.NoError(t, err)
		require.Len(t, log.requests(), 2)
	})
	t.Run("http, a forged next-link token", func(t *testing.T) {
		f := kindFixtures[6]
		var log requestLog
		ts := httptest.NewServer(log.wrap(serveKind(f)))
		defer ts.Close()
		req := kindWindow
		req.Token, req.Page = "https://evil.example:8443/orders?stolen=query-credential", 2
		_, err := kindPlatform(t, f, ts.URL, ts.URL).ListOrders(context.Background(), req)
		requireRefusal(t, err, f, ts.URL, "https://evil.example:8443")
		require.Empty(t, log.requests(), "refused before any request")
	})
}

// linkHeader serves f's page with a Link rel="next" header to next(f, other).
func linkHeader(next func(f kindFixture, other string) string) func(f kindFixture, other string) http.HandlerFunc {
	return func(f kindFixture, other string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "<"+next(f, other)+`>; rel="next"`)
			serveKind(f)(w, r)
		}
	}
}
