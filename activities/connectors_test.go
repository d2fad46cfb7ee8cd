package activities

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ordersync/ordersync/config"
)

// recordingPlatform answers every request with an empty page of the
// simulator's API and remembers the Authorization header it was sent.
type recordingPlatform struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string
}

func newRecordingPlatform(t *testing.T) *recordingPlatform {
	t.Helper()
	r := &recordingPlatform{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"orders":[]}`))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recordingPlatform) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

// fetchOnce runs FetchPage for p through a real ConnectorCache that
// trusts declared.
func fetchOnce(t *testing.T, declared DeclaredPlatforms, p config.Platform) error {
	t.Helper()
	acts := &Activities{Connectors: NewConnectorCache(declared), Limiters: NewLimiters()}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	_, err := env.ExecuteActivity(acts.FetchPage, FetchPageInput{Platform: p, SliceID: "slice/" + p.Name + "/x", From: t0, To: t0.Add(time.Hour), Page: 1})
	return err
}

// TestConnectorCacheSendsSecretsOnlyWhereTheFileSays sends the settings a
// `config` signal could carry through the page activity of a worker whose
// platforms file declares shop: only tuning may differ from the file;
// anything that would send a credential elsewhere, or another credential,
// is a permanent error naming the platform and field, and no request
// leaves the worker.
func TestConnectorCacheSendsSecretsOnlyWhereTheFileSays(t *testing.T) {
	const shopToken, storeDSN, fileSecret = "shop-token-1", "postgres://u:db-password@db/x", "file-secret-2"
	t.Setenv("ORDERSYNC_TEST_SHOP_TOKEN", shopToken)
	t.Setenv("ORDERSYNC_TEST_STORE_DSN", storeDSN)
	secretFile := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(fileSecret), 0o600))

	legit, evil := newRecordingPlatform(t), newRecordingPlatform(t)
	declared := testPlatform()
	declared.Endpoint = legit.srv.URL + "/shops/x"
	declared.Credentials = config.CredentialRef{Env: "ORDERSYNC_TEST_SHOP_TOKEN"}
	declared.Options = map[string]any{"api_version": 1}
	file := &config.File{Platforms: []config.Platform{declared}}

	tests := []struct {
		name   string
		change func(p *config.Platform)
		field  string // "" when the request must go through
	}{
		{"the declared settings", func(*config.Platform) {}, ""},
		{"tuning may differ", func(p *config.Platform) {
			p.PageSize, p.Interval, p.Retries, p.RateLimit = 7, config.Duration(time.Hour), 9, config.RateLimit{RPS: 3, Burst: 2}
			p.Windows, p.TaskQueue = []string{"* 00:00-24:00"}, "elsewhere"
		}, ""},
		{"options equal after a JSON round trip", func(p *config.Platform) { p.Options = map[string]any{"api_version": 1.0} }, ""},
		{"another endpoint", func(p *config.Platform) { p.Endpoint = evil.srv.URL + "/shops/x" }, "endpoint"},
		{"another environment variable", func(p *config.Platform) { p.Credentials = config.CredentialRef{Env: "ORDERSYNC_TEST_STORE_DSN"} }, "credentials"},
		{"another variable and endpoint", func(p *config.Platform) {
			p.Endpoint, p.Credentials = evil.srv.URL+"/shops/x", config.CredentialRef{Env: "ORDERSYNC_TEST_STORE_DSN"}
		}, "endpoint"},
		{"a file", func(p *config.Platform) { p.Credentials = config.CredentialRef{File: secretFile} }, "credentials"},
		{"another kind", func(p *config.Platform) { p.Kind = "http" }, "kind"},
		{"an option the file lacks", func(p *config.Platform) { p.Options = map[string]any{"api_version": 1, "token_url": evil.srv.URL} }, "options.token_url"},
		{"a changed option", func(p *config.Platform) { p.Options = map[string]any{"api_version": "2"} }, "options.api_version"},
		{"no options", func(p *config.Platform) { p.Options = nil }, "options.api_version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(legit.requests())
			p := declared
			tt.change(&p)
			err := fetchOnce(t, file, p)
			if tt.field == "" {
				require.NoError(t, err)
				require.Equal(t, []string{"Bearer " + shopToken}, legit.requests()[before:], "one request, with the declared credential")
				return
			}
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, ErrPermanent, appErr.Type())
			require.True(t, appErr.NonRetryable())
			require.Contains(t, err.Error(), `shop: field "`+tt.field+`" of the settings differs from this worker's platforms file`)
			for _, secret := range []string{shopToken, storeDSN, fileSecret} {
				require.NotContains(t, err.Error(), secret)
			}
			require.Len(t, legit.requests(), before, "nothing sent")
			require.Empty(t, evil.requests(), "nothing sent")
		})
	}

	t.Run("a platform the file does not declare", func(t *testing.T) {
		p := declared
		p.Name = "other"
		p.Endpoint = evil.srv.URL + "/shops/x"
		requireNotDeclared(t, fetchOnce(t, file, p), "other: not declared in this worker's platforms file")
		require.Empty(t, evil.requests())
	})
	t.Run("a cache that declares nothing trusts nothing", func(t *testing.T) {
		requireNotDeclared(t, fetchOnce(t, nil, declared), "shop: this worker has no platforms file")
		require.Empty(t, evil.requests())
	})
}

// requireNotDeclared: a platform the worker's file lacks is retried
// (workers on one task queue may read different files), never permanent,
// and the error says so.
func requireNotDeclared(t *testing.T, err error, text string) {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, ErrNotDeclared, appErr.Type())
	require.False(t, appErr.NonRetryable(), "a platform another worker may declare must be retried")
	require.ErrorContains(t, err, text)
	require.ErrorContains(t, err, "retried until a worker")
}

// TestUndeclaredPlatformIsRetriedUntilAWorkerDeclaresIt: two workers share
// a task queue, one of them without sim-b in its file. Its attempt is a
// retryable error naming its file and the platform, with nothing sent; the
// next attempt, once the file declares sim-b (another worker's, or this
// one's after an edit), fetches with the file's credential.
func TestUndeclaredPlatformIsRetriedUntilAWorkerDeclaresIt(t *testing.T) {
	t.Setenv("ORDERSYNC_TEST_SIM_A_TOKEN", "token-a")
	t.Setenv("ORDERSYNC_TEST_SIM_B_TOKEN", "token-b")
	a, b := newRecordingPlatform(t), newRecordingPlatform(t)
	path := filepath.Join(t.TempDir(), "platforms.yaml")
	entry := func(name string, r *recordingPlatform, env string) string {
		return "  " + name + ":\n    kind: sim\n    endpoint: " + r.srv.URL + "/shops/" + name + "\n    credentials: {env: " + env + "}\n"
	}
	withoutB := "platforms:\n" + entry("sim-a", a, "ORDERSYNC_TEST_SIM_A_TOKEN")
	withB := withoutB + entry("sim-b", b, "ORDERSYNC_TEST_SIM_B_TOKEN")
	require.NoError(t, os.WriteFile(path, []byte(withoutB), 0o600))
	watched, err := config.WatchFile(path, time.Hour, nil)
	require.NoError(t, err)

	other := filepath.Join(t.TempDir(), "other.yaml")
	require.NoError(t, os.WriteFile(other, []byte(withB), 0o600))
	full, err := config.LoadFile(other)
	require.NoError(t, err)
	simB, ok := full.Get("sim-b")
	require.True(t, ok)

	err = fetchOnce(t, watched, simB)
	requireNotDeclared(t, err, "sim-b: not declared in this worker's platforms file "+path)
	require.Empty(t, b.requests(), "nothing sent")

	require.NoError(t, fetchOnce(t, full, simB), "a worker whose file declares sim-b takes the retry")
	require.NoError(t, os.WriteFile(path, []byte(withB), 0o600))
	require.NoError(t, fetchOnce(t, watched, simB), "this worker, once its file declares sim-b")
	require.Equal(t, []string{"Bearer token-b", "Bearer token-b"}, b.requests())
}

// TestNotDeclaredQuotesAHostileName: a platform name from workflow input
// that no file could declare reaches the error quoted and clipped.
func TestNotDeclaredQuotesAHostileName(t *testing.T) {
	name := "\x1b]0;owned\x07" + strings.Repeat("x", 5000)
	msg := (&NotDeclaredError{Platform: name, File: "/etc/ordersync/platforms.yaml"}).Error()
	require.NotContains(t, msg, "\x1b")
	require.NotContains(t, msg, "\x07")
	require.Less(t, len(msg), 600)
	require.Contains(t, msg, "/etc/ordersync/platforms.yaml")
}

// TestConnectorCacheFollowsTheWatchedFile: an operator who changes the
// endpoint in the platforms file is trusted at once (the cache looks at
// the file again before refusing), and the old endpoint is refused from
// then on.
func TestConnectorCacheFollowsTheWatchedFile(t *testing.T) {
	t.Setenv("ORDERSYNC_TEST_SHOP_TOKEN", "tok")
	oldSrv, newSrv := newRecordingPlatform(t), newRecordingPlatform(t)
	path := filepath.Join(t.TempDir(), "platforms.yaml")
	write := func(endpoint string) {
		yaml := "platforms:\n  shop:\n    kind: sim\n    endpoint: " + endpoint + "\n    credentials: {env: ORDERSYNC_TEST_SHOP_TOKEN}\n"
		require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	}
	write(oldSrv.srv.URL + "/shops/x")
	watched, err := config.WatchFile(path, time.Hour, nil)
	require.NoError(t, err)
	p, ok := watched.Get("shop")
	require.True(t, ok)
	require.NoError(t, fetchOnce(t, watched, p))

	// The size differs, so the change is seen even within one mtime tick.
	write(newSrv.srv.URL + "/shops/renamed")
	moved := p
	moved.Endpoint = newSrv.srv.URL + "/shops/renamed"
	require.NoError(t, fetchOnce(t, watched, moved))
	require.Len(t, newSrv.requests(), 1)
	require.ErrorContains(t, fetchOnce(t, watched, p), `field "endpoint" of the settings differs`)
	require.Len(t, oldSrv.requests(), 1, "only the request made before the edit")
}
