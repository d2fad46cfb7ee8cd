package webhooks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
)

// Secrets gives an account's webhook secret: the key the platform signs
// its events to that account with.
type Secrets interface {
	WebhookSecret(ctx context.Context, p config.Platform) (string, error)
}

// ErrNoSecret is wrapped when an account has no webhook secret.
var ErrNoSecret = errors.New("no webhook secret")

// SecretAppName is the stored app that holds platform's webhook secret as
// its client secret: `ordersync credentials app set webhooks-<platform>
// --client-id <anything> --client-secret-env ...`. For WooCommerce it is
// the secret typed into the webhook's Secret field; for Shopify the app's
// client secret (needed only when the account's credential is not a
// stored token of that app).
func SecretAppName(platform string) string { return "webhooks-" + platform }

// StoredSecrets reads webhook secrets from the credential store (sealed;
// the process needs ORDERSYNC_CREDENTIAL_KEYS):
//
//  1. the stored app SecretAppName(platform), for any kind;
//  2. Shopify: the client secret of the app the account's stored token
//     credential ({stored: NAME}, from `credentials token set --app` or
//     the OAuth install) refreshes with, the secret Shopify signs with.
//
// What it read is kept for TTL (default a minute), so a burst of events
// does not open the store once per event; a rotated secret takes effect
// within TTL (Shopify itself takes up to an hour to sign with a new one).
type StoredSecrets struct {
	Manager *credentials.Manager
	TTL     time.Duration
	Now     func() time.Time

	mu    sync.Mutex
	cache map[string]cachedSecret
}

type cachedSecret struct {
	secret string
	at     time.Time
}

// WebhookSecret implements Secrets.
func (s *StoredSecrets) WebhookSecret(ctx context.Context, p config.Platform) (string, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = time.Minute
	}
	s.mu.Lock()
	c, ok := s.cache[p.Name]
	s.mu.Unlock()
	if ok && now().Sub(c.at) < ttl {
		return c.secret, nil
	}
	secret, err := s.read(ctx, p)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.cache == nil {
		s.cache = map[string]cachedSecret{}
	}
	s.cache[p.Name] = cachedSecret{secret: secret, at: now()}
	s.mu.Unlock()
	return secret, nil
}

func (s *StoredSecrets) read(ctx context.Context, p config.Platform) (string, error) {
	if s.Manager == nil {
		return "", fmt.Errorf("platform %s: %w: serve runs without ORDERSYNC_CREDENTIAL_KEYS, so it cannot read stored secrets", p.Name, ErrNoSecret)
	}
	_, secret, err := s.Manager.AppCredentials(ctx, SecretAppName(p.Name))
	if err == nil {
		return secret, nil
	}
	if !errors.Is(err, credentials.ErrNotStored) {
		return "", fmt.Errorf("platform %s: read the stored app %s: %w", p.Name, SecretAppName(p.Name), err)
	}
	if p.Kind == KindShopify && p.Credentials.Stored != "" {
		kind, app, _, ok, err := s.Manager.StoredTokenTarget(ctx, p.Credentials.Stored)
		if err != nil {
			return "", fmt.Errorf("platform %s: read its stored credential %s: %w", p.Name, p.Credentials.Stored, err)
		}
		if ok && kind == credentials.KindShopify && app != "" {
			_, secret, err := s.Manager.AppCredentials(ctx, app)
			if err != nil {
				return "", fmt.Errorf("platform %s: read the app %s of its stored credential: %w", p.Name, app, err)
			}
			return secret, nil
		}
	}
	return "", fmt.Errorf("platform %s: %w: store it with `ordersync credentials app set %s --client-id %s --client-secret-env VAR`"+
		" (Shopify: the app's client secret; WooCommerce: the webhook's secret)", p.Name, ErrNoSecret, SecretAppName(p.Name), p.Kind)
}

// StaticSecrets maps platform names to secrets (tests, and a process that
// has them from elsewhere).
type StaticSecrets map[string]string

// WebhookSecret implements Secrets.
func (s StaticSecrets) WebhookSecret(_ context.Context, p config.Platform) (string, error) {
	if v, ok := s[p.Name]; ok && v != "" {
		return v, nil
	}
	return "", fmt.Errorf("platform %s: %w", p.Name, ErrNoSecret)
}
