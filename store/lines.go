package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ordersync/ordersync/order"
)

// Bounds on an order's lines. An order beyond them is the platform's data
// gone wrong (or hostile), not something to store: the FetchPage activity
// sets such an order aside alone (CheckLines), and UpsertOrders refuses a
// batch holding one. Lengths are in bytes of UTF-8; generous for real
// catalogues (Shopify allows 255 characters for a title or SKU, Amazon 200
// for a title, eBay 80).
const (
	maxLinesPerOrder = 10000
	maxLineIDBytes   = 255
	maxSKUBytes      = 1024
	maxTitleBytes    = 4096
	maxPriceBytes    = 64
	maxCurrencyBytes = 16
)

// CheckLines reports why the store cannot keep an order's lines, or nil:
// more than 10,000 lines, a line without an id or with the id of an
// earlier line, a field longer than its bound (id 255 bytes, SKU 1024,
// title 4096, unit price 64, currency 16), text that is not UTF-8 or holds
// a NUL byte (PostgreSQL refuses both; SQLite must behave the same), a
// unit price that is not a plain decimal, or lines without HasLines. The
// message names lines by position and never quotes their content.
func CheckLines(o order.Order) error {
	if !o.HasLines {
		if len(o.Lines) > 0 {
			return fmt.Errorf("%d lines but HasLines is false", len(o.Lines))
		}
		return nil
	}
	if len(o.Lines) > maxLinesPerOrder {
		return fmt.Errorf("%d lines, at most %d", len(o.Lines), maxLinesPerOrder)
	}
	seen := make(map[string]int, len(o.Lines))
	for i, l := range o.Lines {
		if err := checkLine(l); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		if first, dup := seen[l.ID]; dup {
			return fmt.Errorf("line %d: id repeats line %d", i+1, first)
		}
		seen[l.ID] = i + 1
	}
	return nil
}

func checkLine(l order.Line) error {
	if l.ID == "" {
		return errors.New("empty id")
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"id", l.ID, maxLineIDBytes}, {"sku", l.SKU, maxSKUBytes}, {"title", l.Title, maxTitleBytes},
		{"unit price", l.UnitPrice, maxPriceBytes}, {"currency", l.Currency, maxCurrencyBytes},
	} {
		switch {
		case len(f.v) > f.max:
			return fmt.Errorf("%s is %d bytes, at most %d", f.name, len(f.v), f.max)
		case !utf8.ValidString(f.v):
			return fmt.Errorf("%s is not valid UTF-8", f.name)
		case strings.IndexByte(f.v, 0) >= 0:
			return fmt.Errorf("%s holds a NUL byte", f.name)
		}
	}
	if l.UnitPrice != "" && !order.ValidDecimal(l.UnitPrice) {
		return errors.New("unit price is not a plain decimal")
	}
	return nil
}

// linesDigest is a hash of a version's lines, or nil when the version
// carries none (HasLines false). Two versions with the same lines in the
// same order have the same digest, so a re-fetched version is recognised
// as unchanged from the digest stored beside its order, without reading
// the lines back. Fields are length-prefixed so no two line lists encode
// alike. Changing the encoding is harmless: every stored digest then
// differs once, and a re-fetched version counts Updated and rewrites its
// lines.
func linesDigest(o order.Order) []byte {
	if !o.HasLines {
		return nil
	}
	h := sha256.New()
	var buf []byte
	buf = append(buf, "lines/v1"...)
	buf = binary.AppendUvarint(buf, uint64(len(o.Lines)))
	for _, l := range o.Lines {
		for _, s := range []string{l.ID, l.SKU, l.Title, l.UnitPrice, l.Currency} {
			buf = binary.AppendUvarint(buf, uint64(len(s)))
			buf = append(buf, s...)
		}
		buf = binary.BigEndian.AppendUint64(buf, uint64(l.Quantity))
		if len(buf) > 32<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return h.Sum(nil)
}

// sameLines reports whether an incoming version leaves the stored lines as
// they are: it carries none (the stored ones are kept), or the same ones.
func sameLines(stored, incoming []byte) bool {
	return incoming == nil || bytes.Equal(stored, incoming)
}

// StoredLines are one order's stored version and its lines, read together
// (for verify). HasLines is false when no version with lines has been
// stored; Lines are in position order.
type StoredLines struct {
	UpdatedAt time.Time
	HasLines  bool
	Lines     []order.Line
}
