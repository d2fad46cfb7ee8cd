package config

import (
	"reflect"

	"github.com/ordersync/ordersync/internal/tuning"
)

// A platform's settings are of two sorts. Identity says where its requests
// go and which secret they carry: kind, endpoint, credentials, options
// (options hold URLs and request shapes: token_url, the http kind's path,
// auth and headers) and allow_plaintext. It lives in the account registry
// only; activities read it from there by name (activities.ConnectorCache),
// so no workflow input or message can point a secret at another host or
// read another secret into a request. Everything else is tuning
// (tuning.Settings, api.Settings): what workflows decide by, carried in
// their inputs, and changed for a running cursor by its `config` message
// within the ranges Validate enforces.

// Settings are p's settings as workflows take them (api.Settings): name,
// kind and tuning, plus the tuning its kind derives from its options
// (Shopify's bulk backfill), never its identity (endpoint, credentials,
// options, allow_plaintext), which activities resolve from the registry
// by name. The revision is the caller's to set (0: unknown).
func (p Platform) Settings() tuning.Settings {
	s := p.tuning()
	if spec, ok := kindSpecOf(p.Kind); ok && spec.Derive != nil {
		opts, _ := p.kindOptions(spec) // nil when they do not decode
		spec.Derive(p, opts, &s)
	}
	return s
}

// tuning is p's name, kind and tuning, without derived settings.
func (p Platform) tuning() tuning.Settings {
	return tuning.Settings{
		Name: p.Name, Kind: p.Kind, Start: p.Start, Interval: p.Interval, Overlap: p.Overlap,
		Settle: p.Settle, Timeout: p.Timeout, Retries: p.Retries, RetryInterval: p.RetryInterval,
		RetryBackoff: p.RetryBackoff, MaxRetryInterval: p.MaxRetryInterval, Concurrency: p.Concurrency,
		RateLimit: p.RateLimit, RateLimitWait: p.RateLimitWait, PageSize: p.PageSize, MaxPages: p.MaxPages,
		BackfillMaxSpan: p.BackfillMaxSpan, ResweepDelay: p.ResweepDelay, BreakerFailures: p.BreakerFailures,
		LagAlert: p.LagAlert, StallAlert: p.StallAlert, DeadLetterRetry: p.DeadLetterRetry,
		WebhookInterval: p.WebhookInterval, LiveWindows: p.LiveWindows, Windows: p.Windows, TaskQueue: p.TaskQueue,
		Reconcile: p.Reconcile, ReconcileWindow: p.ReconcileWindow, ReconcileRecheck: p.ReconcileRecheck,
	}
}

// WithTuning is p (its identity, as the registry holds it) with the
// tuning of s: what a request for s is sent with. Name and kind stay p's.
func (p Platform) WithTuning(s tuning.Settings) Platform {
	p.Start, p.Interval, p.Overlap, p.Settle, p.Timeout = s.Start, s.Interval, s.Overlap, s.Settle, s.Timeout
	p.Retries, p.RetryInterval, p.RetryBackoff, p.MaxRetryInterval = s.Retries, s.RetryInterval, s.RetryBackoff, s.MaxRetryInterval
	p.Concurrency, p.RateLimit, p.RateLimitWait, p.PageSize, p.MaxPages = s.Concurrency, s.RateLimit, s.RateLimitWait, s.PageSize, s.MaxPages
	p.BackfillMaxSpan, p.ResweepDelay, p.BreakerFailures = s.BackfillMaxSpan, s.ResweepDelay, s.BreakerFailures
	p.LagAlert, p.StallAlert, p.DeadLetterRetry = s.LagAlert, s.StallAlert, s.DeadLetterRetry
	p.WebhookInterval, p.LiveWindows = s.WebhookInterval, s.LiveWindows
	p.Windows, p.TaskQueue = s.Windows, s.TaskQueue
	p.Reconcile, p.ReconcileWindow, p.ReconcileRecheck = s.Reconcile, s.ReconcileWindow, s.ReconcileRecheck
	return p
}

// ValidateSettings checks settings as a `config` message brings them, by
// the rules Validate checks a platform's tuning with (internal/tuning):
// lengths, name and kind, form, ranges, the dead-letter retry schedule,
// and the kind's page size and settle limits. nil when they pass.
func ValidateSettings(s tuning.Settings) error {
	ve := &ValidationError{}
	report := func(skip map[string]bool) tuning.Bad {
		return func(field, format string, args ...any) {
			if !skip[field] {
				ve.add(s.Name, field, format, args...)
			}
		}
	}
	s.CheckLengths(report(nil))
	checkNameKind(s.Name, s.Kind, report(ve.fields()))
	s.CheckStructure(report(ve.fields()))
	s.CheckRanges(report(ve.fields()))
	s.CheckDeadLetterRetry(report(ve.fields()))
	if len(ve.Problems) == 0 {
		checkKindLimits(s, KindDefaults(s.Kind), report(nil))
	}
	if len(ve.Problems) > 0 {
		return ve
	}
	return nil
}

// CheckSettingsStructure is the frozen check workflow code runs on
// settings (see ValidateStructure): name, kind and the form of the tuning.
func CheckSettingsStructure(s tuning.Settings) error {
	ve := &ValidationError{}
	bad := func(field, format string, args ...any) { ve.add(s.Name, field, format, args...) }
	checkNameKind(s.Name, s.Kind, bad)
	s.CheckStructure(bad)
	if len(ve.Problems) > 0 {
		return ve
	}
	return nil
}

// checkKindLimits reports a page size or settle the kind's API refuses.
func checkKindLimits(s tuning.Settings, k KindInfo, bad tuning.Bad) {
	if k.MaxPageSize > 0 && s.PageSize > k.MaxPageSize {
		bad("page_size", "%s accepts at most %d orders per page, got %d", s.Kind, k.MaxPageSize, s.PageSize)
	}
	if s.Settle < k.MinSettle {
		bad("settle", "%s rejects windows ending less than %s before now; must be at least %s, got %s", s.Kind, k.MinSettle, k.MinSettle, s.Settle)
	}
}

// IgnoredSettingsFields are the identity fields a `config` payload may
// still carry (old CLIs and hand-written payloads send the whole platform
// entry): accepted and ignored, since identity is the registry's.
var IgnoredSettingsFields = []string{"endpoint", "credentials", "allow_plaintext", "options"}

// DecodeSettingsJSON decodes a `config` payload as strictly as
// DecodePlatformJSON: an unknown field at any depth is an error naming
// it, except the identity fields in IgnoredSettingsFields, which are
// dropped unread.
func DecodeSettingsJSON(b []byte) (tuning.Settings, error) {
	var s tuning.Settings
	if err := decodeSettingsObject(b, IgnoredSettingsFields, &s.Name, reflect.ValueOf(&s).Elem()); err != nil {
		return tuning.Settings{}, err
	}
	return s, nil
}
