package connectors

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/ordersync/ordersync/internal/textclip"
	"github.com/ordersync/ordersync/order"
)

// Order is the normalized form every connector returns (package order).
type Order = order.Order

// fieldTypeError is a field of an order holding the wrong kind of JSON
// value, said in the platform's terms ("id is an object, want a string")
// rather than Go's. It unwraps to the json error, which has the offset.
type fieldTypeError struct{ err *json.UnmarshalTypeError }

func (e *fieldTypeError) Error() string {
	return fmt.Sprintf("%s is %s, want %s", e.err.Field, valueKind(e.err.Value), wantedKind(e.err.Type))
}

func (e *fieldTypeError) Unwrap() error { return e.err }

// describeFieldError restates a type error of an order's field; other
// errors pass unchanged.
func describeFieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" && te.Type != nil {
		return &fieldTypeError{err: te}
	}
	return err
}

// valueKind names a JSON value kind as encoding/json reports it ("object",
// "number 1e99") with an article.
func valueKind(v string) string {
	switch v {
	case "object", "array":
		return "an " + v
	case "bool":
		return "a boolean"
	case "string", "number":
		return "a " + v
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return "the number " + n // out of range for its field
	}
	return v
}

// jsonKind names the kind of a decoded JSON value that is not a scalar
// an id could be: an object, an array or a boolean.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return valueKind("object")
	case []any:
		return valueKind("array")
	case bool:
		return valueKind("bool")
	}
	return fmt.Sprintf("%T", v)
}

var jsonNumberType = reflect.TypeFor[json.Number]()

// wantedKind names the JSON a Go field type accepts.
func wantedKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == jsonNumberType:
		return "a number"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "a boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "an integer"
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
		return "a non-negative integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "an array"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		return "an object"
	}
	return t.String()
}

// platformField is one of an order's fields as the platform names and
// writes it, so an error can quote both.
type platformField struct{ name, value string }

// orderHead checks what every order must have, an id and an update time
// (the slicing key), and reads the creation time it may have. Times are
// RFC 3339 (ISO 8601 as platforms write it), returned in UTC; an error names
// the order, the field and the value.
func orderHead(id, updated, created platformField) (updatedAt, createdAt time.Time, err error) {
	if id.value == "" {
		return time.Time{}, time.Time{}, errors.New("missing " + id.name)
	}
	parse := func(f platformField) (time.Time, error) {
		t, err := time.Parse(time.RFC3339Nano, f.value)
		if err != nil {
			return time.Time{}, fmt.Errorf("id %s: %s %q is not an ISO 8601 time", textclip.Value(id.value), f.name, textclip.Value(f.value))
		}
		return t.UTC(), nil
	}
	if updatedAt, err = parse(updated); err != nil || created.value == "" {
		return updatedAt, time.Time{}, err
	}
	createdAt, err = parse(created)
	return updatedAt, createdAt, err
}

// ValidDecimal reports whether s is a plain decimal number (order.ValidDecimal).
func ValidDecimal(s string) bool { return order.ValidDecimal(s) }

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
