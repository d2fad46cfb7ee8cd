package config

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
)

// DecodePlatformJSON decodes a platform's settings from JSON (the payload
// of a `config` signal or update, or `ordersync config validate -o json`)
// as strictly as the platforms file is read: an unknown field, at any depth
// outside options, is an error naming it ("rate_limit.bogus"); so is a
// value of the wrong type, a payload that is not one JSON object, or
// anything after it. Field names match exactly (encoding/json would also
// take "Kind" for "kind"). Every problem is reported at once, in a stable
// order, in a *ValidationError, so workflow code may call it.
//
// It decodes only: call Validate for the settings' form and ranges. Options
// are checked by their kind's schema in Validate.
func DecodePlatformJSON(b []byte) (Platform, error) {
	var p Platform
	if err := decodeSettingsObject(b, nil, &p.Name, reflect.ValueOf(&p).Elem()); err != nil {
		return Platform{}, err
	}
	return p, nil
}

// decodeSettingsObject decodes one JSON object of settings into target
// (a struct, by json tag) strictly, reading its "name" into name first for
// the messages; the keys in ignore are dropped unread.
func decodeSettingsObject(b []byte, ignore []string, name *string, target reflect.Value) error {
	ve := &ValidationError{}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			ve.add("", "", "settings are not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
		} else {
			ve.add("", "", "settings must be one JSON object of platform settings, got %s", clipJSON(b))
		}
		return ve
	}
	for _, k := range ignore {
		delete(fields, k)
	}
	if raw, ok := fields["name"]; ok {
		_ = json.Unmarshal(raw, name) // for the messages; a bad name is reported below
	}
	decodeJSONFields(fields, target, *name, "", ve)
	if len(ve.Problems) > 0 {
		return ve
	}
	return nil
}

// decodeJSONFields sets target's fields (by json tag) from fields, key by
// key in sorted order, so each problem names its field.
func decodeJSONFields(fields map[string]json.RawMessage, target reflect.Value, platform, prefix string, ve *ValidationError) {
	index := jsonFields(target.Type())
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := prefix + k
		i, ok := index[k]
		if !ok {
			ve.add(platform, name, "unknown field")
			continue
		}
		fv := target.Field(i)
		raw := fields[k]
		if fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct && string(raw) != "null" {
			fv.Set(reflect.New(fv.Type().Elem())) // a nested object (bulk) is decoded as strictly
			fv = fv.Elem()
		}
		if fv.Kind() == reflect.Struct && string(raw) != "null" {
			var sub map[string]json.RawMessage
			if err := json.Unmarshal(raw, &sub); err != nil {
				ve.add(platform, name, "must be an object, got %s", clipJSON(raw))
				continue
			}
			decodeJSONFields(sub, fv, platform, name+".", ve)
			continue
		}
		fresh := reflect.New(fv.Type())
		if err := json.Unmarshal(raw, fresh.Interface()); err != nil {
			ve.add(platform, name, "%s", jsonProblem(err, clipJSON(raw)))
			continue
		}
		fv.Set(fresh.Elem())
	}
}

// jsonFields maps the json names of t's fields to their index.
func jsonFields(t reflect.Type) map[string]int {
	out := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag != "" && tag != "-" {
			out[tag] = i
		}
	}
	return out
}

// jsonProblem says what is wrong with a value in words, without Go type names.
func jsonProblem(err error, got string) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		want := describeType(te.Type)
		if te.Type.Kind() == reflect.Float64 {
			want = "a number"
		}
		if te.Type.Kind() == reflect.Map {
			want = "an object"
		}
		return "must be " + want + ", got " + got
	case errors.As(err, &se):
		return "not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// clipJSON shows a raw value in a message, shortened when long.
func clipJSON(raw json.RawMessage) string {
	const limit = 80
	if len(raw) > limit {
		return string(raw[:limit]) + "..."
	}
	return string(raw)
}
