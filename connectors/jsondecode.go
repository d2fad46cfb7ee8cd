package connectors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ordersync/ordersync/internal/textclip"
)

// Decoding platforms' JSON so that a broken page or order is reported by
// platform, page, order index and byte offset, and numbers keep their
// literal text.

// decodeJSON unmarshals body into v. A syntax or type error becomes a
// MalformedError with the byte offset where parsing failed.
func decodeJSON(platform string, page int, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &MalformedError{Platform: platform, Page: page, Offset: jsonErrorOffset(err, len(body)), Err: err}
	}
	return nil
}

// jsonErrorOffset is the byte offset a JSON error points at; bodyLen for a
// truncated body, -1 if unknown.
func jsonErrorOffset(err error, bodyLen int) int64 {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return se.Offset
	case errors.As(err, &te):
		return te.Offset
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return int64(bodyLen)
	}
	return -1
}

// jsonItem is one element of a JSON array and where it starts in the body.
type jsonItem struct {
	Offset int64
	Raw    json.RawMessage
}

// decodeArrayField returns the elements of the array under key field of a
// JSON object body, each with its byte offset, so a connector can report
// which order of a page is broken and where. A null field gives no elements;
// a missing field or any other shape is a MalformedError.
func decodeArrayField(platform string, page int, body []byte, field string) ([]jsonItem, error) {
	return decodeArrayPath(platform, page, body, []string{field})
}

// decodeArrayPath is decodeArrayField for an array nested in objects
// (path data, orders for {"data":{"orders":[...]}}); an empty path means the
// body itself is the array (WooCommerce).
func decodeArrayPath(platform string, page int, body []byte, path []string) ([]jsonItem, error) {
	bad := func(off int64, err error) error {
		return &MalformedError{Platform: platform, Page: page, Offset: off, Err: err}
	}
	fail := func(err error) error { return bad(jsonErrorOffset(err, len(body)), err) }
	if !json.Valid(body) { // Unmarshal reports the exact offset; the Decoder only the value's start
		var v json.RawMessage
		return nil, fail(json.Unmarshal(body, &v))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	for depth := 0; ; depth++ {
		at := skipSeparators(body, dec.InputOffset())
		t, err := dec.Token()
		if err != nil {
			return nil, fail(err)
		}
		name := strings.Join(path[:depth], ".")
		switch {
		case depth == len(path) && t == nil:
			return nil, nil
		case depth == len(path) && t != json.Delim('['):
			if depth == 0 {
				return nil, bad(0, errors.New("body is not a JSON array"))
			}
			return nil, bad(at, fmt.Errorf("field %q is not an array", name))
		case depth == len(path):
			return readArrayItems(dec, body, fail)
		case t == nil:
			return nil, bad(-1, fmt.Errorf("field %q is missing", strings.Join(path, ".")))
		case t != json.Delim('{') && depth == 0:
			return nil, bad(0, errors.New("body is not a JSON object"))
		case t != json.Delim('{'):
			return nil, bad(at, fmt.Errorf("field %q is not an object", name))
		}
		if !seekKey(dec, path[depth]) {
			return nil, bad(-1, fmt.Errorf("field %q is missing", strings.Join(path, ".")))
		}
	}
}

// seekKey reads an object's members up to key, leaving the decoder at its
// value; false if the object has no such key. The body is valid JSON.
func seekKey(dec *json.Decoder, key string) bool {
	for dec.More() {
		t, err := dec.Token()
		if k, _ := t.(string); err != nil || k == key {
			return err == nil
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

func readArrayItems(dec *json.Decoder, body []byte, fail func(error) error) ([]jsonItem, error) {
	var items []jsonItem
	for dec.More() {
		off := skipSeparators(body, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fail(err)
		}
		items = append(items, jsonItem{Offset: off, Raw: raw})
	}
	return items, nil
}

// skipSeparators moves an offset past whitespace, commas and colons, onto the next value.
func skipSeparators(body []byte, off int64) int64 {
	for off < int64(len(body)) {
		switch body[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// decodeOrders turns each JSON item into an Order with convert, so every
// connector reports a bad order the same way: platform, page, index, offset.
func decodeOrders[T any](platform string, page int, items []jsonItem, convert func(T, json.RawMessage) (Order, error)) ([]Order, error) {
	orders := make([]Order, 0, len(items))
	for i, it := range items {
		var v T
		err := describeFieldError(json.Unmarshal(it.Raw, &v))
		var o Order
		if err == nil {
			o, err = convert(v, it.Raw)
		}
		if err != nil {
			return nil, itemError(platform, page, i, it, err)
		}
		orders = append(orders, o)
	}
	return orders, nil
}

// itemError is a MalformedError for one order of a page: the offset points
// into the body where the order (or, for a JSON error, the bad byte) is.
func itemError(platform string, page, index int, it jsonItem, err error) *MalformedError {
	off := it.Offset
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		off += jsonErrorOffset(err, len(it.Raw))
	}
	return &MalformedError{Platform: platform, Page: page, Offset: off, Err: fmt.Errorf("order %d: %w", index, err)}
}

// decodeObject decodes one JSON object keeping numbers as json.Number, so
// ids and amounts keep their literal text.
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// lookup follows a dot-separated path through nested objects.
func lookup(v any, path string) (any, bool) {
	if path == "" || path == "." {
		return v, true
	}
	for _, key := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// scalarText is a JSON scalar as text: a string as is, a number as written.
// ok is false for null, objects and arrays.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func showJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return textclip.Value(fmt.Sprint(v))
	}
	return textclip.Value(string(b))
}
