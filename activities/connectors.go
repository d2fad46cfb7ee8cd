package activities

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// DeclaredPlatforms is what a worker's own platforms file declares: the
// settings a platform of that name may be fetched with. *config.File (a
// fixed set) and *config.WatchedFile (follows edits) both satisfy it.
type DeclaredPlatforms interface {
	Get(name string) (config.Platform, bool)
}

// refresher is a DeclaredPlatforms that can look at its source again at
// once (config.WatchedFile): asked before settings are refused, so an
// operator's edit made a moment ago counts.
type refresher interface{ Refresh() }

// ConnectorCache builds one connector per platform and rebuilds it when the
// platform's settings change (a `config` signal with a new page size or
// rate), so HTTP connections and tokens are reused.
//
// It is the trust boundary between workflow input and secrets: settings
// arrive from workflow inputs and signals, which anyone who can reach the
// Temporal frontend can write, while credentials live on the worker. The
// cache builds a connector (and so resolves a credential) only for a
// platform its DeclaredPlatforms declares, with the identity fields
// (config.IdentityDiff: kind, endpoint, credentials, options) the
// declaration has; tuning fields may differ. Anything else is a permanent
// error naming the platform and the field, never the secret, and nothing is
// sent.
type ConnectorCache struct {
	declared DeclaredPlatforms

	mu    sync.Mutex
	byKey map[string]cachedConnector
}

type cachedConnector struct {
	fingerprint string
	conn        connectors.Connector
}

// NewConnectorCache returns an empty cache that trusts what declared
// declares. A worker passes its platforms file; tests pass the platforms
// they fetch for (&config.File{Platforms: ...}). A nil declared trusts
// nothing.
func NewConnectorCache(declared DeclaredPlatforms) *ConnectorCache {
	return &ConnectorCache{declared: declared, byKey: map[string]cachedConnector{}}
}

// Connector returns the cached connector for p, building it if needed,
// after checking p against the declared settings.
func (c *ConnectorCache) Connector(p config.Platform) (connectors.Connector, error) {
	if err := c.checkDeclared(p); err != nil {
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
	conn, err := connectors.New(p)
	if err != nil {
		return nil, err
	}
	c.byKey[p.Name] = cachedConnector{fingerprint: string(fp), conn: conn}
	return conn, nil
}

// checkDeclared refuses settings this worker's platforms file does not
// declare for the platform.
func (c *ConnectorCache) checkDeclared(p config.Platform) error {
	if c.declared == nil {
		return &connectors.PermanentError{Platform: p.Name, Msg: "this worker declares no platforms, so it sends no credentials"}
	}
	lookup := func() (bool, string) {
		d, ok := c.declared.Get(p.Name)
		if !ok {
			return false, ""
		}
		return true, config.IdentityDiff(d, p)
	}
	found, field := lookup()
	if r, ok := c.declared.(refresher); ok && (!found || field != "") {
		r.Refresh()
		found, field = lookup()
	}
	switch {
	case !found:
		return &connectors.PermanentError{Platform: p.Name, Msg: "not declared in this worker's platforms file; " +
			"a worker fetches only for the platforms its own file declares"}
	case field != "":
		return &connectors.PermanentError{Platform: p.Name, Msg: fmt.Sprintf("field %q of the settings differs from this worker's platforms file; "+
			"a worker sends credentials only with the kind, endpoint, credentials and options its own file declares "+
			"(to change them, edit the platforms file every worker reads, then run ordersync platform apply)", field)}
	}
	return nil
}
