package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/credtest"
)

// tokenServer plays an OAuth token endpoint over real HTTP with Shopify's
// rotation rules: every refresh returns a new pair; a spent refresh token
// may be spent again until its replacement is used (a lost answer is
// recoverable), after which it is retired (invalid_grant). In lwa mode
// the refresh token does not rotate.
type tokenServer struct {
	*httptest.Server
	clientID, clientSecret string
	ttl                    time.Duration
	lwa                    bool

	mu       sync.Mutex
	access   map[string]time.Time // access token → expiry
	refresh  map[string]*refreshState
	issued   []string // every secret issued, to look for in errors
	calls    int
	dropNext int // answers to issue and then drop (connection closed)
	problems []string
}

type refreshState struct {
	spent       int
	replacement string // the token issued when this one was spent
	retired     bool
	revoked     bool
	predecessor string
}

func newTokenServer(t *testing.T, ttl time.Duration, lwa bool) *tokenServer {
	s := &tokenServer{clientID: "client-id-1", clientSecret: "client-secret-" + randHex(8), ttl: ttl, lwa: lwa,
		access: map[string]time.Time{}, refresh: map[string]*refreshState{}}
	s.issued = append(s.issued, s.clientSecret)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// seed issues a first pair as an install would, its access token already
// expired when expired is set.
func (s *tokenServer) seed(expired bool) (access, refresh string, exp time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	access, refresh = "at-"+randHex(12), "rt-"+randHex(12)
	exp = time.Now().Add(s.ttl)
	if expired {
		exp = time.Now().Add(-time.Second)
	}
	s.access[access] = exp
	s.refresh[refresh] = &refreshState{}
	s.issued = append(s.issued, access, refresh)
	return access, refresh, exp
}

func (s *tokenServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	fail := func(code int, e string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":%q,"error_description":"the grant does not work"}`, e)
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "refresh_token" {
		fail(400, "invalid_request")
		return
	}
	if r.PostForm.Get("client_id") != s.clientID || r.PostForm.Get("client_secret") != s.clientSecret {
		fail(401, "invalid_client")
		return
	}
	rt := r.PostForm.Get("refresh_token")
	st, ok := s.refresh[rt]
	switch {
	case !ok || st.revoked:
		fail(400, "invalid_grant")
		return
	case st.retired:
		s.problems = append(s.problems, "a retired refresh token was spent again")
		fail(400, "invalid_grant")
		return
	}
	st.spent++
	if st.predecessor != "" {
		s.refresh[st.predecessor].retired = true
	}
	access := "at-" + randHex(12)
	s.access[access] = time.Now().Add(s.ttl)
	s.issued = append(s.issued, access)
	answer := map[string]any{"access_token": access, "expires_in": s.ttl.Seconds(), "scope": "read_orders"}
	if !s.lwa {
		next := "rt-" + randHex(12)
		s.refresh[next] = &refreshState{predecessor: rt}
		st.replacement = next
		s.issued = append(s.issued, next)
		answer["refresh_token"] = next
		answer["refresh_token_expires_in"] = 90 * 24 * 3600
	}
	if s.dropNext > 0 {
		// Issued, but the answer never arrives.
		s.dropNext--
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// use is a platform request with the access token: it must be one issued
// and not expired.
func (s *tokenServer) use(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.access[tok]
	switch {
	case !ok:
		s.problems = append(s.problems, "an access token never issued was used")
	case !time.Now().Before(exp):
		s.problems = append(s.problems, fmt.Sprintf("an access token was used %v after its expiry", time.Since(exp)))
	}
}

// noSecretIn fails when text holds any secret the server issued.
func (s *tokenServer) noSecretIn(t *testing.T, what, text string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sec := range s.issued {
		require.NotContains(t, text, sec, "%s quotes a secret", what)
	}
}

// credentialManagerCases run on every backend with real HTTP.
var credentialManagerCases = []conformanceCase{
	{"three workers refresh each token once and never use an expired one", testManagerWorkers},
	{"a lost refresh answer is recovered with the previous refresh token", testManagerLostAnswer},
	{"a revoked refresh token is a permanent error kept beside the credential", testManagerRevoked},
	{"a refused access token forces one refresh; others find it refreshed", testManagerRefused},
	{"lwa keeps its refresh token", testManagerLWA},
	{"an outage near expiry serves the valid token and backs off", testManagerOutage},
	{"a sealed credential opens only with its key and under its name", testManagerSealing},
	{"RotateKey re-seals every row for the new key alone", testManagerRotate},
	{"RotateKey while workers refresh loses no refresh", testManagerRotateWhileRefreshing},
	{"RotateKey waits out a lease held longer than its write retries", testManagerRotateWaitsForALongLease},
}

func TestCredentialManager(t *testing.T) { runConformance(t, credentialManagerCases) }

func keyring(t *testing.T, entries ...string) *credentials.Keyring {
	t.Helper()
	k, err := credentials.ParseKeyring(strings.Join(entries, ","), "test")
	require.NoError(t, err)
	return k
}

func newKey(t *testing.T) string {
	t.Helper()
	e, err := credentials.NewKeyEntry(time.Now())
	require.NoError(t, err)
	return e
}

// manager opens its own store on dsn, as a worker process does.
func manager(t *testing.T, dsn string, k *credentials.Keyring, opt credentials.Options) *credentials.Manager {
	t.Helper()
	return credentials.NewManager(openCredentials(t, dsn), k, nil, opt)
}

// install stores the server's app as "app" and a first pair as name.
func install(t *testing.T, m *credentials.Manager, srv *tokenServer, name string, expired bool) (access, refresh string) {
	t.Helper()
	ctx := context.Background()
	_, err := m.PutApp(ctx, "app", srv.clientID, srv.clientSecret)
	require.NoError(t, err)
	access, refresh, exp := srv.seed(expired)
	kind := credentials.KindShopify
	if srv.lwa {
		kind = credentials.KindLWA
	}
	_, err = m.PutToken(ctx, name, credentials.Token{Kind: kind, App: "app", AccessToken: access, RefreshToken: refresh,
		AccessExpiresAt: exp, ObtainedAt: exp.Add(-srv.ttl), TokenURL: srv.URL + "/admin/oauth/access_token"})
	require.NoError(t, err)
	return access, refresh
}

// tokenUsers are goroutines each taking an access token from a source and
// using it at the server, every 10ms until ctx ends, as a worker's requests
// would.
type tokenUsers struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (u *tokenUsers) start(ctx context.Context, src credentials.Source, srv *tokenServer) {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for ctx.Err() == nil {
			tok, err := src.Secret(ctx)
			if err != nil {
				if ctx.Err() == nil {
					u.mu.Lock()
					u.errs = append(u.errs, err)
					u.mu.Unlock()
				}
				return
			}
			srv.use(tok)
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

// wait waits for every user and fails on any error one met.
func (u *tokenUsers) wait(t *testing.T) {
	t.Helper()
	u.wg.Wait()
	for _, err := range u.errs {
		require.NoError(t, err)
	}
}

func source(t *testing.T, m *credentials.Manager, name string) credentials.Source {
	t.Helper()
	s, err := m.Source(name)
	require.NoError(t, err)
	return s
}

func testManagerWorkers(t *testing.T, dsn string) {
	srv := newTokenServer(t, 2*time.Second, false)
	k := keyring(t, newKey(t))
	opt := credentials.Options{PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond}
	install(t, manager(t, dsn, k, opt), srv, "shop-a", false)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var users tokenUsers
	for range 3 {
		src := source(t, manager(t, dsn, k, opt), "shop-a")
		for range 3 {
			users.start(ctx, src, srv)
		}
	}
	users.wait(t)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Empty(t, srv.problems)
	require.GreaterOrEqual(t, srv.calls, 2, "tokens of 2s over 5s were refreshed")
	t.Logf("%d refreshes, %d access tokens checked out by 9 goroutines on 3 managers", srv.calls, len(srv.access))
	for rt, st := range srv.refresh {
		if st.replacement != "" || st.retired {
			require.Equal(t, 1, st.spent, "refresh token %s spent exactly once", rt[:6])
		}
	}
}

func testManagerLostAnswer(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, false)
	k := keyring(t, newKey(t))
	m := manager(t, dsn, k, credentials.Options{MinForcedRefresh: time.Nanosecond})
	_, first := install(t, m, srv, "shop-a", true)
	srv.dropNext = 1

	src := source(t, m, "shop-a")
	_, err := src.Secret(ctx)
	require.Error(t, err, "the answer was lost and the stored token has expired")
	require.False(t, credentials.IsPermanent(err), "a lost answer is worth retrying: %v", err)
	var retry interface{ Transient() bool }
	require.True(t, errors.As(err, &retry) && retry.Transient(), "and says so to the connector, which retries the attempt: %v", err)
	require.Contains(t, err.Error(), `"shop-a"`)
	srv.noSecretIn(t, "the error", err.Error())
	srv.mu.Lock()
	lost := srv.refresh[first].replacement
	srv.mu.Unlock()

	tok, err := src.Secret(ctx)
	require.NoError(t, err, "the previous refresh token is spent again")
	srv.use(tok)
	srv.mu.Lock()
	require.Equal(t, 2, srv.refresh[first].spent, "the first refresh token was spent twice: lost, then again")
	srv.mu.Unlock()

	// The pair committed now is the second answer's: the next refresh
	// spends its refresh token, which retires the first.
	require.True(t, credtest.Refused(ctx, t, src, tok))
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.True(t, srv.refresh[first].retired)
	require.Zero(t, srv.refresh[lost].spent, "the lost pair was never used")
	require.Empty(t, srv.problems)
}

func testManagerRevoked(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, false)
	k := keyring(t, newKey(t))
	m := manager(t, dsn, k, credentials.Options{})
	_, rt := install(t, m, srv, "shop-a", true)
	srv.mu.Lock()
	srv.refresh[rt].revoked = true
	srv.mu.Unlock()

	src := source(t, m, "shop-a")
	_, err := src.Secret(ctx)
	require.ErrorIs(t, err, credentials.ErrReauthorize)
	var retry interface{ Transient() bool }
	require.False(t, errors.As(err, &retry), "a revoked refresh token is not retried: %v", err)
	require.True(t, credentials.IsPermanent(err))
	require.Contains(t, err.Error(), `"shop-a"`)
	require.Contains(t, err.Error(), "re-authorize")
	srv.noSecretIn(t, "the error", err.Error())

	st, ok, err := m.Show(ctx, "shop-a")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, st.NeedsReauthorization)
	require.Contains(t, st.LastError, "invalid_grant")
	b, err := json.Marshal(st)
	require.NoError(t, err)
	srv.noSecretIn(t, "the metadata", string(b))

	// Every worker learns it from the store, without spending the token again.
	calls := srv.calls
	_, err = source(t, manager(t, dsn, k, credentials.Options{}), "shop-a").Secret(ctx)
	require.ErrorIs(t, err, credentials.ErrReauthorize)
	require.Equal(t, calls, srv.calls)

	// A new token (a re-install) clears it.
	install(t, m, srv, "shop-a", false)
	st, _, err = m.Show(ctx, "shop-a")
	require.NoError(t, err)
	require.False(t, st.NeedsReauthorization)
	require.Empty(t, st.LastError)
}

func testManagerRefused(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, false)
	k := keyring(t, newKey(t))
	opt := credentials.Options{MinForcedRefresh: time.Nanosecond, PollMin: time.Millisecond}
	m1, m2 := manager(t, dsn, k, opt), manager(t, dsn, k, opt)
	install(t, m1, srv, "shop-a", false)
	s1, s2 := source(t, m1, "shop-a"), source(t, m2, "shop-a")
	old1 := credtest.Secret(ctx, t, s1)
	old2 := credtest.Secret(ctx, t, s2)
	require.Equal(t, old1, old2)

	require.True(t, credtest.Refused(ctx, t, s1, old1))
	// The second worker's refusal of the same token finds the new one.
	require.True(t, credtest.Refused(ctx, t, s2, old2))
	require.Equal(t, 1, srv.calls, "one refresh for both refusals")
	n1 := credtest.Secret(ctx, t, s1)
	n2 := credtest.Secret(ctx, t, s2)
	require.Equal(t, n1, n2)
	require.NotEqual(t, old1, n1)
	require.Contains(t, s1.Recent(), old1, "Recent keeps the replaced token for redaction")
	require.Contains(t, s1.Recent(), n1)
	require.Equal(t, "stored:shop-a", s1.String())
}

func testManagerLWA(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, true)
	m := manager(t, dsn, keyring(t, newKey(t)), credentials.Options{MinForcedRefresh: time.Nanosecond})
	_, rt := install(t, m, srv, "amazon-eu", true)
	src := source(t, m, "amazon-eu")
	tok := credtest.Secret(ctx, t, src)
	require.True(t, credtest.Refused(ctx, t, src, tok))
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Equal(t, 2, srv.refresh[rt].spent, "the one refresh token serves every refresh")
	require.Empty(t, srv.problems)
}

func testManagerSealing(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, false)
	key := newKey(t)
	m := manager(t, dsn, keyring(t, key), credentials.Options{})
	access, refresh := install(t, m, srv, "shop-a", false)
	st := openCredentials(t, dsn)
	r, _, err := st.Get(ctx, "shop-a")
	require.NoError(t, err)
	require.NotContains(t, string(r.Sealed), access)
	require.NotContains(t, string(r.Sealed), refresh)

	// Another key under the same id, and a keyring without the id.
	id, _, _ := strings.Cut(key, ":")
	_, other, _ := strings.Cut(newKey(t), ":")
	_, err = source(t, manager(t, dsn, keyring(t, id+":"+other), credentials.Options{}), "shop-a").Secret(ctx)
	require.ErrorIs(t, err, credentials.ErrOpen)
	_, err = source(t, manager(t, dsn, keyring(t, newKey(t)), credentials.Options{}), "shop-a").Secret(ctx)
	require.ErrorIs(t, err, credentials.ErrUnknownKey)
	require.True(t, credentials.IsPermanent(err))

	// The row copied under another name does not open, even with the key.
	r.Name = "shop-b"
	_, err = st.Create(ctx, r)
	require.NoError(t, err)
	_, err = source(t, m, "shop-b").Secret(ctx)
	require.ErrorIs(t, err, credentials.ErrOpen)
	srv.noSecretIn(t, "the error", err.Error())
	require.NotContains(t, err.Error(), strings.SplitN(key, ":", 2)[1], "the error quotes the key")

	tok := credtest.Secret(ctx, t, source(t, m, "shop-a"))
	require.Equal(t, access, tok)
}

func testManagerRotate(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, false)
	oldKey, newK := newKey(t), newKey(t)
	m := manager(t, dsn, keyring(t, oldKey), credentials.Options{})
	want := map[string]string{}
	for _, n := range []string{"shop-a", "shop-b", "shop-c"} {
		want[n], _ = install(t, m, srv, n, false)
	}

	both := manager(t, dsn, keyring(t, newK, oldKey), credentials.Options{})
	rep, err := both.RotateKey(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, rep.Resealed, "three tokens and their app")
	require.Empty(t, rep.Failed)
	id, _, _ := strings.Cut(newK, ":")
	require.Equal(t, id, rep.Key)
	stale, err := openCredentials(t, dsn).Stale(ctx, id, "", 0)
	require.NoError(t, err)
	require.Empty(t, stale)
	rep, err = both.RotateKey(ctx)
	require.NoError(t, err)
	require.Zero(t, rep.Resealed, "nothing left to re-seal")

	// The old key is gone; everything opens with the new one alone,
	// refreshes included (they open the app).
	only := manager(t, dsn, keyring(t, newK), credentials.Options{MinForcedRefresh: time.Nanosecond})
	for n, tok := range want {
		src := source(t, only, n)
		got := credtest.Secret(ctx, t, src)
		require.Equal(t, tok, got)
		require.True(t, credtest.Refused(ctx, t, src, got))
	}
	_, err = source(t, manager(t, dsn, keyring(t, oldKey), credentials.Options{}), "shop-a").Secret(ctx)
	require.ErrorIs(t, err, credentials.ErrUnknownKey)
}

// A refresh may hold a row's lease for as long as its token endpoint
// takes (and a dead holder's lease runs out only after LeaseTTL): a
// rotation waits for it instead of giving up after its retries of lost
// writes, which at these poll intervals last under a second.
func testManagerRotateWaitsForALongLease(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, false)
	oldKey, newK := newKey(t), newKey(t)
	install(t, manager(t, dsn, keyring(t, oldKey), credentials.Options{}), srv, "shop-a", false)
	held := 1500 * time.Millisecond
	got, err := openCredentials(t, dsn).TryLease(ctx, "shop-a", "a-slow-refresh", time.Now().Add(held))
	require.NoError(t, err)
	require.True(t, got)
	began := time.Now()
	both := manager(t, dsn, keyring(t, newK, oldKey), credentials.Options{PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond})
	rep, err := both.RotateKey(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Failed)
	require.Equal(t, 2, rep.Resealed, "the token and its app")
	require.GreaterOrEqual(t, time.Since(began), held-100*time.Millisecond, "it waited for the lease")
}

func testManagerOutage(t *testing.T, dsn string) {
	ctx := context.Background()
	srv := newTokenServer(t, time.Hour, false)
	m := manager(t, dsn, keyring(t, newKey(t)), credentials.Options{FailureBackoff: time.Hour})
	install(t, m, srv, "shop-a", false)
	// The token has a minute left: inside the refresh margin, still valid.
	access, refresh, _ := srv.seed(false)
	now := time.Now()
	_, err := m.PutToken(ctx, "shop-a", credentials.Token{Kind: credentials.KindShopify, App: "app", AccessToken: access, RefreshToken: refresh,
		AccessExpiresAt: now.Add(time.Minute), ObtainedAt: now.Add(-59 * time.Minute), TokenURL: srv.URL + "/t"})
	require.NoError(t, err)
	srv.mu.Lock()
	srv.dropNext = 100
	srv.mu.Unlock()

	src := source(t, m, "shop-a")
	for range 5 {
		tok, err := src.Secret(ctx)
		require.NoError(t, err, "the token has not expired")
		require.Equal(t, access, tok)
	}
	srv.mu.Lock()
	require.Equal(t, 1, srv.calls, "one try, then the backoff")
	srv.mu.Unlock()
	st, _, err := m.Show(ctx, "shop-a")
	require.NoError(t, err)
	require.NotEmpty(t, st.LastError, "the failure is recorded")
	require.False(t, st.NeedsReauthorization)
	srv.noSecretIn(t, "the last error", st.LastError)
}

func testManagerRotateWhileRefreshing(t *testing.T, dsn string) {
	srv := newTokenServer(t, 2*time.Second, false)
	oldKey, newK := newKey(t), newKey(t)
	opt := credentials.Options{PollMin: 5 * time.Millisecond, PollMax: 50 * time.Millisecond}
	names := []string{"shop-a", "shop-b"}
	for _, n := range names {
		install(t, manager(t, dsn, keyring(t, oldKey), opt), srv, n, false)
	}
	// The workers were rolled with the new key first, the old after it.
	both := keyring(t, newK, oldKey)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var users tokenUsers
	for range 2 {
		m := manager(t, dsn, both, opt)
		for _, n := range names {
			users.start(ctx, source(t, m, n), srv)
		}
	}
	// Rotate back and forth between the keys for the whole run, so
	// re-seals race refreshes.
	rotators := []*credentials.Manager{manager(t, dsn, keyring(t, oldKey, newK), opt), manager(t, dsn, both, opt)}
	resealed := 0
	for i := 0; ctx.Err() == nil; i++ {
		rep, err := rotators[i%2].RotateKey(ctx)
		if ctx.Err() != nil {
			break
		}
		require.NoError(t, err)
		require.Empty(t, rep.Failed)
		resealed += rep.Resealed
		time.Sleep(20 * time.Millisecond)
	}
	users.wait(t)
	rep, err := rotators[1].RotateKey(context.Background())
	require.NoError(t, err)
	require.Empty(t, rep.Failed)
	require.Greater(t, resealed, len(names)*2, "rotations ran throughout")
	t.Logf("%d rows re-sealed during the run", resealed)
	id, _, _ := strings.Cut(newK, ":")
	stale, err := openCredentials(t, dsn).Stale(context.Background(), id, "", 0)
	require.NoError(t, err)
	require.Empty(t, stale, "every row is sealed with the new key")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	require.Empty(t, srv.problems)
	for rt, st := range srv.refresh {
		if st.replacement != "" {
			require.Equal(t, 1, st.spent, "refresh token %s spent exactly once", rt[:6])
		}
	}
}
