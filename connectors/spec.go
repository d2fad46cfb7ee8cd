package connectors

import (
	"net/url"
	"time"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/credentials"
	"github.com/ordersync/ordersync/internal/tuning"
)

// Spec is everything ordersync knows about one connector kind, defined
// beside its connector (spec_<kind>.go) and registered in specs.go: the
// defaults its platform documents, its options type O (a struct with yaml
// tags and a Finish method; NoOptions for a kind without options), the
// checks, derived tuning and warnings only it knows, and its constructor.
// Registration hands config its part (config.RegisterKind), so loading a
// platforms file applies the defaults and checks without config importing
// connectors. A platform's options are decoded once per use: validation
// decodes them for the checks, New for the constructor.
type Spec[O any] struct {
	Name string
	// Defaults are the kind's at its default API; a zero field keeps
	// ordersync's own default.
	Defaults config.KindInfo
	// APIOption names the option that picks another API of the platform,
	// and APIDefaults are the defaults by its value: a different API has
	// different limits.
	APIOption   string
	APIDefaults map[string]config.KindInfo
	// Check reports what else only the kind knows of the platform, whatever
	// its options (woocommerce's plain-HTTP endpoint). nil: nothing.
	Check func(p config.Platform, bad config.ProblemFunc)
	// CheckTuning reports what the decoded options mean for the platform's
	// tuning, once its limits and options are valid (Shopify's query
	// cost). nil: nothing.
	CheckTuning func(p config.Platform, o *O, bad config.ProblemFunc)
	// Derive sets the tuning workflows decide by from the options (Shopify's
	// bulk backfill); o is nil when they do not decode. nil: nothing.
	Derive func(p config.Platform, o *O, s *tuning.Settings)
	// Warnings reports settings that load but deserve a second look. nil:
	// none.
	Warnings func(p config.Platform, o *O, now time.Time, warn config.ProblemFunc)
	// New builds the connector from the platform and its decoded options.
	// src serves the platform's secret, which the connector asks for per
	// request (source.go), so secrets never leave the process that uses
	// them.
	New func(p config.Platform, o *O, src credentials.Source) (Connector, error)
}

// NoOptions is the options type of a kind that takes none: it ignores any
// options it is given (a default block may carry other kinds').
type NoOptions struct{}

// Finish does nothing: there is nothing to default or check.
func (*NoOptions) Finish(config.Platform, config.ProblemFunc) {}

// registerSpec registers a kind: its config part with config, its
// constructor with New. It is called from init (specs.go); a kind
// registered twice panics.
func registerSpec[O any, PO interface {
	*O
	config.OptionsSchema
}](s Spec[O]) {
	_, none := any((*O)(nil)).(*NoOptions)
	typed := func(o config.OptionsSchema) *O {
		if o == nil {
			return nil
		}
		return (*O)(o.(PO))
	}
	k := config.KindSpec{Name: s.Name, Defaults: s.Defaults, APIOption: s.APIOption, APIDefaults: s.APIDefaults, Check: s.Check}
	if !none {
		k.NewOptions = func() config.OptionsSchema { return PO(new(O)) }
	}
	if f := s.CheckTuning; f != nil {
		k.CheckTuning = func(p config.Platform, o config.OptionsSchema, bad config.ProblemFunc) { f(p, typed(o), bad) }
	}
	if f := s.Derive; f != nil {
		k.Derive = func(p config.Platform, o config.OptionsSchema, st *tuning.Settings) { f(p, typed(o), st) }
	}
	if f := s.Warnings; f != nil {
		k.Warnings = func(p config.Platform, o config.OptionsSchema, now time.Time, warn config.ProblemFunc) {
			f(p, typed(o), now, warn)
		}
	}
	config.RegisterKind(k)
	register(s.Name, func(p config.Platform, src credentials.Source) (Connector, error) {
		// The endpoint first, then the options: the order the kinds'
		// constructors have always reported them in.
		if _, err := httpEndpoint(p); err != nil {
			return nil, err
		}
		var o O
		if !none {
			var err error
			if o, err = config.KindOptions[O, PO](p); err != nil {
				return nil, &PermanentError{Platform: p.Name, Msg: err.Error()}
			}
		}
		return s.New(p, &o, src)
	})
}

// defaultURL returns v, or def when v is empty, reporting a v that is not an http(s) URL.
func defaultURL(v, def, field string, bad config.ProblemFunc) string {
	if v == "" {
		return def
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad(field, "%q is not an http(s) URL", v)
	}
	return v
}
