package accounts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync/config"
)

// BuildPlatform builds one validated platform from its settings (a
// platforms-file entry as a mapping, without the name) exactly as a
// platforms file does: ordersync's built-in defaults, then the kind's
// defaults for what the entry leaves unset, then the entry, then the
// default task queue, then Validate. `platform add` and the HTTP API's
// POST /v1/platforms both come here, so an account added either way and a
// filed one agree. Problems come back as a *config.ValidationError.
func BuildPlatform(name string, settings map[string]any) (config.Platform, error) {
	ps, err := BuildPlatforms(nil, map[string]map[string]any{name: settings})
	if err != nil {
		return config.Platform{}, err
	}
	return ps[0], nil
}

// BuildPlatforms builds platforms as a platforms file holding this default
// block (nil: none) and these entries (by name) would: it is that file,
// handed to config.Parse, so every rule of the file (unknown fields,
// types, limits, kind checks) applies unchanged. The result is sorted by
// name.
func BuildPlatforms(defaults map[string]any, platforms map[string]map[string]any) ([]config.Platform, error) {
	entries := make(map[string]any, len(platforms))
	for name, s := range platforms {
		if s == nil {
			s = map[string]any{}
		}
		entries[name] = yamlable(s)
	}
	doc := map[string]any{"platforms": entries}
	if defaults != nil {
		doc["default"] = yamlable(defaults)
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode settings: %w", err)
	}
	f, err := config.Parse(b)
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		// The lines are those of the document built here, which the
		// caller never saw: name the field only.
		for i := range ve.Problems {
			ve.Problems[i].Reason = yamlLine.ReplaceAllString(ve.Problems[i].Reason, "")
		}
	}
	if err != nil {
		return nil, err
	}
	return f.Platforms, nil
}

// yamlLine is the " (line N)" config.Parse adds to a problem.
var yamlLine = regexp.MustCompile(` \(line \d+\)`)

// EditSettings applies change to a platform's settings as the registry
// stores them (its JSON as a mapping) and decodes the result as strictly
// as a `config` signal: an unknown field or a value of the wrong type is a
// *config.ValidationError naming it. It does not validate ranges (the
// Service does, once the edit is done). `platform edit` and PATCH
// /v1/platforms/{name} both come here.
func EditSettings(p *config.Platform, change func(settings map[string]any) error) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	m, err := DecodeObject(b)
	if err != nil {
		return err
	}
	if err := change(m); err != nil {
		return err
	}
	if b, err = json.Marshal(m); err != nil {
		return err
	}
	edited, err := config.DecodePlatformJSON(b)
	if err != nil {
		return err
	}
	*p = edited
	return nil
}

// DecodeObject decodes one JSON object with its numbers as json.Number,
// so they are written on exactly as they were read (no float64 detour
// between the caller and config's strict decoding).
func DecodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("want a JSON object, got null")
	}
	return m, nil
}

// yamlable turns decoded JSON and YAML values into what yaml.v3 writes as
// the same scalar: a json.Number as a YAML number (it would otherwise be
// a quoted string), a timestamp as RFC 3339 text. Maps and lists are
// copied, so the caller's are left alone.
func yamlable(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case time.Time:
		return x.UTC().Format(time.RFC3339)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = yamlable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = yamlable(e)
		}
		return out
	}
	return v
}
