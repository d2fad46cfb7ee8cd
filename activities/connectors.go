package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/ordersync/ordersync/accounts"
	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// DeclaredPlatforms is where a worker finds the settings a platform of
// that name is fetched with: the account registry (accounts.Directory) or
// a fixed set (*config.File).
type DeclaredPlatforms interface {
	Get(name string) (config.Platform, bool)
}

// ConnectorCache builds one connector per platform and rebuilds it when the
// platform's settings change (a `config` signal with a new page size or
// rate, a registry edit of its endpoint), so HTTP connections and tokens
// are reused.
//
// It is the trust boundary between workflow input and secrets: settings
// arrive from workflow inputs and signals, which anyone who can reach the
// Temporal frontend can write, while credentials live on the worker.
// Inputs carry only a reference (the platform's name) and its tuning
// (api.Settings); the cache takes the platform's identity (kind, endpoint,
// credentials, options, allow_plaintext) only from its DeclaredPlatforms
// (the account registry, or the platforms a test or file-only process was
// given), by name: a message cannot point a secret at another host or read
// another secret into a request, because it cannot even say one. A platform the registry does not hold
// is retried (NotDeclaredError: it may be registered in a moment); a
// removed one is a permanent error. Either way nothing is sent.
type ConnectorCache struct {
	declared DeclaredPlatforms
	opts     []connectors.Option // how connectors get secrets (the credential store's)

	mu    sync.Mutex
	byKey map[string]cachedConnector
}

type cachedConnector struct {
	fingerprint string
	conn        connectors.Connector
}

// registryLookup is a DeclaredPlatforms that tells removed platforms
// apart (accounts.Directory).
type registryLookup interface {
	Lookup(ctx context.Context, name string) (config.Platform, accounts.State, bool, error)
}

// NewConnectorCache returns an empty cache that trusts what declared
// declares. A worker passes its registry directory; tests pass the
// platforms they fetch for (&config.File{Platforms: ...}). A nil declared
// trusts nothing. opts go to every connectors.New: a worker with the
// credential store's keys passes connectors.WithStoredCredentials.
func NewConnectorCache(declared DeclaredPlatforms, opts ...connectors.Option) *ConnectorCache {
	return &ConnectorCache{declared: declared, opts: opts, byKey: map[string]cachedConnector{}}
}

// Connector returns the cached connector for s's platform, built from the
// platform's declared identity with s's tuning (page size, timeout, rate).
func (c *ConnectorCache) Connector(s api.Settings) (connectors.Connector, error) {
	p, err := c.resolve(s)
	if err != nil {
		return nil, err
	}
	fp, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("fingerprint settings of %s: %w", p.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.byKey[p.Name]; ok && cached.fingerprint == string(fp) {
		return cached.conn, nil
	}
	conn, err := connectors.New(p, c.opts...)
	if err != nil {
		return nil, err
	}
	c.byKey[p.Name] = cachedConnector{fingerprint: string(fp), conn: conn}
	return conn, nil
}

// Resolve is the platform s names as its declaration has it (identity:
// kind, endpoint, credentials, options, allow_plaintext) with s's tuning:
// what a request for s is sent with.
func (c *ConnectorCache) Resolve(s api.Settings) (config.Platform, error) { return c.resolve(s) }

func (c *ConnectorCache) resolve(s api.Settings) (config.Platform, error) {
	if c.declared == nil {
		return config.Platform{}, &NotDeclaredError{Platform: s.Name, NoFile: true}
	}
	if r, ok := c.declared.(registryLookup); ok {
		d, state, found, err := r.Lookup(context.Background(), s.Name)
		switch {
		case err != nil:
			return config.Platform{}, fmt.Errorf("%s: look up the platform in the registry: %w", printableName(s.Name), err)
		case !found:
			return config.Platform{}, &NotDeclaredError{Platform: s.Name, Registry: true}
		case state == accounts.Removed:
			return config.Platform{}, &connectors.PermanentError{Platform: s.Name,
				Msg: "the platform was removed from the registry; nothing is fetched for it (add it again to fetch)"}
		}
		return d.WithTuning(s), nil
	}
	d, ok := c.declared.Get(s.Name)
	if !ok {
		return config.Platform{}, &NotDeclaredError{Platform: s.Name, File: declaredPath(c.declared)}
	}
	return d.WithTuning(s), nil
}

// NotDeclaredError is a page or bulk activity for a platform this worker's
// platforms file does not declare. It is retried, never permanent: workers
// sharing a task queue may read different files (a rollout of a new file,
// or files split by team), so another worker that declares the platform, or
// this one once it re-reads its file, takes the next attempt. Nothing was
// sent. classify maps it to ErrNotDeclared.
type NotDeclaredError struct {
	Platform string
	// File is the worker's platforms file ("" when it does not say).
	File string
	// NoFile: the worker has no platforms file at all.
	NoFile bool
	// Registry: the worker follows the account registry, which does
	// not hold the platform.
	Registry bool
}

func (e *NotDeclaredError) Error() string {
	name := printableName(e.Platform)
	if e.Registry {
		return fmt.Sprintf("%s: not in the account registry; retried until it is registered "+
			"(ordersync platform add %s, or platform apply -f FILE)", name, name)
	}
	if e.NoFile {
		return fmt.Sprintf("%s: this worker has no platforms file, so it fetches for no platform; "+
			"retried until a worker whose platforms file declares %s takes the task", name, name)
	}
	file := "this worker's platforms file"
	if e.File != "" {
		file += " " + e.File
	}
	return fmt.Sprintf("%s: not declared in %s; retried until a worker whose file declares it takes the task "+
		"(add it to %s, or run the platform on a task queue only such workers poll)", name, file, file)
}

// printableName is a platform name from workflow input, which anyone who
// can reach the frontend writes: as it is when it could be a declared name,
// else quoted in ASCII and clipped.
func printableName(name string) string {
	plain := len(name) > 0 && len(name) <= 63
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	if len(name) > 63 {
		name = name[:63] + "..."
	}
	return strconv.QuoteToASCII(name)
}

// declaredPath is the file d was read from, when it says.
func declaredPath(d DeclaredPlatforms) string {
	switch f := d.(type) {
	case *config.File:
		if f != nil {
			return f.Path
		}
	case interface{ Current() *config.File }:
		return f.Current().Path
	}
	return ""
}
