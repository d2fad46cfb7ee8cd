package activities

import (
	"encoding/json"
	"fmt"
	"strconv"
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
// declaration has; tuning fields may differ. A platform it does not
// declare is retried (NotDeclaredError: another worker may); settings that
// differ are a permanent error naming the platform and the field, never the
// secret. Either way nothing is sent.
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
		return &NotDeclaredError{Platform: p.Name, NoFile: true}
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
		return &NotDeclaredError{Platform: p.Name, File: declaredPath(c.declared)}
	case field != "":
		return &connectors.PermanentError{Platform: p.Name, Msg: fmt.Sprintf("field %q of the settings differs from this worker's platforms file; "+
			"a worker sends credentials only with the kind, endpoint, credentials and options its own file declares "+
			"(to change them, edit the platforms file every worker reads, then run ordersync platform apply)", field)}
	}
	return nil
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
}

func (e *NotDeclaredError) Error() string {
	name := printableName(e.Platform)
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
