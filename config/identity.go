package config

import (
	"encoding/json"
	"reflect"
	"sort"
)

// A platform's settings are of two sorts.
//
// Identity fields say where the platform's requests go and which secret
// they carry: kind, endpoint, credentials and options (options hold URLs
// and request shapes: token_url, the http kind's path, auth and headers).
// A worker sends a credential only with the identity its own platforms
// file declares for the platform (see activities.ConnectorCache), so
// anyone able to send a `config` signal or update cannot point a secret
// at another host, or read another secret (`{"env":
// "ORDERSYNC_STORE_DSN"}`) into a request. To change an identity field,
// edit the platforms file every worker reads; workers re-read it.
//
// Every other field is tuning (interval, overlap, settle, timeout, retries
// and their intervals, concurrency, rate_limit, rate_limit_wait, page_size,
// max_pages, backfill_max_span, resweep_delay, breaker_failures, lag_alert,
// dead_letter_retry, windows, start, task_queue): `config` changes it for a
// running cursor at once, within the ranges Validate enforces.

// IdentityDiff names the first identity field in which got differs from
// declared ("kind", "endpoint", "credentials" or "options.<key>"), or ""
// when they agree. Options are compared as JSON, the form they travel in,
// so a number read from YAML equals the same number after a round trip
// through Temporal; absent and empty options agree.
func IdentityDiff(declared, got Platform) string {
	switch {
	case declared.Kind != got.Kind:
		return "kind"
	case declared.Endpoint != got.Endpoint:
		return "endpoint"
	case declared.Credentials != got.Credentials:
		return "credentials"
	}
	keys := map[string]bool{}
	for k := range declared.Options {
		keys[k] = true
	}
	for k := range got.Options {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		a, inA := declared.Options[k]
		b, inB := got.Options[k]
		if inA != inB || !sameJSON(a, b) {
			return "options." + k
		}
	}
	return ""
}

// sameJSON reports whether a and b are equal as JSON values.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
