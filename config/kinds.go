package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ordersync/ordersync/internal/tuning"
)

// KindInfo is what ordersync knows about a connector kind from its platform's
// documentation: defaults for the settings a platforms file leaves unset (in
// the default block and the platform entry alike), and limits checked at load.
type KindInfo struct {
	PageSize    int       // default page size
	MaxPageSize int       // the largest page the API accepts; 0: no known limit
	RateLimit   RateLimit // default request rate; a zero field keeps ordersync's default
	Interval    Duration  // default slice width; 0 keeps ordersync's default
	Settle      Duration  // default settle; 0 keeps ordersync's default
	MinSettle   Duration  // the platform rejects windows that end closer to now
}

// ProblemFunc reports one problem of a field: a kind's options report the
// path inside options ("api_version"), its other checks the setting
// ("endpoint", "max_pages", "options.line_items_page_size").
type ProblemFunc func(field, format string, args ...any)

// OptionsSchema is a kind's options type: a struct whose fields carry yaml
// tags, decoded from a platform's options (YAML, or JSON from a message).
// Finish fills in defaults and reports problems of the decoded values.
type OptionsSchema interface {
	Finish(p Platform, bad ProblemFunc)
}

// KindSpec is one connector kind as config uses it: the defaults its
// platform's documentation gives, its options type and the checks, tuning
// and warnings only it knows. Package connectors defines each kind's spec
// beside its connector (connectors/spec_<kind>.go) and registers it from
// its init with RegisterKind; config does not import connectors, so a
// binary that loads platforms links connectors (docs/connectors.md,
// "Adding a kind"). The hooks get the options decoded once by config.
type KindSpec struct {
	Name string
	// Defaults are the kind's at its default API; a zero field keeps
	// ordersync's own default.
	Defaults KindInfo
	// APIOption names the option that picks another API of the platform,
	// and APIDefaults are the defaults by its value (amazon's v0, Shopify's
	// REST): a different API has different limits.
	APIOption   string
	APIDefaults map[string]KindInfo
	// NewOptions returns a new value of the kind's options type; nil: the
	// kind takes no options and ignores any it is given.
	NewOptions func() OptionsSchema
	// Check reports what else only the kind knows of the platform, after
	// its page limits and before its options' problems. nil: nothing.
	Check func(p Platform, bad ProblemFunc)
	// CheckTuning reports what the kind's options mean for the platform's
	// tuning, once its limits and options are valid (opts: the decoded
	// options, nil for a kind without options). nil: nothing.
	CheckTuning func(p Platform, opts OptionsSchema, bad ProblemFunc)
	// Derive sets the tuning workflows decide by that the kind derives from
	// its options (Shopify's bulk backfill), so workflow inputs carry it
	// instead of the options. opts is nil when they do not decode. nil:
	// nothing.
	Derive func(p Platform, opts OptionsSchema, s *tuning.Settings)
	// Warnings reports settings that load but deserve a second look
	// (warnings.go), given the decoded options; not called when they do
	// not decode (the load reports that). nil: none.
	Warnings func(p Platform, opts OptionsSchema, now time.Time, warn ProblemFunc)
}

// The registry of kinds. It is filled by RegisterKind from package
// connectors' init functions and only read afterwards, so it needs no lock.
var (
	kindSpecs []KindSpec // in registration order, which Kinds keeps
	// anyKindOption lists the top-level option names some kind knows. A
	// key one kind does not know but another does is ignored rather than
	// reported, so a default block can carry options for several kinds; a
	// typo is reported.
	anyKindOption = map[string]bool{}
)

// RegisterKind adds a kind's spec to the registry. It is called from init
// functions (connectors/specs.go); an unnamed or twice registered kind
// panics, as that is a programming error.
func RegisterKind(s KindSpec) {
	if s.Name == "" {
		panic("config: a kind spec without a name")
	}
	if _, dup := kindSpecOf(s.Name); dup {
		panic("config: kind registered twice: " + s.Name)
	}
	kindSpecs = append(kindSpecs, s)
	if s.NewOptions != nil {
		for name := range yamlFields(reflect.TypeOf(s.NewOptions()).Elem()) {
			anyKindOption[name] = true
		}
	}
}

// Kinds lists the connector kinds a platform may name, in registration
// order. Empty when package connectors is not linked.
func Kinds() []string {
	names := make([]string, len(kindSpecs))
	for i, s := range kindSpecs {
		names[i] = s.Name
	}
	return names
}

// LookupKind is the registered spec of a kind; false for a kind nothing
// registered.
func LookupKind(kind string) (KindSpec, bool) { return kindSpecOf(kind) }

// kindSpecOf is the spec of a kind; false for a kind not registered.
func kindSpecOf(kind string) (KindSpec, bool) {
	for _, s := range kindSpecs {
		if s.Name == kind {
			return s, true
		}
	}
	return KindSpec{}, false
}

// unregisteredKind is the problem of a kind when no kind is registered at
// all: the binary does not link package connectors, whose init functions
// register them, and every platform would otherwise be refused as of an
// unknown kind, or its kind's defaults and checks silently skipped.
func unregisteredKind(kind string) (string, bool) {
	if len(kindSpecs) > 0 {
		return "", false
	}
	return fmt.Sprintf("kind %q has no registered spec: is package connectors linked?", kind), true
}

// KindDefaults returns what ordersync knows about a kind (zero for kinds with
// no documented limits, such as sim and http), for the kind's default API.
func KindDefaults(kind string) KindInfo {
	s, _ := kindSpecOf(kind)
	return s.Defaults
}

// kindInfoOf is what ordersync knows about p's kind at the API its options
// choose: amazon on the legacy v0 API has v0's rate, shopify on REST its
// request bucket.
func kindInfoOf(p Platform) KindInfo {
	s, _ := kindSpecOf(p.Kind)
	if s.APIOption == "" {
		return s.Defaults
	}
	if api, ok := p.Options[s.APIOption].(string); ok {
		if k, ok := s.APIDefaults[api]; ok {
			return k
		}
	}
	return s.Defaults
}

// applyKindDefaults sets the kind's defaults on every field that neither the
// default block nor the platform entry set; explicit holds the field paths
// they did set ("page_size", "rate_limit.rps", ...).
func applyKindDefaults(p *Platform, explicit map[string]bool) {
	if _, ok := kindSpecOf(p.Kind); !ok {
		return
	}
	k := kindInfoOf(*p)
	unset := func(field string, nonZero bool) bool { return nonZero && !explicit[field] }
	if unset("page_size", k.PageSize > 0) {
		p.PageSize = k.PageSize
	}
	if unset("rate_limit.rps", k.RateLimit.RPS > 0) {
		p.RateLimit.RPS = k.RateLimit.RPS
	}
	if unset("rate_limit.burst", k.RateLimit.Burst > 0) {
		p.RateLimit.Burst = k.RateLimit.Burst
	}
	if unset("interval", k.Interval > 0) {
		p.Interval = k.Interval
	}
	if unset("settle", k.Settle > 0) {
		p.Settle = k.Settle
	}
}

// validateKind checks what only the kind knows: page size and settle limits,
// the kind's own checks and its options, decoded once.
func (p Platform) validateKind() *ValidationError {
	ve := &ValidationError{}
	checkKindLimits(p.tuning(), kindInfoOf(p), p.reporter(ve, nil))
	limitsOK := len(ve.Problems) == 0
	bad := func(field, format string, args ...any) { ve.add(p.Name, field, format, args...) }
	s, _ := kindSpecOf(p.Kind)
	if s.Check != nil {
		s.Check(p, bad)
	}
	opts, ove := p.kindOptions(s)
	if s.CheckTuning != nil && limitsOK && ove == nil {
		s.CheckTuning(p, opts, bad)
	}
	ve.merge(ove)
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// kindOptions decodes p's options as s's options type: nil, nil for a kind
// without options.
func (p Platform) kindOptions(s KindSpec) (OptionsSchema, *ValidationError) {
	if s.NewOptions == nil {
		return nil, nil
	}
	opts := s.NewOptions()
	if ve := p.decodeKindOptions(opts); ve != nil {
		return nil, ve
	}
	return opts, nil
}

// decodeKindOptions decodes p.Options into target, fills in defaults and
// validates; problems name the field as "options.<path>".
func (p Platform) decodeKindOptions(target OptionsSchema) *ValidationError {
	ve := &ValidationError{}
	bad := func(field, format string, args ...any) { ve.add(p.Name, "options."+field, format, args...) }
	decodeOptions(p.Options, target, "", bad, anyKindOption)
	if len(ve.Problems) == 0 {
		target.Finish(p, bad)
	}
	if len(ve.Problems) == 0 {
		return nil
	}
	return ve
}

// KindOptions decodes, defaults and validates p's options as T, the
// options type of p's kind (connectors.ShopifyOptions, ...): what reads a
// kind's settings outside its connector, which gets them decoded
// (connectors.New). Problems name the field as "options.<path>".
func KindOptions[T any, PT interface {
	*T
	OptionsSchema
}](p Platform) (T, error) {
	var o T
	if ve := p.decodeKindOptions(PT(&o)); ve != nil {
		return o, ve
	}
	return o, nil
}

// LoopbackHost says whether h names the loopback interface (localhost,
// 127.0.0.0/8, ::1), as the plain-text rule judges endpoints.
func LoopbackHost(h string) bool { return loopbackHost(h) }

// decodeOptions sets target's fields (by yaml tag) from a generic map, as
// YAML or JSON (a `config` signal) leave it. known, at the top level only,
// names keys to skip silently.
func decodeOptions(m map[string]any, target any, prefix string, bad ProblemFunc, known map[string]bool) {
	v := reflect.ValueOf(target).Elem()
	fields := yamlFields(v.Type())
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		idx, ok := fields[k]
		switch {
		case ok:
			decodeOptionValue(m[k], v.Field(idx), prefix+k, bad)
		case !known[k]:
			names := make([]string, 0, len(fields))
			for n := range fields {
				names = append(names, n)
			}
			sort.Strings(names)
			bad(prefix+k, "unknown option (known here: %s)", strings.Join(names, ", "))
		}
	}
}

func decodeOptionValue(val any, fv reflect.Value, name string, bad ProblemFunc) {
	orig := val
	switch fv.Kind() {
	case reflect.Struct:
		sub, ok := val.(map[string]any)
		if !ok {
			bad(name, "must be a mapping, got %s", showValue(val))
			return
		}
		decodeOptions(sub, fv.Addr().Interface(), name+".", bad, nil)
		return
	case reflect.Map: // map[string]string: scalars are taken as their text
		sub, ok := val.(map[string]any)
		if !ok {
			bad(name, "must be a mapping of names to values, got %s", showValue(val))
			return
		}
		out := make(map[string]string, len(sub))
		subKeys := make([]string, 0, len(sub))
		for k := range sub {
			subKeys = append(subKeys, k)
		}
		sort.Strings(subKeys) // problems come in a stable order, even inside workflows
		for _, k := range subKeys {
			x := sub[k]
			switch x.(type) {
			case map[string]any, []any, nil:
				bad(name+"."+k, "must be a single value, got %s", showValue(x))
			default:
				out[k] = fmt.Sprint(x)
			}
		}
		fv.Set(reflect.ValueOf(out))
		return
	case reflect.Slice:
		if _, isList := val.([]any); !isList && val != nil {
			val = []any{val} // a single value is a list of one
		}
	}
	b, err := json.Marshal(val)
	if err == nil {
		err = json.Unmarshal(b, fv.Addr().Interface())
	}
	if err != nil {
		bad(name, "must be %s, got %s", describeType(fv.Type()), showValue(orig))
	}
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s"
	}
	return t.String()
}

func showValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// checkEntryOptions reports an option a platform entry sets itself that
// its kind does not have but another kind does. The default block may
// carry options for several kinds (each kind ignores the others'), but an
// entry's own options are for its kind alone: a shopify platform with
// options.token_url (an amazon and ebay option) would validate and be
// silently ignored. Keys no kind knows are reported as typos by the
// kind's own decoding; kinds without an options schema (sim) keep theirs
// free.
func checkEntryOptions(p Platform, entry *yaml.Node, ve *ValidationError) {
	s, ok := kindSpecOf(p.Kind)
	if !ok || s.NewOptions == nil || entry == nil || entry.Kind != yaml.MappingNode {
		return
	}
	var opts *yaml.Node
	for i := 0; i+1 < len(entry.Content); i += 2 {
		if entry.Content[i].Value == "options" {
			opts = entry.Content[i+1]
		}
	}
	if opts == nil || opts.Kind != yaml.MappingNode {
		return
	}
	own := yamlFields(reflect.TypeOf(s.NewOptions()).Elem())
	for i := 0; i+1 < len(opts.Content); i += 2 {
		key := opts.Content[i]
		if _, ok := own[key.Value]; ok || !anyKindOption[key.Value] {
			continue
		}
		var of []string
		for _, k := range kindSpecs {
			if k.NewOptions != nil {
				if _, ok := yamlFields(reflect.TypeOf(k.NewOptions()).Elem())[key.Value]; ok {
					of = append(of, k.Name)
				}
			}
		}
		names := make([]string, 0, len(own))
		for n := range own {
			names = append(names, n)
		}
		sort.Strings(names)
		ve.add(p.Name, "options."+key.Value, "is an option of kind %s, not of kind %s, which would ignore it (line %d; known here: %s)",
			strings.Join(of, " and "), p.Kind, key.Line, strings.Join(names, ", "))
	}
}
