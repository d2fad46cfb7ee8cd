// Package gctune sets the garbage collector's default for ordersync's
// processes.
//
// A process that embeds the Temporal server (`ordersync dev`, the
// benchmark) or runs many workflows (`ordersync worker`) keeps a live heap
// dense in small, pointer-rich objects, so each collection costs several
// times what it costs a plain fetch-and-store loop allocating as much. Go's
// default (GOGC=100: collect when the heap has doubled) then spends a
// large share of the CPU in the collector: in B1 (docs/performance.md,
// change 10) the collector was most of what ordersync cost over the
// direct loop. Collecting when the heap has tripled (200) trades memory
// for that CPU; a memory limit (GOMEMLIMIT, as the Kubernetes manifests
// set) still bounds the heap.
package gctune

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
)

// DefaultGCPercent is GOGC for ordersync's processes when the environment
// does not set it.
const DefaultGCPercent = 200

// Apply sets DefaultGCPercent unless GOGC is set in the environment to a
// value the Go runtime took (a number or "off"); it returns the percent in
// effect (-1: off). A GOGC the runtime could not read (it then silently
// uses 100) gets DefaultGCPercent and an error that names it, for the
// caller to print.
func Apply() (int, error) {
	v := os.Getenv("GOGC")
	if v == "" {
		debug.SetGCPercent(DefaultGCPercent)
		return DefaultGCPercent, nil
	}
	if _, err := strconv.Atoi(v); err == nil || v == "off" {
		return current(), nil
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent, fmt.Errorf("GOGC=%q is neither a number nor off; using ordersync's default %d", v, DefaultGCPercent)
}

// current reads the percent in effect; the runtime offers no getter, so it
// is set and put back.
func current() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
