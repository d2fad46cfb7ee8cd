package connectors

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-resty/resty/v2"

	"github.com/ordersync/ordersync/internal/textclip"
)

// order reads one record of the declarative kind through the configured
// field paths. id and updated_at are required; total, when present, must be
// a plain decimal (a JSON number keeps its literal text); line_items may be
// an array (its length) or a count. With options.lines, the array at
// lines.path becomes the order's lines (HasLines); absent or null, the
// lines are unknown and the store keeps those it has.
func (c *httpKindConnector) order(raw json.RawMessage) (Order, error) {
	m, err := decodeObject(raw)
	if err != nil {
		return Order{}, err
	}
	f := c.opts.Fields
	o := Order{Platform: c.platform, Raw: raw}
	idv, _ := lookup(m, f.ID)
	switch idv.(type) {
	case string, json.Number:
		o.ID, _ = scalarText(idv)
	case nil: // absent or null: missing, below
	default: // an object, array or boolean is a broken order, not one without an id
		return Order{}, fmt.Errorf("id at %q is %s, want a string or number", f.ID, jsonKind(idv))
	}
	if o.ID == "" {
		return Order{}, fmt.Errorf("missing id at %q", f.ID)
	}
	uv, ok := lookup(m, f.UpdatedAt)
	if !ok || uv == nil {
		return Order{}, fmt.Errorf("id %s: missing updated_at at %q", textclip.Value(o.ID), f.UpdatedAt)
	}
	if o.UpdatedAt, err = parseTime(f.TimeFormat, uv); err != nil {
		return Order{}, fmt.Errorf("id %s: updated_at: %w", textclip.Value(o.ID), err)
	}
	if cv, ok := c.field(m, f.CreatedAt); ok {
		if o.CreatedAt, err = parseTime(f.TimeFormat, cv); err != nil {
			return Order{}, fmt.Errorf("id %s: created_at: %w", textclip.Value(o.ID), err)
		}
	}
	for _, s := range []struct {
		path string
		dst  *string
	}{{f.Status, &o.Status}, {f.Currency, &o.Currency}, {f.Total, &o.Total}} {
		if v, ok := c.field(m, s.path); ok {
			if *s.dst, ok = scalarText(v); !ok {
				return Order{}, fmt.Errorf("id %s: %s is %s, not a single value", textclip.Value(o.ID), s.path, showJSON(v))
			}
		}
	}
	if o.Total != "" && !ValidDecimal(o.Total) {
		return Order{}, fmt.Errorf("id %s: total %q is not a decimal number", textclip.Value(o.ID), textclip.Value(o.Total))
	}
	if v, ok := c.field(m, f.LineItems); ok {
		switch x := v.(type) {
		case []any:
			o.LineCount = len(x)
		case json.Number:
			n, err := x.Int64()
			if err != nil || n < 0 {
				return Order{}, fmt.Errorf("id %s: line_items count %s is not a count", textclip.Value(o.ID), textclip.Value(x.String()))
			}
			o.LineCount = int(n)
		default:
			return Order{}, fmt.Errorf("id %s: line_items is %s, not an array or a count", textclip.Value(o.ID), showJSON(v))
		}
	}
	if lp := c.opts.Lines; lp.Path != "" {
		if v, ok := c.field(m, lp.Path); ok {
			items, isArray := v.([]any)
			if !isArray {
				return Order{}, fmt.Errorf("id %s: lines at %q is %s, not an array", textclip.Value(o.ID), lp.Path, jsonKindOf(v))
			}
			if o.Lines, err = linesFrom(lp.Path, items, func(i int, it any) (OrderLine, error) { return c.line(i, it, o.Currency) }); err != nil {
				return Order{}, fmt.Errorf("id %s: %w", textclip.Value(o.ID), err)
			}
			o.HasLines = true
			if f.LineItems == "" {
				o.LineCount = len(o.Lines)
			}
		}
	}
	return o, nil
}

// line reads one element of the lines array through options.lines. A
// line without a configured id gets its position; the currency defaults
// to the order's.
func (c *httpKindConnector) line(i int, v any, currency string) (OrderLine, error) {
	lp := c.opts.Lines
	m, ok := v.(map[string]any)
	if !ok {
		return OrderLine{}, fmt.Errorf("is %s, not an object", jsonKindOf(v))
	}
	l := OrderLine{ID: PositionLineID(i), Currency: currency}
	if lp.ID != "" {
		idv, _ := lookup(m, lp.ID)
		switch idv.(type) {
		case string, json.Number:
			l.ID, _ = scalarText(idv)
		case nil:
			l.ID = ""
		default:
			return OrderLine{}, fmt.Errorf("id at %q is %s, want a string or number", lp.ID, jsonKind(idv))
		}
		if l.ID == "" {
			return OrderLine{}, fmt.Errorf("missing id at %q", lp.ID)
		}
	}
	for _, s := range []struct {
		path string
		dst  *string
	}{{lp.SKU, &l.SKU}, {lp.Title, &l.Title}, {lp.UnitPrice, &l.UnitPrice}, {lp.Currency, &l.Currency}} {
		if v, ok := c.field(m, s.path); ok {
			if *s.dst, ok = scalarText(v); !ok {
				return OrderLine{}, fmt.Errorf("line %s: %s is %s, not a single value", textclip.Value(l.ID), s.path, showJSON(v))
			}
		}
	}
	qv, ok := c.field(m, lp.Quantity)
	if !ok {
		return OrderLine{}, fmt.Errorf("line %s: missing quantity at %q", textclip.Value(l.ID), lp.Quantity)
	}
	q, ok := scalarText(qv)
	n, err := strconv.ParseInt(q, 10, 64)
	if !ok || err != nil {
		return OrderLine{}, fmt.Errorf("line %s: %s is %s, not a whole number", textclip.Value(l.ID), lp.Quantity, showJSON(qv))
	}
	l.Quantity = n
	return l, checkLineValues(l, "line", lp.Quantity, lp.UnitPrice)
}

// jsonKindOf names any decoded JSON value's kind, with an article.
func jsonKindOf(v any) string {
	switch v.(type) {
	case string:
		return valueKind("string")
	case json.Number:
		return valueKind("number")
	}
	return jsonKind(v)
}

// field looks up an optional field: false when unconfigured, absent or null.
func (c *httpKindConnector) field(m map[string]any, path string) (any, bool) {
	if path == "" {
		return nil, false
	}
	v, ok := lookup(m, path)
	return v, ok && v != nil
}

// classify maps a response to the error classes by the configured status
// lists: rate_limit_status (429) wait, 401 and 403 are credential failures,
// retryable_status (408, 425 and every 5xx by default) retry, any other
// non-2xx is permanent. The message comes from errors.message_path, else
// from the usual error shapes.
func (c *httpKindConnector) classify(resp *resty.Response) error {
	code := resp.StatusCode()
	if code >= 200 && code < 300 {
		return nil
	}
	e := c.opts.Errors
	msg := errorMessage(code, resp.Body())
	if e.MessagePath != "" {
		if m, err := decodeObject(resp.Body()); err == nil {
			if v, ok := lookup(m, e.MessagePath); ok {
				if s, ok := scalarText(v); ok && s != "" {
					msg = textclip.Line(s)
				}
			}
		}
	}
	retryable := code == http.StatusRequestTimeout || code == http.StatusTooEarly || code >= 500
	if e.RetryableStatus != nil {
		retryable = slices.Contains(e.RetryableStatus, code)
	}
	switch {
	case slices.Contains(e.RateLimitStatus, code):
		return rateLimited(c.platform, resp.Header(), e.RetryAfterHeader, e.RateLimitHeader)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return authError(c.platform, c.cred, code, msg)
	case retryable:
		return &TransientError{Platform: c.platform, Msg: fmt.Sprintf("HTTP %d: %s", code, msg)}
	}
	return &PermanentError{Platform: c.platform, Status: code, Msg: msg}
}
