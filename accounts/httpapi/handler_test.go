package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/accounts/accountstest"
	"github.com/ordersync/ordersync/config"
)

const testToken = "test-token-0123456789abcdef"

type fixture struct {
	h   *Handler
	reg *accounts.Memory
	eng *accountstest.Engine
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg, eng := accounts.NewMemory(), &accountstest.Engine{}
	h, err := New(&accounts.Service{Registry: reg, Engine: eng}, Options{Token: testToken})
	require.NoError(t, err)
	return &fixture{h: h, reg: reg, eng: eng}
}

type answer struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (f *fixture) do(t *testing.T, method, path string, body any, header ...string) answer {
	t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header(), raw: rec.Body.Bytes()}
	if len(a.raw) > 0 {
		require.NoError(t, json.Unmarshal(a.raw, &a.body), "answer is not JSON: %s", a.raw)
	}
	return a
}

func (f *fixture) revision(t *testing.T) int64 {
	rev, err := f.reg.Revision(context.Background())
	require.NoError(t, err)
	return rev
}

func simPlatform(name string) map[string]any {
	return map[string]any{"name": name, "kind": "sim", "endpoint": "http://127.0.0.1:8780/shops/" + name,
		"credentials": map[string]any{"env": "SIM_TOKEN"}}
}

// problems returns the answer's problems as "platform/field" keys.
func (a answer) problems() []string {
	var out []string
	list, _ := a.body["problems"].([]any)
	for _, p := range list {
		m := p.(map[string]any)
		out = append(out, fmt.Sprint(m["platform"], "/", m["field"]))
	}
	return out
}

func TestNewRefusesShortToken(t *testing.T) {
	_, err := New(&accounts.Service{Registry: accounts.NewMemory(), Engine: &accountstest.Engine{}}, Options{Token: "short"})
	require.Error(t, err)
}

func TestHealthzNeedsNoToken(t *testing.T) {
	f := newFixture(t)
	a := f.do(t, http.MethodGet, "/healthz", nil, "Authorization", "")
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "ok", a.body["status"])
}

// Every route refuses a missing, wrong or non-bearer token before it
// reads or writes anything.
func TestAuthRefusesAndWritesNothing(t *testing.T) {
	f := newFixture(t)
	for _, auth := range []string{"", "Bearer wrong-token-0123456789abcdef", "Basic " + testToken, testToken, "Bearer " + testToken + "x"} {
		for _, rt := range f.h.routes() {
			if rt.public {
				continue
			}
			path := strings.ReplaceAll(rt.path, "{name}", "sim-a")
			a := f.do(t, rt.method, path, simPlatform("sim-a"), "Authorization", auth)
			require.Equal(t, http.StatusUnauthorized, a.status, "%s %s with %q", rt.method, path, auth)
			require.Contains(t, a.header.Get("WWW-Authenticate"), "Bearer")
			require.Contains(t, a.body["error"], "bearer token")
		}
		// Unknown paths too: no route enumeration without the token.
		require.Equal(t, http.StatusUnauthorized, f.do(t, http.MethodGet, "/v1/secret", nil, "Authorization", auth).status)
	}
	require.Zero(t, f.revision(t), "a refused request wrote the registry")
	require.Empty(t, f.eng.Took(), "a refused request reached the engine")
}

func TestAddGetList(t *testing.T) {
	f := newFixture(t)
	body := simPlatform("sim-a")
	body["rate_limit"] = map[string]any{"rps": 0.5, "burst": 3}
	body["interval"] = "10m"
	a := f.do(t, http.MethodPost, "/v1/platforms", body)
	require.Equal(t, http.StatusCreated, a.status, "%s", a.raw)
	require.Equal(t, "/v1/platforms/sim-a", a.header.Get("Location"))
	require.Equal(t, `"1"`, a.header.Get("ETag"))
	require.Equal(t, "active", a.body["state"])
	require.Equal(t, "orders-sim", a.body["task_queue"], "the kind's default task queue")
	require.NotEmpty(t, a.body["updated_at"], "the answer is the stored entry")
	require.Equal(t, []string{"start sim-a"}, f.eng.Took())

	got := f.do(t, http.MethodGet, "/v1/platforms/sim-a", nil)
	require.Equal(t, http.StatusOK, got.status)
	settings := got.body["settings"].(map[string]any)
	require.Equal(t, "10m0s", settings["interval"])
	require.Equal(t, map[string]any{"rps": 0.5, "burst": 3.0}, settings["rate_limit"])
	require.NotEmpty(t, settings["retries"], "ordersync's defaults fill what the body leaves out")

	// The same platform built from a platforms file: one path, one result.
	file, err := config.Parse([]byte("platforms:\n  sim-a:\n    kind: sim\n    endpoint: http://127.0.0.1:8780/shops/sim-a\n" +
		"    credentials: {env: SIM_TOKEN}\n    interval: 10m\n    rate_limit: {rps: 0.5, burst: 3}\n"))
	require.NoError(t, err)
	want, err := json.Marshal(file.Platforms[0])
	require.NoError(t, err)
	stored, _, _ := f.reg.Get(context.Background(), accounts.ClassPlatform, "sim-a")
	require.JSONEq(t, string(want), string(stored.Settings))

	for _, n := range []string{"sim-b", "sim-c", "sim-d"} {
		require.Equal(t, http.StatusCreated, f.do(t, http.MethodPost, "/v1/platforms?paused="+fmt.Sprint(n == "sim-c"), simPlatform(n)).status)
	}
	require.Contains(t, f.eng.Took(), "pause sim-c (added paused)")

	page := f.do(t, http.MethodGet, "/v1/platforms?limit=2", nil)
	require.Equal(t, http.StatusOK, page.status)
	require.Equal(t, []string{"sim-a", "sim-b"}, names(page))
	require.Equal(t, "sim-b", page.body["next"])
	page = f.do(t, http.MethodGet, "/v1/platforms?limit=2&after=sim-b", nil)
	require.Equal(t, []string{"sim-c", "sim-d"}, names(page))
	require.Nil(t, page.body["next"], "the last page has no next")
	page = f.do(t, http.MethodGet, "/v1/platforms?state=paused", nil)
	require.Equal(t, []string{"sim-c"}, names(page))
	page = f.do(t, http.MethodGet, "/v1/platforms?kind=shopify&task_queue=orders-sim", nil)
	require.Empty(t, names(page))

	for q, field := range map[string]string{"state=gone": "state", "limit=0": "limit", "limit=1001": "limit", "prune=true": "prune"} {
		a := f.do(t, http.MethodGet, "/v1/platforms?"+q, nil)
		require.Equal(t, http.StatusBadRequest, a.status, q)
		require.Equal(t, []string{"<nil>/" + field}, a.problems(), q)
	}
	require.Equal(t, http.StatusNotFound, f.do(t, http.MethodGet, "/v1/platforms/sim-zz", nil).status)
}

func names(a answer) []string {
	var out []string
	for _, e := range a.body["platforms"].([]any) {
		out = append(out, e.(map[string]any)["name"].(string))
	}
	return out
}

// Invalid settings are refused with one problem per field, and nothing
// is written or started.
func TestAddValidationNamesTheField(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		body   any
		fields []string
	}{
		{"bad duration", merge(simPlatform("sim-a"), map[string]any{"interval": "soon"}), []string{"sim-a/interval"}},
		{"unknown field", merge(simPlatform("sim-a"), map[string]any{"bogus": 1}), []string{"sim-a/bogus"}},
		{"nested unknown", merge(simPlatform("sim-a"), map[string]any{"rate_limit": map[string]any{"rsp": 1}}), []string{"sim-a/rate_limit.rsp"}},
		{"two problems", merge(simPlatform("sim-a"), map[string]any{"retries": -1, "concurrency": "many"}), []string{"sim-a/concurrency", "sim-a/retries"}},
		{"no name", map[string]any{"kind": "sim"}, []string{"<nil>/name"}},
		{"bad name", simPlatform("Sim A"), []string{"Sim A/name"}},
		{"unknown kind", merge(simPlatform("sim-a"), map[string]any{"kind": "magento"}), []string{"sim-a/kind"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := f.do(t, http.MethodPost, "/v1/platforms", c.body)
			require.Equal(t, http.StatusBadRequest, a.status, "%s", a.raw)
			got := a.problems()
			for _, want := range c.fields {
				require.Contains(t, got, want, "%s", a.raw)
			}
			require.NotEmpty(t, a.body["error"])
		})
	}
	for _, body := range []string{"", "[1]", "null", `{"name":"a"} {"name":"b"}`, "{", strings.Repeat("[", 40) + strings.Repeat("]", 40)} {
		a := f.do(t, http.MethodPost, "/v1/platforms", body)
		require.Equal(t, http.StatusBadRequest, a.status, "%q: %s", body, a.raw)
	}
	require.Zero(t, f.revision(t))
	require.Empty(t, f.eng.Took())
}

func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func TestAddExistingAndRemovedNames(t *testing.T) {
	f := newFixture(t)
	require.Equal(t, http.StatusCreated, f.do(t, http.MethodPost, "/v1/platforms", simPlatform("sim-a")).status)
	a := f.do(t, http.MethodPost, "/v1/platforms", simPlatform("sim-a"))
	require.Equal(t, http.StatusConflict, a.status)
	require.Contains(t, a.body["error"], "already registered")

	del := f.do(t, http.MethodDelete, "/v1/platforms/sim-a", nil)
	require.Equal(t, http.StatusOK, del.status, "%s", del.raw)
	require.Equal(t, "removed", del.body["state"])
	rev := f.revision(t)
	f.eng.Took()

	// A removed name is not taken again by accident...
	a = f.do(t, http.MethodPost, "/v1/platforms", simPlatform("sim-a"))
	require.Equal(t, http.StatusConflict, a.status)
	require.Contains(t, a.body["hint"], "reuse_removed=true")
	a = f.do(t, http.MethodPost, "/v1/platforms:apply", map[string]any{"platforms": []any{simPlatform("sim-a")}})
	require.Equal(t, http.StatusConflict, a.status, "%s", a.raw)
	require.Equal(t, rev, f.revision(t))
	require.Empty(t, f.eng.Took())
	// ...and edits, pauses and removals of it are refused.
	for _, m := range [][2]string{{http.MethodPatch, "/v1/platforms/sim-a"}, {http.MethodPost, "/v1/platforms/sim-a/pause"},
		{http.MethodPost, "/v1/platforms/sim-a/resume"}, {http.MethodDelete, "/v1/platforms/sim-a"}} {
		a := f.do(t, m[0], m[1], map[string]any{"interval": "5m"})
		if m[0] != http.MethodPatch {
			a = f.do(t, m[0], m[1], nil)
		}
		require.Equal(t, http.StatusConflict, a.status, "%s %s: %s", m[0], m[1], a.raw)
		require.Contains(t, a.body["error"], "removed")
	}
	// It is still readable, as a tombstone.
	require.Equal(t, "removed", f.do(t, http.MethodGet, "/v1/platforms/sim-a", nil).body["state"])

	// ...only explicitly.
	a = f.do(t, http.MethodPost, "/v1/platforms?reuse_removed=true", simPlatform("sim-a"))
	require.Equal(t, http.StatusCreated, a.status, "%s", a.raw)
	require.Equal(t, "active", a.body["state"])
	require.Equal(t, []string{"start sim-a"}, f.eng.Took())
	require.Equal(t, http.StatusBadRequest, f.do(t, http.MethodPost, "/v1/platforms?reuse_removed=maybe", simPlatform("sim-b")).status)
}

func TestEditMergeAndIfMatch(t *testing.T) {
	f := newFixture(t)
	require.Equal(t, http.StatusCreated, f.do(t, http.MethodPost, "/v1/platforms", merge(simPlatform("sim-a"), map[string]any{"lag_alert": "30m"})).status)
	f.eng.Took()
	read := f.do(t, http.MethodGet, "/v1/platforms/sim-a", nil)
	etag := read.header.Get("ETag")

	// A merge patch: nested keys merge, null unsets.
	a := f.do(t, http.MethodPatch, "/v1/platforms/sim-a", map[string]any{"rate_limit": map[string]any{"rps": 2}, "lag_alert": nil, "interval": "5m"},
		"If-Match", etag)
	require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
	settings := a.body["settings"].(map[string]any)
	require.Equal(t, "5m0s", settings["interval"])
	require.Equal(t, 2.0, settings["rate_limit"].(map[string]any)["rps"])
	require.NotZero(t, settings["rate_limit"].(map[string]any)["burst"], "burst kept by the merge")
	require.Nil(t, settings["lag_alert"])
	require.Equal(t, []string{"reconfigure sim-a"}, f.eng.Took())
	rev := f.revision(t)

	// The stale ETag is now a conflict, and nothing is written.
	a = f.do(t, http.MethodPatch, "/v1/platforms/sim-a", map[string]any{"interval": "7m"}, "If-Match", etag)
	require.Equal(t, http.StatusConflict, a.status, "%s", a.raw)
	require.Contains(t, a.body["hint"], "If-Match")
	a = f.do(t, http.MethodPatch, "/v1/platforms/sim-a?revision=1", map[string]any{"interval": "7m"})
	require.Equal(t, http.StatusConflict, a.status)
	require.Equal(t, rev, f.revision(t))
	require.Empty(t, f.eng.Took())

	// Refusals that name the field.
	for _, c := range []struct {
		path   string
		body   any
		header []string
		field  string
	}{
		{"/v1/platforms/sim-a", map[string]any{"interval": "soon"}, nil, "sim-a/interval"},
		{"/v1/platforms/sim-a", map[string]any{"bogus": true}, nil, "sim-a/bogus"},
		{"/v1/platforms/sim-a", map[string]any{"retries": -5}, nil, "sim-a/retries"},
		{"/v1/platforms/sim-a", map[string]any{"name": "sim-b"}, nil, "<nil>/name"},
		{"/v1/platforms/sim-a", map[string]any{}, nil, "<nil>/<nil>"},
		{"/v1/platforms/sim-a", map[string]any{"interval": "7m"}, []string{"If-Match", "seven"}, "<nil>/If-Match"},
		{"/v1/platforms/sim-a?revision=3", map[string]any{"interval": "7m"}, []string{"If-Match", `"2"`}, "<nil>/revision"},
	} {
		a := f.do(t, http.MethodPatch, c.path, c.body, c.header...)
		require.Equal(t, http.StatusBadRequest, a.status, "%v: %s", c.body, a.raw)
		require.Contains(t, a.problems(), c.field, "%s", a.raw)
	}
	require.Equal(t, rev, f.revision(t))
	require.Empty(t, f.eng.Took())

	// The current revision goes through, quoted or not.
	a = f.do(t, http.MethodPatch, "/v1/platforms/sim-a", map[string]any{"interval": "7m"}, "If-Match", fmt.Sprint(rev))
	require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
	require.Equal(t, http.StatusNotFound, f.do(t, http.MethodPatch, "/v1/platforms/sim-zz", map[string]any{"interval": "7m"}).status)
}

func TestPauseResumeRemove(t *testing.T) {
	f := newFixture(t)
	require.Equal(t, http.StatusCreated, f.do(t, http.MethodPost, "/v1/platforms", simPlatform("sim-a")).status)
	f.eng.Took()

	a := f.do(t, http.MethodPost, "/v1/platforms/sim-a/pause", map[string]any{"reason": "merchant\x1b[2J on holiday"})
	require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
	require.Equal(t, "paused", a.body["state"])
	require.Equal(t, []string{"pause sim-a (merchant [2J on holiday)"}, f.eng.Took(), "the reason reaches history as one clean line")
	require.Equal(t, http.StatusBadRequest, f.do(t, http.MethodPost, "/v1/platforms/sim-a/pause", map[string]any{"why": "x"}).status)
	require.Equal(t, http.StatusBadRequest, f.do(t, http.MethodPost, "/v1/platforms/sim-a/pause", map[string]any{"reason": strings.Repeat("x", 201)}).status)

	a = f.do(t, http.MethodPost, "/v1/platforms/sim-a/resume", nil)
	require.Equal(t, http.StatusOK, a.status)
	require.Equal(t, "active", a.body["state"])
	require.Equal(t, []string{"resume sim-a"}, f.eng.Took())

	a = f.do(t, http.MethodDelete, "/v1/platforms/sim-a?discard_dead_letters=true", nil)
	require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
	require.Equal(t, "removed", a.body["state"])
	require.Equal(t, []string{"stop sim-a discard=true"}, f.eng.Took())

	for _, p := range []string{"/v1/platforms/sim-zz/pause", "/v1/platforms/sim-zz/resume"} {
		require.Equal(t, http.StatusNotFound, f.do(t, http.MethodPost, p, nil).status)
	}
	require.Equal(t, http.StatusNotFound, f.do(t, http.MethodDelete, "/v1/platforms/sim-zz", nil).status)
	require.Empty(t, f.eng.Took())
}

func TestApply(t *testing.T) {
	f := newFixture(t)
	require.Equal(t, http.StatusCreated, f.do(t, http.MethodPost, "/v1/platforms", simPlatform("sim-old")).status)
	f.eng.Took()
	rev := f.revision(t)
	file := map[string]any{
		"default":   map[string]any{"kind": "sim", "interval": "15m"},
		"platforms": []any{map[string]any{"name": "sim-a", "endpoint": "http://127.0.0.1:8780/shops/a", "credentials": map[string]any{"env": "A"}}},
	}
	a := f.do(t, http.MethodPost, "/v1/platforms:apply?prune=true&dry_run=true", file)
	require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
	require.Equal(t, true, a.body["dry_run"])
	require.Equal(t, []any{map[string]any{"platform": "sim-a", "action": "add"}, map[string]any{"platform": "sim-old", "action": "remove"}}, a.body["changes"])
	require.Equal(t, rev, f.revision(t), "a dry run writes nothing")
	require.Empty(t, f.eng.Took())

	a = f.do(t, http.MethodPost, "/v1/platforms:apply?prune=true", file)
	require.Equal(t, http.StatusOK, a.status, "%s", a.raw)
	require.Len(t, a.body["changes"], 2)
	require.ElementsMatch(t, []string{"start sim-a", "stop sim-old discard=false"}, f.eng.Took())
	got := f.do(t, http.MethodGet, "/v1/platforms/sim-a", nil)
	require.Equal(t, "15m0s", got.body["settings"].(map[string]any)["interval"], "the default block applies")

	// Refusals.
	dup := map[string]any{"platforms": []any{simPlatform("sim-x"), simPlatform("sim-x")}}
	a = f.do(t, http.MethodPost, "/v1/platforms:apply", dup)
	require.Equal(t, http.StatusBadRequest, a.status)
	require.Equal(t, []string{"sim-x/platforms[1].name"}, a.problems())
	for body, field := range map[string]string{
		`{"platforms": []}`:                 "<nil>/platforms",
		`{"platforms": {"a": {}}}`:          "<nil>/platforms",
		`{"platforms": [{"kind": "sim"}]}`:  "<nil>/platforms[0].name",
		`{"platforms": [1]}`:                "<nil>/platforms[0]",
		`{"default": 1, "platforms": [{}]}`: "<nil>/default",
		`{"platform": []}`:                  "<nil>/platform",
		`{"platforms": [{"name": "sim-y", "kind": "sim", "interval": "x"}]}`: "sim-y/interval",
	} {
		a := f.do(t, http.MethodPost, "/v1/platforms:apply", body)
		require.Equal(t, http.StatusBadRequest, a.status, "%s: %s", body, a.raw)
		require.Contains(t, a.problems(), field, "%s: %s", body, a.raw)
	}
	require.Empty(t, f.eng.Took())
}

func TestBodyTooLarge(t *testing.T) {
	f := newFixture(t)
	big := merge(simPlatform("sim-a"), map[string]any{"options": map[string]any{"pad": strings.Repeat("x", MaxBody)}})
	a := f.do(t, http.MethodPost, "/v1/platforms", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%s", a.raw)
	a = f.do(t, http.MethodPatch, "/v1/platforms/sim-a", big)
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	a = f.do(t, http.MethodPost, "/v1/platforms:apply", map[string]any{"platforms": []any{map[string]any{"name": "a", "pad": strings.Repeat("x", config.MaxFileSize)}}})
	require.Equal(t, http.StatusRequestEntityTooLarge, a.status)
	require.Zero(t, f.revision(t))
	require.Empty(t, f.eng.Took())
}

// A name holding escape sequences, and long, comes back escaped and
// clipped: curl shows \x1b, not a terminal command, and the answer stays small.
func TestHostileNamesAreEscapedAndClipped(t *testing.T) {
	f := newFixture(t)
	hostile := "\x1b]0;owned\x07\x1b[2J\u009b31m\u202e" + strings.Repeat("n", 10_000)
	for _, a := range []answer{
		f.do(t, http.MethodPost, "/v1/platforms", simPlatform(hostile)),
		f.do(t, http.MethodPost, "/v1/platforms:apply", map[string]any{"platforms": []any{simPlatform(hostile), simPlatform(hostile)}}),
		f.do(t, http.MethodGet, "/v1/platforms/"+pathEscape(hostile), nil),
		f.do(t, http.MethodPatch, "/v1/platforms/"+pathEscape(hostile), map[string]any{"interval": "5m"}),
		f.do(t, http.MethodDelete, "/v1/platforms/"+pathEscape(hostile), nil),
		f.do(t, http.MethodPost, "/v1/platforms", merge(simPlatform("sim-a"), map[string]any{hostile: 1})),
	} {
		require.Contains(t, []int{http.StatusBadRequest, http.StatusNotFound}, a.status, "%s", a.raw)
		var text strings.Builder
		collect(a.body, &text)
		s := text.String()
		require.NotContains(t, s, "\x1b", "raw escape echoed: %q", s)
		require.NotContains(t, s, "\u009b")
		require.NotContains(t, s, "\u202e")
		require.Contains(t, s, `\x1b`, "the escape is shown, escaped")
		require.Less(t, len(a.raw), 8<<10, "the answer is clipped")
	}
	require.Zero(t, f.revision(t))
}

func pathEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// collect gathers every string of a decoded JSON answer.
func collect(v any, b *strings.Builder) {
	switch x := v.(type) {
	case string:
		b.WriteString(x + "\n")
	case map[string]any:
		for _, e := range x {
			collect(e, b)
		}
	case []any:
		for _, e := range x {
			collect(e, b)
		}
	}
}

// An engine step that fails after the registry write is a 502 that says
// what is registered and what to run.
func TestEngineFailureIs502WithFix(t *testing.T) {
	f := newFixture(t)
	f.eng.FailStep("start", errors.New("temporal: connection refused"))
	a := f.do(t, http.MethodPost, "/v1/platforms", simPlatform("sim-a"))
	require.Equal(t, http.StatusBadGateway, a.status, "%s", a.raw)
	require.Contains(t, a.body["fix"], "ordersync platform start sim-a")
	require.Equal(t, "sim-a", a.body["entry"].(map[string]any)["name"])
	require.Contains(t, a.body["error"], "connection refused")
	e, found, _ := f.reg.Get(context.Background(), accounts.ClassPlatform, "sim-a")
	require.True(t, found, "the registry keeps the platform")
	require.Equal(t, accounts.Active, e.State)
}

func TestUnknownRoutesAndMethodsAnswerJSON(t *testing.T) {
	f := newFixture(t)
	a := f.do(t, http.MethodGet, "/v1/nothing", nil)
	require.Equal(t, http.StatusNotFound, a.status)
	require.NotEmpty(t, a.body["error"])
	a = f.do(t, http.MethodPut, "/v1/platforms/sim-a", simPlatform("sim-a"))
	require.Equal(t, http.StatusMethodNotAllowed, a.status, "%s", a.raw)
	require.Contains(t, a.header.Get("Allow"), "PATCH")
	require.Equal(t, "application/json", a.header.Get("Content-Type"))
	require.Zero(t, f.revision(t))
}

// A caller that hangs up after the registry write does not cut the
// Temporal step that follows it.
func TestWriteOutlivesTheCaller(t *testing.T) {
	f := newFixture(t)
	b, err := json.Marshal(simPlatform("sim-a"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/platforms", bytes.NewReader(b)).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+testToken)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	require.Equal(t, []string{"start sim-a"}, f.eng.Took())
}
