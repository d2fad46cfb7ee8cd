// Package searchattr names the custom search attributes ordersync sets on its
// workflows, so the Web UI can filter by them (e.g. all failed slices of one
// platform: Platform = "shopify-acme" AND SliceState = "failed").
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
)

// All lists the attributes the dev server registers and `ordersync setup`
// creates on a production namespace. It is built from the keys above, so a
// name or type cannot disagree with what the workflows write; a new key
// goes into this list and nowhere else.
var All = definitions(Platform, SliceStart, SliceState)

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
