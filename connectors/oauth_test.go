package connectors_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// Helpers shared by the tests of the OAuth connectors (amazon, ebay) and the
// other platform connectors.

// secretFile writes a secret to a file and returns its reference (a file,
// not t.Setenv, so tests can run in parallel).
func secretFile(t *testing.T, secret string) config.CredentialRef {
	t.Helper()
	file := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(file, []byte(secret+"\n"), 0o600))
	return config.CredentialRef{File: file}
}

// fixture reads connectors/testdata/<name>.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// writeBody answers with a status, headers and a body.
func writeBody(w http.ResponseWriter, status int, body []byte, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// tokenServer plays an OAuth token endpoint that issues tok-1, tok-2, ...
// and checks each refresh request with check.
type tokenServer struct {
	t         *testing.T
	calls     atomic.Int32
	expiresIn int
	delay     time.Duration
	check     func(t *testing.T, r *http.Request)

	mu     sync.Mutex
	reject []byte // when set, answer 400 with this body
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.calls.Add(1)
	assert.Equal(s.t, http.MethodPost, r.Method)
	assert.Equal(s.t, "application/x-www-form-urlencoded", r.Header.Get("Content-Type"))
	assert.NoError(s.t, r.ParseForm())
	if s.check != nil {
		s.check(s.t, r)
	}
	time.Sleep(s.delay)
	s.mu.Lock()
	reject := s.reject
	s.mu.Unlock()
	if reject != nil {
		writeBody(w, http.StatusBadRequest, reject)
		return
	}
	body, _ := json.Marshal(map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "bearer", "expires_in": s.expiresIn})
	writeBody(w, http.StatusOK, body)
}

func (s *tokenServer) setReject(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reject = body
}

// oauthSecret is the JSON credential of the refresh-token connectors.
const oauthSecret = `{"client_id":"amzn1.application-oa2-client.abc","client_secret":"s3cr3t-client","refresh_token":"Atzr|refresh-me"}`

func TestOAuthSecretErrorsNeverShowTheSecret(t *testing.T) {
	for _, tc := range []struct{ secret, want string }{
		{`Atzr|not-json-at-all`, "the secret must be a JSON object with client_id, client_secret, refresh_token"},
		{`{"client_id":"id-123","client_secret":"","refresh_token":"Atzr|x"}`, "missing or empty: client_secret"},
	} {
		p := config.Platform{Name: "amz", Kind: "amazon", Endpoint: "https://sellingpartnerapi-eu.amazon.com", PageSize: 100,
			Credentials: secretFile(t, tc.secret), Options: map[string]any{"marketplace_ids": []any{"A1PA6795UKMFR9"}}}
		_, err := connectors.New(p)
		require.ErrorContains(t, err, tc.want)
		require.ErrorContains(t, err, "credentials file:")
		require.NotContains(t, err.Error(), "Atzr")
		require.NotContains(t, err.Error(), "id-123")
	}
}
