package credentials

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Token is a token credential to store: from an OAuth install's
// authorization answer, or obtained outside ordersync and imported.
type Token struct {
	Kind Kind   // KindShopify or KindLWA
	App  string // the stored app whose client id and secret refresh it
	// AccessToken may be empty: the first Secret then refreshes.
	AccessToken      string
	RefreshToken     string
	AccessExpiresAt  time.Time // zero: unknown (refreshed when refused)
	RefreshExpiresAt time.Time // zero: does not expire, or unknown
	// ObtainedAt is when the access token was issued (now when zero); the
	// refresh margin is a fifth of its lifetime.
	ObtainedAt       time.Time
	Scope            string
	TokenURL         string // required unless Kind is shopify and Shop is set
	Shop             string // Shopify: the shop's myshopify.com host
	SellingPartnerID string // Amazon
}

// String hides the tokens.
func (Token) String() string { return "credentials.Token{…}" }

// GoString hides the tokens from %#v.
func (t Token) GoString() string { return t.String() }

// Status is a stored credential's metadata, what status, metrics and
// `credentials list` show: never a secret.
type Status struct {
	Name             string    `json:"name"`
	Kind             Kind      `json:"kind"`
	App              string    `json:"app,omitempty"`
	AccessExpiresAt  time.Time `json:"access_expires_at,omitzero"`
	RefreshExpiresAt time.Time `json:"refresh_expires_at,omitzero"`
	LastRefreshAt    time.Time `json:"last_refresh_at,omitzero"`
	LastError        string    `json:"last_error,omitempty"`
	// NeedsReauthorization: the refresh token was refused; only a new
	// token (re-install, re-authorize, import) mends it.
	NeedsReauthorization bool      `json:"needs_reauthorization,omitempty"`
	Generation           int64     `json:"generation"`
	KeyID                string    `json:"key_id"`
	Refreshing           bool      `json:"refreshing,omitempty"` // a worker holds the refresh lease
	UpdatedAt            time.Time `json:"updated_at"`
}

// statusOf is r's metadata as shown.
func (m *Manager) statusOf(r Record) Status {
	return Status{
		Name: r.Name, Kind: r.Kind, App: r.App,
		AccessExpiresAt: r.AccessExpiresAt, RefreshExpiresAt: r.RefreshExpiresAt, LastRefreshAt: r.LastRefreshAt,
		LastError: r.LastError, NeedsReauthorization: revokedBefore(r) != nil,
		Generation: r.Generation, KeyID: r.KeyID,
		Refreshing: r.LeaseOwner != "" && m.opt.Now().Before(r.LeaseUntil),
		UpdatedAt:  r.UpdatedAt,
	}
}

// needKeys refuses a write or read of secrets without a keyring.
func (m *Manager) needKeys(name string) error {
	if m.keys == nil {
		return fmt.Errorf("stored credential %q: %w", name, ErrNoKeys)
	}
	return nil
}

// AppCredentials returns the stored app name's client id and secret, for
// an OAuth flow's code exchange and its install-request HMAC.
func (m *Manager) AppCredentials(ctx context.Context, name string) (clientID, clientSecret string, err error) {
	if err := m.needKeys(name); err != nil {
		return "", "", err
	}
	p, err := m.openApp(ctx, "", name)
	if err != nil {
		return "", "", err
	}
	return p.ClientID, p.ClientSecret, nil
}

// PutApp stores (or replaces) the OAuth app name: the client id and secret
// its token credentials refresh with.
func (m *Manager) PutApp(ctx context.Context, name, clientID, clientSecret string) (Status, error) {
	if err := m.needKeys(name); err != nil {
		return Status{}, err
	}
	if strings.TrimSpace(clientID) == "" || strings.TrimSpace(clientSecret) == "" {
		return Status{}, fmt.Errorf("stored app %q: client id and client secret are required: %w", name, ErrInvalid)
	}
	p := Payload{ClientID: strings.TrimSpace(clientID), ClientSecret: strings.TrimSpace(clientSecret)}
	return m.put(ctx, Record{Name: name, Kind: KindApp}, p)
}

// PutToken stores (or replaces) the token credential name. Replacing one
// clears its last error: a re-authorized token starts afresh.
func (m *Manager) PutToken(ctx context.Context, name string, t Token) (Status, error) {
	if err := m.needKeys(name); err != nil {
		return Status{}, err
	}
	if err := CheckName(name); err != nil {
		return Status{}, err
	}
	switch {
	case t.Kind != KindShopify && t.Kind != KindLWA:
		return Status{}, fmt.Errorf("stored credential %q: kind %q is not shopify or lwa: %w", name, clipStored(string(t.Kind), 32), ErrInvalid)
	case strings.TrimSpace(t.RefreshToken) == "":
		return Status{}, fmt.Errorf("stored credential %q: a refresh token is required: %w", name, ErrInvalid)
	case t.TokenURL == "" && (t.Kind != KindShopify || t.Shop == ""):
		return Status{}, fmt.Errorf("stored credential %q: a token URL is required (or, for shopify, the shop): %w", name, ErrInvalid)
	}
	p := Payload{
		AccessToken: strings.TrimSpace(t.AccessToken), RefreshToken: strings.TrimSpace(t.RefreshToken),
		Scope: t.Scope, TokenURL: t.TokenURL, Shop: t.Shop, SellingPartnerID: t.SellingPartnerID,
	}
	if err := CheckTokenURL(tokenURL(p)); err != nil {
		return Status{}, fmt.Errorf("stored credential %q: %w", name, err)
	}
	if err := CheckName(t.App); err != nil {
		return Status{}, fmt.Errorf("stored credential %q: app: %w", name, err)
	}
	app, ok, err := m.st.Get(ctx, t.App)
	if err != nil {
		return Status{}, err
	}
	if !ok || app.Kind != KindApp {
		return Status{}, fmt.Errorf("stored credential %q: app %q is not a stored app (ordersync credentials app set %s ...): %w", name, t.App, t.App, ErrNotStored)
	}
	obtained := t.ObtainedAt
	if obtained.IsZero() {
		obtained = m.opt.Now()
	}
	r := Record{Name: name, Kind: t.Kind, App: t.App, AccessExpiresAt: t.AccessExpiresAt, RefreshExpiresAt: t.RefreshExpiresAt, LastRefreshAt: obtained}
	return m.put(ctx, r, p)
}

// put seals p into r and creates or replaces the row, retrying a write
// that lost a race (a refresh, a rotation). Replacing keeps nothing of the
// old row but its name.
func (m *Manager) put(ctx context.Context, r Record, p Payload) (Status, error) {
	for range 10 {
		if err := p.seal(m.keys, &r); err != nil {
			return Status{}, err
		}
		old, ok, err := m.st.Get(ctx, r.Name)
		if err != nil {
			return Status{}, err
		}
		switch {
		case ok && old.Kind != r.Kind && (old.Kind == KindApp || r.Kind == KindApp):
			return Status{}, fmt.Errorf("stored credential %q is a %s; remove it before storing a %s under its name: %w", r.Name, old.Kind, r.Kind, ErrInvalid)
		case ok:
			r.Generation, err = m.st.Update(ctx, r, old.Generation)
		default:
			r.Generation, err = m.st.Create(ctx, r)
		}
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return Status{}, err
		}
		got, _, err := m.st.Get(ctx, r.Name)
		if err != nil {
			return Status{}, err
		}
		return m.statusOf(got), nil
	}
	return Status{}, fmt.Errorf("stored credential %q: other writes kept changing it: %w", r.Name, ErrConflict)
}

// Show is one credential's metadata.
func (m *Manager) Show(ctx context.Context, name string) (Status, bool, error) {
	r, ok, err := m.st.Get(ctx, name)
	if err != nil || !ok {
		return Status{}, ok, err
	}
	return m.statusOf(r), true, nil
}

// List pages the credentials' metadata in name order after after.
func (m *Manager) List(ctx context.Context, after string, limit int) ([]Status, error) {
	rs, err := m.st.List(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Status, len(rs))
	for i, r := range rs {
		out[i] = m.statusOf(r)
	}
	return out, nil
}

// Health is every credential's metadata, for status and metrics.
func (m *Manager) Health(ctx context.Context) ([]Status, error) {
	var all []Status
	after := ""
	for {
		page, err := m.List(ctx, after, MaxPage)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < MaxPage {
			return all, nil
		}
		after = page[len(page)-1].Name
	}
}

// Remove deletes the credential name. An app still named by a token
// credential is kept (its tokens could no longer refresh).
func (m *Manager) Remove(ctx context.Context, name string) (bool, error) {
	r, ok, err := m.st.Get(ctx, name)
	if err != nil || !ok {
		return false, err
	}
	if r.Kind == KindApp {
		all, err := m.Health(ctx)
		if err != nil {
			return false, err
		}
		var users []string
		for _, s := range all {
			if s.App == name {
				users = append(users, s.Name)
			}
		}
		if len(users) > 0 {
			return false, fmt.Errorf("stored app %q refreshes %s; remove those first: %w", name, strings.Join(users, ", "), ErrInvalid)
		}
	}
	m.mu.Lock()
	delete(m.creds, name)
	m.mu.Unlock()
	return m.st.Delete(ctx, name)
}
