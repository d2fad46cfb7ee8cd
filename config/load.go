package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// File is a loaded platforms file: every platform with the defaults merged in.
type File struct {
	Path      string
	Platforms []Platform // sorted by name
	// Destinations receive the change feed (the destinations block), sorted by name.
	Destinations []Destination
}

// Get returns the platform with the given name.
func (f *File) Get(name string) (Platform, bool) {
	for _, p := range f.Platforms {
		if p.Name == name {
			return p, true
		}
	}
	return Platform{}, false
}

// Names lists the platform names in order.
func (f *File) Names() []string {
	names := make([]string, len(f.Platforms))
	for i, p := range f.Platforms {
		names[i] = p.Name
	}
	return names
}

// BuiltinDefaults are ordersync's own defaults, which the file's default block
// and then each platform override field by field.
func BuiltinDefaults() Platform {
	return Platform{
		Start:            "-2160h", // 90 days of backfill
		Interval:         Duration(15 * 60e9),
		Overlap:          Duration(2 * 60e9),
		Settle:           Duration(60e9),
		Timeout:          Duration(30e9),
		Retries:          5,
		RetryInterval:    Duration(10e9),
		RetryBackoff:     2,
		MaxRetryInterval: Duration(10 * 60e9),
		Concurrency:      4,
		RateLimit:        RateLimit{RPS: 2, Burst: 4},
		PageSize:         100,
		MaxPages:         100,
		// The density rule (slicequeue/span.go) already keeps a slice near
		// a quarter of max_pages; this cap only binds on sparse history,
		// where every slice saved is a child workflow's orchestration
		// (docs/performance.md, B1: 30 days instead of 7 halves the slices).
		BackfillMaxSpan: Duration(30 * 24 * 3600e9),
		BreakerFailures: 5,
	}
}

// LoadFile reads and validates a platforms file of at most MaxFileSize bytes.
func LoadFile(path string) (*File, error) {
	b, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(b)
	if err != nil {
		if ve, ok := err.(*ValidationError); ok {
			ve.Source = path
		}
		return nil, err
	}
	f.Path = path
	return f, nil
}

// readLimited reads a platforms file, refusing one larger than MaxFileSize
// before reading it (and while reading it, for files whose size stat does
// not know, such as pipes).
func readLimited(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("platforms file: %w", err)
	}
	defer fh.Close()
	tooLarge := func(size int64) error {
		return &ValidationError{Source: path, Problems: []Problem{{Reason: checkFileSize(size)}}}
	}
	if st, err := fh.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxFileSize {
		return nil, tooLarge(st.Size())
	}
	b, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("platforms file: %w", err)
	}
	if len(b) > MaxFileSize {
		return nil, tooLarge(int64(len(b)))
	}
	return b, nil
}

// Parse reads a platforms file from bytes. Every problem is reported at once
// in a *ValidationError; nothing partial is returned.
func Parse(b []byte) (*File, error) {
	ve := &ValidationError{}
	if msg := checkFileSize(int64(len(b))); msg != "" {
		ve.add("", "", "%s", msg)
		return nil, ve
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			ve.add("", "", "the file is empty; it needs a platforms mapping (see examples/demo-platforms.yaml)")
		} else {
			ve.add("", "", "not valid YAML: %v", err)
		}
		return nil, ve
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		ve.add("", "", "the file must be a mapping with the keys default and platforms")
		return nil, ve
	}
	var defaultNode, platformsNode, destinationsNode *yaml.Node
	top := root.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, val := top.Content[i], top.Content[i+1]
		switch key.Value {
		case "default":
			defaultNode = val
		case "platforms":
			platformsNode = val
		case "destinations":
			destinationsNode = val
		default:
			ve.add("", key.Value, "unknown top-level key (line %d); want default, platforms or destinations", key.Line)
		}
	}
	defaults := BuiltinDefaults()
	defaultsSet := map[string]bool{} // fields the default block sets, which kind defaults must not override
	if defaultNode != nil {
		decodeInto(defaultNode, &defaults, "default", "", ve, defaultsSet)
	}
	f := &File{}
	if platformsNode == nil || len(platformsNode.Content) == 0 {
		ve.add("", "platforms", "no platforms configured")
		return nil, ve
	}
	if platformsNode.Kind != yaml.MappingNode {
		ve.add("", "platforms", "must be a mapping of platform name to settings (line %d)", platformsNode.Line)
		return nil, ve
	}
	if n := len(platformsNode.Content) / 2; n > MaxPlatforms {
		ve.add("", "platforms", "%d platforms; the limit is %d per file (split them over several files, each with its own workers)", n, MaxPlatforms)
		return nil, ve
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(platformsNode.Content); i += 2 {
		name, val := platformsNode.Content[i].Value, platformsNode.Content[i+1]
		if seen[name] {
			ve.add(name, "", "defined twice (line %d)", platformsNode.Content[i].Line)
			continue
		}
		seen[name] = true
		p := defaults
		p.Options = maps.Clone(defaults.Options)
		p.Windows = append([]string(nil), defaults.Windows...)
		p.Name = name
		set := maps.Clone(defaultsSet)
		decodeInto(val, &p, name, "", ve, set)
		checkEntryOptions(p, val, ve) // kinds.go: the entry's own options are its kind's
		applyKindDefaults(&p, set)    // kinds.go: the platform's documented defaults for unset fields
		if p.TaskQueue == "" {
			p.TaskQueue = DefaultTaskQueue(p.Kind)
		}
		ve.merge(p.Validate())
		f.Platforms = append(f.Platforms, p)
	}
	if destinationsNode != nil {
		f.Destinations = parseDestinations(destinationsNode, f.Names(), ve)
	}
	if len(ve.Problems) > 0 {
		return nil, ve
	}
	sort.Slice(f.Destinations, func(i, j int) bool { return f.Destinations[i].Name < f.Destinations[j].Name })
	sort.Slice(f.Platforms, func(i, j int) bool { return f.Platforms[i].Name < f.Platforms[j].Name })
	return f, nil
}

// decodeInto sets the fields named in a mapping node on target one by one, so
// an unknown field or a value of the wrong type is reported with its platform
// and field name, and the other fields still get checked. It records the
// path of every field it sets ("settle", "rate_limit.rps") in set.
func decodeInto(node *yaml.Node, target any, platform, prefix string, ve *ValidationError, set map[string]bool) {
	if node.Kind != yaml.MappingNode {
		ve.add(platform, strings.TrimSuffix(prefix, "."), "must be a mapping (line %d)", node.Line)
		return
	}
	v := reflect.ValueOf(target).Elem()
	fields := yamlFields(v.Type())
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, val := node.Content[i], node.Content[i+1]
		name := prefix + key.Value
		idx, ok := fields[key.Value]
		if !ok {
			ve.add(platform, name, "unknown field (line %d)", key.Line)
			continue
		}
		fv := v.Field(idx)
		if fv.Kind() == reflect.Struct && fv.Type() != reflect.TypeOf(Duration(0)) {
			decodeInto(val, fv.Addr().Interface(), platform, name+".", ve, set)
			continue
		}
		fresh := reflect.New(fv.Type())
		if fv.Kind() == reflect.Map {
			timestampsAsText(val)
		}
		if err := val.Decode(fresh.Interface()); err != nil {
			ve.add(platform, name, "%s (line %d)", cleanYAMLError(err), val.Line)
			continue
		}
		if fv.Kind() == reflect.Map && !fv.IsNil() {
			// options merge key by key over the default block's options.
			iter := fresh.Elem().MapRange()
			for iter.Next() {
				fv.SetMapIndex(iter.Key(), iter.Value())
			}
			set[name] = true
			continue
		}
		fv.Set(fresh.Elem())
		set[name] = true
	}
}

// timestampsAsText makes the plain scalars of node that YAML would read as
// timestamps strings, as written: in options, `api_version: 2026-01-01` is a
// version, and a time.Time would reach the kind as "2026-01-01T00:00:00Z"
// (and travel so through workflow input).
func timestampsAsText(node *yaml.Node) {
	if node.Kind == yaml.ScalarNode && node.Style == 0 && node.ShortTag() == "!!timestamp" {
		node.Tag = "!!str"
	}
	for _, c := range node.Content {
		timestampsAsText(c)
	}
}

func yamlFields(t reflect.Type) map[string]int {
	out := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag != "" && tag != "-" {
			out[tag] = i
		}
	}
	return out
}

func cleanYAMLError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimSpace(msg)
	if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
		msg = msg[i+2:]
	}
	return msg
}

// parseDestinations reads the destinations block: a mapping of name to
// settings over DestinationDefaults, each validated, every problem on its
// own line naming the destination and field.
func parseDestinations(node *yaml.Node, platforms []string, ve *ValidationError) []Destination {
	if node.Kind != yaml.MappingNode {
		ve.add("", "destinations", "must be a mapping of destination name to settings (line %d)", node.Line)
		return nil
	}
	var out []Destination
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		name, val := node.Content[i].Value, node.Content[i+1]
		if seen[name] {
			ve.Problems = append(ve.Problems, Problem{Destination: name, Reason: fmt.Sprintf("defined twice (line %d)", node.Content[i].Line)})
			continue
		}
		seen[name] = true
		d := DestinationDefaults()
		d.Name = name
		// decodeInto names platforms; restate its problems as the destination's.
		dve := &ValidationError{}
		decodeInto(val, &d, name, "", dve, map[string]bool{})
		for _, p := range dve.Problems {
			p.Destination, p.Platform = p.Platform, ""
			ve.Problems = append(ve.Problems, p)
		}
		reported := dve.fields()
		if vve := d.Validate(platforms); vve != nil {
			for _, p := range vve.Problems {
				if !reported[p.Field] { // a field that did not decode is one mistake, not two
					ve.Problems = append(ve.Problems, p)
				}
			}
		}
		out = append(out, d)
	}
	return out
}
