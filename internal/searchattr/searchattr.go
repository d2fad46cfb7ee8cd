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

// All lists the attributes the dev server registers and a production
// namespace must have (see README, "Using an existing Temporal cluster").
var All = []Definition{
	{Name: Platform.GetName(), Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: SliceStart.GetName(), Type: enumspb.INDEXED_VALUE_TYPE_DATETIME},
	{Name: SliceState.GetName(), Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: PlatformState.GetName(), Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
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
