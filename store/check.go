package store

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ordersync/ordersync/order"
)

// MaxOrderIDBytes bounds an order id, in bytes of UTF-8, on both stores.
// PostgreSQL's primary key index refuses a row larger than about 2,700
// bytes ("index row size exceeds btree maximum"); SQLite has no such
// limit, so without one bound the two stores would disagree on which
// orders they keep. Real ids are far shorter (Shopify's GraphQL ids are
// under 64 bytes, Amazon's 19).
const MaxOrderIDBytes = 1024

// CheckOrder reports why the store cannot keep an order, or nil: an empty
// platform or id, a zero updated_at, an id longer than MaxOrderIDBytes,
// text (platform, id, status, currency, total) that is not UTF-8 or holds
// a NUL byte (PostgreSQL's text refuses both: "invalid byte sequence
// 0x00"; SQLite must behave the same), or lines CheckLines refuses. The
// message names the field and never quotes its content. The raw JSON is
// stored as bytes and may hold anything.
func CheckOrder(o order.Order) error {
	switch {
	case o.Platform == "":
		return fmt.Errorf("empty platform")
	case o.ID == "":
		return fmt.Errorf("empty id")
	case o.UpdatedAt.IsZero():
		return fmt.Errorf("zero updated_at")
	case len(o.ID) > MaxOrderIDBytes:
		return fmt.Errorf("id is %d bytes, at most %d", len(o.ID), MaxOrderIDBytes)
	}
	for _, f := range []struct{ name, v string }{
		{"platform", o.Platform}, {"id", o.ID}, {"status", o.Status}, {"currency", o.Currency}, {"total", o.Total},
	} {
		if err := checkText(f.name, f.v); err != nil {
			return err
		}
	}
	return CheckLines(o)
}

// checkText refuses what PostgreSQL's text type refuses.
func checkText(name, v string) error {
	switch {
	case !utf8.ValidString(v):
		return fmt.Errorf("%s is not valid UTF-8", name)
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%s holds a NUL byte", name)
	}
	return nil
}

// clipID is an order id as errors quote it: at most 64 bytes, so an
// absurd id cannot blow up an error, a log line or history.
func clipID(id string) string {
	const max = 64
	if len(id) <= max {
		return id
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d bytes)", id[:cut], len(id))
}
