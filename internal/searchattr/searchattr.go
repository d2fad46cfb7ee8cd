// Package searchattr names the custom search attributes ordersync sets on its
// workflows, so the Web UI can filter by them (e.g. all failed slices of one
// platform: Platform = "shopify-acme" AND SliceState = "failed"; every
// paused platform: PlatformState = "paused").
package searchattr

import (
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// Definition is one search attribute to register on a namespace.
type Definition struct {
	Name string
	Type enumspb.IndexedValueType
}

var (
	// Platform is the platform name on cursors, slices and dead-letter workflows.
	Platform = temporal.NewSearchAttributeKeyKeyword("Platform")
	// SliceStart is the start of a slice's window.
	SliceStart = temporal.NewSearchAttributeKeyTime("SliceStart")
	// SliceState is running, completed or failed on slice workflows.
	SliceState = temporal.NewSearchAttributeKeyKeyword("SliceState")
	// PlatformState is a cursor's state (PlatformBackfilling, ...), so the
	// Web UI can list e.g. every paused platform: PlatformState = "paused".
	PlatformState = temporal.NewSearchAttributeKeyKeyword("PlatformState")
)

// All lists the attributes the dev server registers and `ordersync setup`
// creates on a production namespace. It is built from the keys above, so a
// name or type cannot disagree with what the workflows write; a new key
// goes into this list and nowhere else.
var All = definitions(Platform, SliceStart, SliceState, PlatformState)

func definitions(keys ...temporal.SearchAttributeKey) []Definition {
	out := make([]Definition, len(keys))
	for i, k := range keys {
		out[i] = Definition{Name: k.GetName(), Type: k.GetValueType()}
	}
	return out
}

// Slice states written to SliceState.
const (
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
)

// Cursor states written to PlatformState: one word for the Web UI's list,
// from the most to the least urgent (a breaker that opened also paused).
const (
	// PlatformBreakerOpen: the circuit breaker paused the cursor; resume closes it.
	PlatformBreakerOpen = "breaker_open"
	// PlatformPaused: an operator paused the cursor.
	PlatformPaused = "paused"
	// PlatformBackfilling: running, still catching up from the start.
	PlatformBackfilling = "backfilling"
	// PlatformCaughtUp: running, following the present slice by slice.
	PlatformCaughtUp = "caught_up"
)
