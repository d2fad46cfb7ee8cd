package credentials

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options tune a Manager; zero values take the defaults.
type Options struct {
	// Now is the clock (time.Now).
	Now func() time.Time
	// LeaseTTL bounds how long one refresh holds an account's lease
	// (30s); a worker that died holding it is waited out that long.
	LeaseTTL time.Duration
	// MaxMargin caps how long before expiry a token is refreshed (5m);
	// the margin is a fifth of the token's lifetime below that.
	MaxMargin time.Duration
	// Recheck is how long a cached token is handed out before the store
	// is read again (30s), so a token imported or refreshed elsewhere is
	// picked up without a 401.
	Recheck time.Duration
	// MinForcedRefresh is how soon after a refresh a refusal of the new
	// token forces no further one (30s): a token refused for other
	// reasons (scope) must not burn refresh tokens in a loop.
	MinForcedRefresh time.Duration
	// FailureBackoff is how long, after a refresh whose answer was lost,
	// the still valid token is handed out before this process tries
	// again (5s), so an endpoint outage is not hammered per request.
	FailureBackoff time.Duration
	// PollMin and PollMax bound the wait between looks at a lease held
	// by another worker (50ms doubling to 1s).
	PollMin, PollMax time.Duration
	// Logger receives refresh outcomes, never secrets (discarded if nil).
	Logger *slog.Logger
	// OnRefresh, when set, hears of every refresh this process made, by
	// outcome (RefreshOK, RefreshFailed, RefreshRefused): metrics count them.
	OnRefresh func(name string, kind Kind, outcome string)
}

// Outcomes of a refresh, as Options.OnRefresh hears them.
const (
	RefreshOK     = "ok"
	RefreshFailed = "failed" // no usable answer, or the new pair not committed
	// RefreshRefused: the platform refused the refresh token; only a
	// re-authorization mends the credential.
	RefreshRefused = "refused"
)

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	def(&o.LeaseTTL, 30*time.Second)
	def(&o.MaxMargin, 5*time.Minute)
	def(&o.Recheck, 30*time.Second)
	def(&o.MinForcedRefresh, 30*time.Second)
	def(&o.FailureBackoff, 5*time.Second)
	def(&o.PollMin, 50*time.Millisecond)
	def(&o.PollMax, time.Second)
	if o.PollMax < o.PollMin {
		o.PollMax = o.PollMin
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OnRefresh == nil {
		o.OnRefresh = func(string, Kind, string) {}
	}
	return o
}

// Manager serves stored credentials: a Source per name whose secret is a
// current access token, refreshed once per account across every worker
// sharing the store, and the writes the CLI and the OAuth install make.
// One Manager per process; its Sources share a cache per name.
type Manager struct {
	st     Store
	keys   *Keyring // nil: metadata only (list, show, remove)
	client *http.Client
	opt    Options

	mu    sync.Mutex
	creds map[string]*cached
}

// NewManager serves the credentials in st with keys (nil allows only the
// metadata calls), posting refresh grants with client (a 30s-timeout
// client when nil; redirects are never followed).
func NewManager(st Store, keys *Keyring, client *http.Client, opt Options) *Manager {
	return &Manager{st: st, keys: keys, client: noRedirects(client), opt: opt.withDefaults(), creds: map[string]*cached{}}
}

// Source returns the Source of the stored credential name. It reads
// nothing yet: a missing credential is Secret's error (ErrNotStored).
func (m *Manager) Source(name string) (Source, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if m.keys == nil {
		return nil, fmt.Errorf("stored credential %q: %w", name, ErrNoKeys)
	}
	return &storedSource{c: m.cache(name)}, nil
}

// cache is the process's one cache of the credential name.
func (m *Manager) cache(name string) *cached {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.creds[name]
	if !ok {
		c = &cached{m: m, name: name, turn: make(chan struct{}, 1)}
		m.creds[name] = c
	}
	return c
}

// keptTokens is how many access tokens Recent lists.
const keptTokens = 4

// cached is what this process knows of one stored credential.
type cached struct {
	m    *Manager
	name string
	// turn lets one goroutine of the process at a time read the store or
	// refresh for this credential; the others wait for its result.
	turn chan struct{}

	mu     sync.Mutex
	rec    Record // Sealed dropped once opened
	pay    Payload
	have   bool
	readAt time.Time
	recent []string
	// retryAt: a refresh failed for want of an answer; until then the
	// still valid token is handed out without another try.
	retryAt time.Time
}

// take waits for this process's turn on the credential, bounded by ctx.
func (c *cached) take(ctx context.Context) (func(), error) {
	select {
	case c.turn <- struct{}{}:
		return func() { <-c.turn }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("stored credential %q: %w", c.name, ctx.Err())
	}
}

// margin is how long before expiry r's access token is refreshed.
func (m *Manager) margin(r Record) time.Duration {
	if r.LastRefreshAt.IsZero() || !r.AccessExpiresAt.After(r.LastRefreshAt) {
		return m.opt.MaxMargin
	}
	return min(r.AccessExpiresAt.Sub(r.LastRefreshAt)/5, m.opt.MaxMargin)
}

// fresh reports whether the access token can be handed out now.
func (m *Manager) fresh(r Record, p Payload) bool {
	if p.AccessToken == "" {
		return false
	}
	return r.AccessExpiresAt.IsZero() || m.opt.Now().Before(r.AccessExpiresAt.Add(-m.margin(r)))
}

// valid reports whether the access token has not expired (it may be
// inside the refresh margin).
func (m *Manager) valid(r Record, p Payload) bool {
	return p.AccessToken != "" && (r.AccessExpiresAt.IsZero() || m.opt.Now().Before(r.AccessExpiresAt))
}

// cachedFresh is the cached token when it is fresh and was read from the
// store within Recheck.
func (c *cached) cachedFresh() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.have || c.m.opt.Now().Sub(c.readAt) >= c.m.opt.Recheck || !c.m.fresh(c.rec, c.pay) {
		return "", false
	}
	return c.pay.AccessToken, true
}

// load reads the record from the store, opening the payload only when
// its generation moved, and caches both.
func (c *cached) load(ctx context.Context) (Record, Payload, error) {
	m := c.m
	r, ok, err := m.st.Get(ctx, c.name)
	if err != nil {
		return Record{}, Payload{}, err
	}
	if !ok {
		return Record{}, Payload{}, fmt.Errorf("stored credential %q: %w (store one with `ordersync credentials import`)", c.name, ErrNotStored)
	}
	if r.Kind == KindApp {
		return Record{}, Payload{}, fmt.Errorf("stored credential %q is an app's client id and secret, not a token a platform takes: %w", c.name, ErrInvalid)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.have && c.rec.Generation == r.Generation && c.rec.KeyID == r.KeyID {
		c.rec, c.readAt = withoutSeal(r), m.opt.Now()
		return c.rec, c.pay, nil
	}
	p, err := openPayload(m.keys, r)
	if err != nil {
		return Record{}, Payload{}, err
	}
	c.rec, c.pay, c.have, c.readAt = withoutSeal(r), p, true, m.opt.Now()
	return c.rec, p, nil
}

func withoutSeal(r Record) Record { r.Sealed = nil; return r }

// handOut remembers tok for Recent and returns it.
func (c *cached) handOut(tok string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.recent); n == 0 || c.recent[n-1] != tok {
		c.recent = append(c.recent, tok)
		if len(c.recent) > keptTokens {
			c.recent = c.recent[len(c.recent)-keptTokens:]
		}
	}
	return tok
}

// backoff is when this process may try a failed refresh again.
func (c *cached) backoff() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retryAt
}

// storedSource is the Source of a {stored} reference.
type storedSource struct{ c *cached }

// String names the reference, never the secret.
func (s *storedSource) String() string { return "stored:" + s.c.name }

// Secret implements Source: the cached access token while it is fresh,
// else the stored one, refreshed first when it is near its expiry.
func (s *storedSource) Secret(ctx context.Context) (string, error) {
	tok, err := s.secret(ctx)
	return tok, retryable(err)
}

// retryableError marks a Source failure that a later attempt may not
// meet (the token endpoint down, its answer lost: the stored refresh
// token is kept and spent again); connectors retry it like a failed
// request instead of failing the attempt for good.
type retryableError struct{ error }

func (e retryableError) Transient() bool { return true }
func (e retryableError) Unwrap() error   { return e.error }

// retryable marks err unless retrying cannot mend it (IsPermanent).
func retryable(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return retryableError{err}
}

func (s *storedSource) secret(ctx context.Context) (string, error) {
	c := s.c
	if tok, ok := c.cachedFresh(); ok {
		return c.handOut(tok), nil
	}
	done, err := c.take(ctx)
	if err != nil {
		return "", err
	}
	defer done()
	// Another goroutine may have read or refreshed while this one waited.
	if tok, ok := c.cachedFresh(); ok {
		return c.handOut(tok), nil
	}
	r, p, err := c.load(ctx)
	if err != nil {
		return "", err
	}
	if c.m.fresh(r, p) || (c.m.valid(r, p) && c.m.opt.Now().Before(c.backoff())) {
		return c.handOut(p.AccessToken), nil
	}
	tok, err := c.refresh(ctx, "")
	if err != nil {
		return "", err
	}
	return c.handOut(tok), nil
}

// Refused implements Source: when secret is still the stored access
// token, it forces a refresh (once across workers, and not again within
// MinForcedRefresh of the last one); otherwise another worker refreshed
// already and the stored token is the new one.
func (s *storedSource) Refused(ctx context.Context, secret string) (bool, error) {
	changed, err := s.refused(ctx, secret)
	return changed, retryable(err)
}

func (s *storedSource) refused(ctx context.Context, secret string) (bool, error) {
	c := s.c
	done, err := c.take(ctx)
	if err != nil {
		return false, err
	}
	defer done()
	r, p, err := c.load(ctx)
	if err != nil {
		return false, err
	}
	if p.AccessToken != secret && c.m.fresh(r, p) {
		c.handOut(p.AccessToken)
		return true, nil
	}
	if p.AccessToken == secret && c.m.opt.Now().Sub(r.LastRefreshAt) < c.m.opt.MinForcedRefresh {
		return false, nil
	}
	tok, err := c.refresh(ctx, secret)
	if err != nil {
		return false, err
	}
	c.handOut(tok)
	return tok != secret, nil
}

// Recent implements Source: the access tokens handed out lately.
func (s *storedSource) Recent() []string {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	return append([]string(nil), s.c.recent...)
}

// leaseOwner is a fresh random lease owner id.
func leaseOwner() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// usable reports whether the stored token may be handed out instead of
// refreshing: fresh, and not the token the platform refused.
func (m *Manager) usable(r Record, p Payload, refused string) bool {
	return m.fresh(r, p) && p.AccessToken != refused
}

// waitLease sleeps d, bounded by ctx.
func waitLease(ctx context.Context, name string, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stored credential %q: waiting for another worker's refresh: %w", name, ctx.Err())
	}
}

// releaseLease frees the lease even when ctx ended.
func (m *Manager) releaseLease(ctx context.Context, name, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := m.st.ReleaseLease(rctx, name, owner); err != nil {
		m.opt.Logger.Warn("release the refresh lease of a stored credential", "credential", name, "err", err)
	}
}

// refresh gets a new access token once across all workers: whoever takes
// the lease refreshes; the others wait for the generation to move or the
// lease to free or expire. refused is the token the platform refused
// ("" when refreshing for expiry).
func (c *cached) refresh(ctx context.Context, refused string) (string, error) {
	m := c.m
	owner := leaseOwner()
	wait := m.opt.PollMin
	for {
		_, p, ok, err := c.current(ctx, refused)
		if err != nil {
			return "", err
		}
		if ok {
			return p.AccessToken, nil
		}
		got, err := m.st.TryLease(ctx, c.name, owner, m.opt.Now().Add(m.opt.LeaseTTL))
		if err != nil {
			return "", err
		}
		if got {
			return c.refreshLeased(ctx, owner, refused)
		}
		if err := waitLease(ctx, c.name, wait); err != nil {
			return "", err
		}
		wait = min(wait*2, m.opt.PollMax)
	}
}

// current re-reads the credential before a refresh. ok: its access token
// may be handed out as it is; an error: it cannot be refreshed (an earlier
// refresh found the refresh token refused).
func (c *cached) current(ctx context.Context, refused string) (r Record, p Payload, ok bool, err error) {
	if r, p, err = c.load(ctx); err != nil {
		return r, p, false, err
	}
	if c.m.usable(r, p, refused) {
		return r, p, true, nil
	}
	return r, p, false, revokedBefore(r)
}

// revokedPrefix starts a LastError that stays until a new token is
// stored: the refresh token itself was refused, and spending it again
// cannot succeed.
const revokedPrefix = "refresh token refused: "

// revokedBefore is the permanent error an earlier refresh recorded.
func revokedBefore(r Record) error {
	if len(r.LastError) >= len(revokedPrefix) && r.LastError[:len(revokedPrefix)] == revokedPrefix {
		said := strings.TrimSuffix(r.LastError, ": "+ErrReauthorize.Error()) // the advice once, not twice
		return fmt.Errorf("stored credential %q: %s: %w", r.Name, said, ErrReauthorize)
	}
	return nil
}

// refreshLeased refreshes holding the lease: re-read (someone may have
// refreshed in between), post the grant, commit the new pair, and only
// then hand out the access token.
func (c *cached) refreshLeased(ctx context.Context, owner, refused string) (string, error) {
	m := c.m
	defer m.releaseLease(ctx, c.name, owner)
	r, p, ok, err := c.current(ctx, refused)
	if err != nil {
		return "", err
	}
	if ok {
		return p.AccessToken, nil
	}
	if p.RefreshToken == "" {
		return "", fmt.Errorf("stored credential %q: the access token expired and no refresh token is stored: %w", c.name, ErrReauthorize)
	}
	app, err := m.openApp(ctx, c.name, r.App)
	if err != nil {
		return "", err
	}
	start := m.opt.Now()
	a, err := m.postRefresh(ctx, c.name, p, app)
	if err != nil {
		var ge *grantError
		permanent := errors.As(err, &ge) && ge.permanent
		revoked := permanent && errors.Is(err, ErrReauthorize)
		m.recordFailure(ctx, r, p, err, revoked)
		m.refreshed(r, revoked)
		m.opt.Logger.Warn("refresh a stored credential", "credential", c.name, "permanent", permanent, "err", err)
		// A lost answer leaves the stored token as it was: while it has
		// not expired it still serves (not the one the platform refused).
		if !permanent && refused == "" && m.valid(r, p) {
			c.mu.Lock()
			c.retryAt = m.opt.Now().Add(m.opt.FailureBackoff)
			c.mu.Unlock()
			return p.AccessToken, nil
		}
		return "", err
	}
	next := p
	next.AccessToken = a.AccessToken
	if a.RefreshToken != "" {
		next.RefreshToken = a.RefreshToken // Shopify rotates it; LWA keeps it
	}
	if a.Scope != "" {
		next.Scope = a.Scope
	}
	nr := r
	nr.LastRefreshAt, nr.LastError = start, ""
	nr.AccessExpiresAt = time.Time{}
	if d := seconds(a.ExpiresIn); d > 0 {
		// From before the request: the platform's clock started later.
		nr.AccessExpiresAt = start.Add(d)
	}
	if d := seconds(a.RefreshTokenExpiresIn); d > 0 {
		nr.RefreshExpiresAt = start.Add(d)
	} else if a.RefreshToken != "" && a.RefreshToken != p.RefreshToken {
		nr.RefreshExpiresAt = time.Time{}
	}
	if err := next.seal(m.keys, &nr); err != nil {
		return "", err
	}
	// The commit outlives the caller's context: a pair obtained and not
	// stored is a refresh token spent for nothing.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	gen, err := m.st.Update(wctx, nr, r.Generation)
	if err != nil {
		// The new pair is not stored, so it is not used: the stored
		// refresh token (spent, but kept by Shopify until its replacement
		// is used) is spent again next time.
		m.refreshed(r, false)
		return "", fmt.Errorf("stored credential %q: commit the refreshed token: %w", c.name, err)
	}
	nr.Generation = gen
	c.mu.Lock()
	c.rec, c.pay, c.have, c.readAt = withoutSeal(nr), next, true, m.opt.Now()
	c.mu.Unlock()
	m.opt.OnRefresh(c.name, r.Kind, RefreshOK)
	m.opt.Logger.Info("refreshed a stored credential", "credential", c.name, "generation", gen, "access_expires_at", nr.AccessExpiresAt)
	return next.AccessToken, nil
}

// refreshed tells OnRefresh of a failed refresh of r.
func (m *Manager) refreshed(r Record, refused bool) {
	outcome := RefreshFailed
	if refused {
		outcome = RefreshRefused
	}
	m.opt.OnRefresh(r.Name, r.Kind, outcome)
}

// recordFailure keeps a refresh failure beside the credential (clipped,
// never secret text: postRefresh's errors quote none). A conflict means
// another write won; the failure is then old news.
func (m *Manager) recordFailure(ctx context.Context, r Record, p Payload, failure error, revoked bool) {
	msg := failure.Error()
	if revoked {
		msg = revokedPrefix + msg
	}
	r.LastError = clipStored(msg, MaxLastError-len("…"))
	if err := p.seal(m.keys, &r); err != nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := m.st.Update(wctx, r, r.Generation); err != nil && !errors.Is(err, ErrConflict) {
		m.opt.Logger.Warn("record a refresh failure", "credential", r.Name, "err", err)
	}
}

// openApp reads and opens the app credential a token names.
func (m *Manager) openApp(ctx context.Context, token, name string) (Payload, error) {
	r, ok, err := m.st.Get(ctx, name)
	if err != nil {
		return Payload{}, err
	}
	if !ok || r.Kind != KindApp {
		if token == "" {
			return Payload{}, fmt.Errorf("app %q is not a stored app (ordersync credentials app set): %w", name, ErrNotStored)
		}
		return Payload{}, fmt.Errorf("stored credential %q names app %q, which is not a stored app (ordersync credentials app set): %w", token, name, ErrNotStored)
	}
	p, err := openPayload(m.keys, r)
	if err != nil {
		return Payload{}, err
	}
	if p.ClientID == "" || p.ClientSecret == "" {
		return Payload{}, fmt.Errorf("stored app %q has no client id or secret: %w", name, ErrInvalid)
	}
	return p, nil
}
