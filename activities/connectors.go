package activities

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

// ConnectorCache builds one connector per platform and rebuilds it when the
// platform's settings change (a `config` signal with a new endpoint or
// credential reference), so HTTP connections and tokens are reused.
type ConnectorCache struct {
	mu    sync.Mutex
	byKey map[string]cachedConnector
}

type cachedConnector struct {
	fingerprint string
	conn        connectors.Connector
}

// NewConnectorCache returns an empty cache.
func NewConnectorCache() *ConnectorCache {
	return &ConnectorCache{byKey: map[string]cachedConnector{}}
}

// Connector returns the cached connector for p, building it if needed.
func (c *ConnectorCache) Connector(p config.Platform) (connectors.Connector, error) {
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
