package connectors

import (
	"sync"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/order"
)

// canonicalMapper maps one order of platform p, as the kind's connector
// returned it, to the canonical order (package order). It reads the
// platform's JSON in o.Raw and o's header and lines; fields it cannot
// read stay empty (the raw order keeps them), as an order is never lost
// or refused for its canonical form. The fields every order has (schema,
// platform, kind, order id, times) are filled in by canonicalize.
type canonicalMapper func(p config.Platform, o Order) *order.Canonical

var (
	canonicalMu      sync.RWMutex
	canonicalMappers = map[string]canonicalMapper{}
)

// registerCanonical sets kind's mapper, from an init function; twice for a
// kind panics (a programming error).
func registerCanonical(kind string, m canonicalMapper) {
	canonicalMu.Lock()
	defer canonicalMu.Unlock()
	if _, dup := canonicalMappers[kind]; dup {
		panic("connectors: canonical mapper registered twice: " + kind)
	}
	canonicalMappers[kind] = m
}

// Canonical maps o, an order of platform p, to its canonical form with
// the kind's mapper, or from the header and lines alone for a kind
// without one. A mapper that panics on hostile data gives the header form
// too: the order is stored either way. The result always validates against
// the schema: conform drops or marks unknown what it has no room for.
func Canonical(p config.Platform, o Order) *order.Canonical {
	canonicalMu.RLock()
	m := canonicalMappers[p.Kind]
	canonicalMu.RUnlock()
	var c *order.Canonical
	if m != nil {
		c = safeMap(m, p, o)
	}
	if c == nil {
		c = headerCanonical(o)
	}
	c.Schema, c.Platform, c.Kind, c.OrderID, c.UpdatedAt = order.SchemaV1, o.Platform, p.Kind, o.ID, o.UpdatedAt
	if c.CreatedAt.IsZero() {
		c.CreatedAt = o.CreatedAt
	}
	if c.Status == "" {
		c.Status = order.StatusUnknown
	}
	if c.Lines == nil {
		c.Lines = []order.CanonicalLine{}
	}
	conform(c)
	return c
}

func safeMap(m canonicalMapper, p config.Platform, o Order) (c *order.Canonical) {
	defer func() {
		if recover() != nil {
			c = nil
		}
	}()
	return m(p, o)
}

// headerCanonical is the canonical form of what every connector fills in:
// the header and the lines.
func headerCanonical(o Order) *order.Canonical {
	c := &order.Canonical{PlatformStatus: o.Status, Currency: o.Currency, Totals: order.Totals{Total: o.Total}}
	c.Lines = CanonicalLines(o.Lines)
	return c
}

// CanonicalLines turns lines as connectors return them into canonical
// lines, for mappers whose platform's JSON says no more about a line.
func CanonicalLines(lines []OrderLine) []order.CanonicalLine {
	out := make([]order.CanonicalLine, 0, len(lines))
	for _, l := range lines {
		out = append(out, order.CanonicalLine{ID: l.ID, SKU: l.SKU, Title: l.Title, Quantity: l.Quantity, UnitPrice: l.UnitPrice})
	}
	return out
}

// canonicalizing fills in Canonical on every order a connector returns.
func canonicalizing(p config.Platform, orders []Order) {
	for i := range orders {
		orders[i].Canonical = Canonical(p, orders[i])
	}
}
