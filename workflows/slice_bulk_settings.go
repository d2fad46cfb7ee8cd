package workflows

import (
	"time"

	"github.com/ordersync/ordersync/api"
	"github.com/ordersync/ordersync/connectors"
)

// bulkSettings are the Shopify bulk options a slice workflow acts on.
type bulkSettings struct {
	use  bool          // the slice runs as a bulk query
	poll time.Duration // the durable timer between looks at a running query
}

// Frozen defaults of the release that added bulk backfill. A later change
// of config's defaults must not change how a recorded slice replays: such
// a change is a new version (versions.go), not an edit here.
const (
	frozenBulkMinSpan      = 24 * time.Hour
	frozenBulkPollInterval = 10 * time.Second
)

// readBulkSettings is the bulk decision of a slice of this width. Settings
// written since v0.8 carry it derived at the edge (api.Settings.Bulk,
// config.Platform.Settings); settings recorded before carry the kind's
// options instead (LegacyOptions), read by readLegacyBulk as those runs
// read them.
func readBulkSettings(p api.Settings, width time.Duration) bulkSettings {
	if p.Bulk == nil {
		return readLegacyBulk(p, width)
	}
	s := bulkSettings{poll: frozenBulkPollInterval}
	if d := p.Bulk.PollInterval.D(); d > 0 {
		s.poll = d
	}
	minSpan := frozenBulkMinSpan
	if d := p.Bulk.MinSpan.D(); d > 0 {
		minSpan = d
	}
	s.use = p.Kind == "shopify" && p.Bulk.Enabled && width >= minSpan
	return s
}

// readLegacyBulk reads the bulk options of settings recorded before v0.8
// structurally, as workflow code must (doc.go, "Recorded verdicts"): the
// settings check (config.KindOptions) may grow stricter between releases
// and would then turn a replayed bulk slice into a paged one. Settings
// reach a workflow only after that check accepted them; a value this
// reader cannot read pages the slice, which is always safe.
// slice_bulk_settings_test.go checks it agrees with config on every
// accepted form. Can go after release v0.8 (api.Settings.LegacyOptions).
func readLegacyBulk(p api.Settings, width time.Duration) bulkSettings {
	s := bulkSettings{poll: frozenBulkPollInterval}
	if p.Kind != "shopify" {
		return s
	}
	api, ok := optionString(p.LegacyOptions, "api", connectors.ShopifyGraphQL)
	if !ok || api != connectors.ShopifyGraphQL {
		return s
	}
	on := true
	if v, set := p.LegacyOptions["bulk_backfill"]; set && v != nil {
		b, isBool := v.(bool)
		if !isBool {
			return s
		}
		on = b
	}
	minSpan, ok1 := optionDuration(p.LegacyOptions, "bulk_min_span", frozenBulkMinSpan)
	poll, ok2 := optionDuration(p.LegacyOptions, "bulk_poll_interval", frozenBulkPollInterval)
	if !ok1 || !ok2 {
		return s
	}
	s.poll = poll
	s.use = on && width >= minSpan
	return s
}

// withoutLegacyOptions is settings recorded before v0.8 in today's form:
// the bulk decision their options make (readLegacyBulk) as Bulk, and no
// options. Cursors and dead-letter workflows convert their input once, so
// what they carry and hand their slices holds no options from then on;
// readBulkSettings decides alike for both forms at every width.
func withoutLegacyOptions(p api.Settings) api.Settings {
	if p.Bulk != nil || p.Kind != "shopify" {
		p.LegacyOptions = nil // only Shopify's bulk options were ever read
		return p
	}
	b := &api.Bulk{}
	// The legacy reader at an infinite width says whether bulk is on at
	// all; at width 0 it cannot be on, so the poll it reads is the one it
	// would use.
	if wide := readLegacyBulk(p, time.Duration(1<<62)); wide.use {
		b.Enabled = true
		b.PollInterval = api.Duration(wide.poll)
		minSpan, _ := optionDuration(p.LegacyOptions, "bulk_min_span", frozenBulkMinSpan)
		b.MinSpan = api.Duration(minSpan)
	}
	p.Bulk, p.LegacyOptions = b, nil
	return p
}

func optionString(m map[string]any, key, def string) (string, bool) {
	v, set := m[key]
	if !set || v == nil {
		return def, true
	}
	s, ok := v.(string)
	if s == "" {
		return def, ok
	}
	return s, ok
}

// optionDuration reads a duration as config does: a Go duration string,
// or a number of nanoseconds (JSON); zero means the default.
func optionDuration(m map[string]any, key string, def time.Duration) (time.Duration, bool) {
	v, set := m[key]
	if !set || v == nil {
		return def, true
	}
	var d time.Duration
	switch x := v.(type) {
	case string:
		parsed, err := time.ParseDuration(x)
		if err != nil {
			return 0, false
		}
		d = parsed
	case int:
		d = time.Duration(x)
	case int64:
		d = time.Duration(x)
	case float64:
		d = time.Duration(x)
	default:
		return 0, false
	}
	if d == 0 {
		return def, true
	}
	return d, true
}
