package activities

import (
	"context"
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

	"github.com/ordersync/ordersync/accounts"
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
	_, err := env.ExecuteActivity(acts.FetchPage, FetchPageInput{Platform: p.Settings(), SliceID: "slice/" + p.Name + "/x", From: t0, To: t0.Add(time.Hour), Page: 1})
	return err
}

// TestConnectorCacheSendsSecretsOnlyWhereTheFileSays sends the settings a
// `config` signal could carry through the page activity of a worker that
// declares shop: whatever the input says of kind, endpoint, credentials
// or options is not used; the one request goes to the declared endpoint
// with the declared credential, and the other host is never asked.
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
	reg := accounts.NewMemory()
	entry, err := accounts.PlatformEntry(declared, accounts.Active)
	require.NoError(t, err)
	_, err = reg.Put(context.Background(), entry, 0)
	require.NoError(t, err)
	dir := accounts.NewDirectory(reg, time.Hour, nil)

	tests := []struct {
		name   string
		change func(p *config.Platform)
	}{
		{"the declared settings", func(*config.Platform) {}},
		{"tuning may differ", func(p *config.Platform) {
			p.PageSize, p.Interval, p.Retries, p.RateLimit = 7, config.Duration(time.Hour), 9, config.RateLimit{RPS: 3, Burst: 2}
			p.Windows, p.TaskQueue = []string{"* 00:00-24:00"}, "elsewhere"
		}},
		{"another endpoint", func(p *config.Platform) { p.Endpoint = evil.srv.URL + "/shops/x" }},
		{"another environment variable", func(p *config.Platform) { p.Credentials = config.CredentialRef{Env: "ORDERSYNC_TEST_STORE_DSN"} }},
		{"another variable and endpoint", func(p *config.Platform) {
			p.Endpoint, p.Credentials = evil.srv.URL+"/shops/x", config.CredentialRef{Env: "ORDERSYNC_TEST_STORE_DSN"}
		}},
		{"a file", func(p *config.Platform) { p.Credentials = config.CredentialRef{File: secretFile} }},
		{"another kind", func(p *config.Platform) { p.Kind = "http" }},
		{"an option the file lacks", func(p *config.Platform) { p.Options = map[string]any{"api_version": 1, "token_url": evil.srv.URL} }},
		{"plain text allowed", func(p *config.Platform) { p.AllowPlaintext = true }},
		{"no options", func(p *config.Platform) { p.Options = nil }},
	}
	for _, source := range []struct {
		name     string
		declared DeclaredPlatforms
	}{{"file", file}, {"registry", dir}} {
		for _, tt := range tests {
			t.Run(source.name+"/"+tt.name, func(t *testing.T) {
				before := len(legit.requests())
				p := declared
				tt.change(&p)
				require.NoError(t, fetchOnce(t, source.declared, p))
				require.Equal(t, []string{"Bearer " + shopToken}, legit.requests()[before:], "one request, with the declared credential")
				require.Empty(t, evil.requests(), "the other host is never asked")
			})
		}
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
	require.ErrorContains(t, err, "retried until")
}

// TestUndeclaredPlatformIsRetriedUntilRegistered: a worker whose registry
// does not hold sim-b answers a retryable error naming the registry, with
// nothing sent; once sim-b is registered the next attempt fetches with its
// credential; once it is removed, attempts fail for good, with nothing
// sent.
func TestUndeclaredPlatformIsRetriedUntilRegistered(t *testing.T) {
	t.Setenv("ORDERSYNC_TEST_SIM_B_TOKEN", "token-b")
	b := newRecordingPlatform(t)
	simB := testPlatform()
	simB.Name, simB.Endpoint = "sim-b", b.srv.URL+"/shops/sim-b"
	simB.Credentials = config.CredentialRef{Env: "ORDERSYNC_TEST_SIM_B_TOKEN"}
	reg := accounts.NewMemory()
	dir := accounts.NewDirectory(reg, time.Hour, nil)
	ctx := context.Background()

	err := fetchOnce(t, dir, simB)
	requireNotDeclared(t, err, "sim-b: not in the account registry")
	require.Empty(t, b.requests(), "nothing sent")

	entry, err := accounts.PlatformEntry(simB, accounts.Active)
	require.NoError(t, err)
	rev, err := reg.Put(ctx, entry, 0)
	require.NoError(t, err)
	require.NoError(t, fetchOnce(t, dir, simB), "registered: fetched")
	require.Equal(t, []string{"Bearer token-b"}, b.requests())

	entry.State = accounts.Removed
	_, err = reg.Put(ctx, entry, rev)
	require.NoError(t, err)
	fresh := accounts.NewDirectory(reg, time.Hour, nil) // a directory that has not cached sim-b
	err = fetchOnce(t, fresh, simB)
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "%v", err)
	require.Equal(t, ErrPermanent, appErr.Type())
	require.ErrorContains(t, err, "removed from the registry")
	require.Len(t, b.requests(), 1, "nothing sent for a removed platform")
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
