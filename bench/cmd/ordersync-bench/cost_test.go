package main

import (
	"testing"
	"time"

	"github.com/ordersync/ordersync/config"
)

// The platforms file B12 writes must parse, and each group's platforms
// must carry their own live path: a file that put every account on one
// path would measure the same path twice.
func TestCostPlatformsCarryEachGroupsLivePath(t *testing.T) {
	p := &costParams{Interval: 10 * time.Second, Settle: 2 * time.Second, Overlap: 2 * time.Second, PageSize: 10}
	groups := map[string]costVariant{}
	for _, v := range costVariants {
		groups[costGroupPrefix(v, "empty")+"00"] = v
	}
	if !liveWindowsKnown() {
		t.Fatal("this build's config does not take live_windows")
	}
	b, err := costPlatforms(p, groups, true)("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse(b)
	if err != nil {
		t.Fatalf("B12's platforms file does not parse: %v\n%s", err, b)
	}
	if len(f.Platforms) != len(groups) {
		t.Fatalf("got %d platforms, want %d", len(f.Platforms), len(groups))
	}
	for _, pl := range f.Platforms {
		if want := groups[pl.Name].LiveWindows; pl.LiveWindows != want {
			t.Errorf("%s: live_windows %q, want %q", pl.Name, pl.LiveWindows, want)
		}
	}
}

// Individual markers are not billed (one command_BatchMarkers per workflow
// task is), and a type whose count did not move is no part of the interval.
func TestCostActionsBillableDifference(t *testing.T) {
	before := map[string]float64{"command_StartTimer": 3, "command_BatchMarkers": 1, "command_RecordMarker_LocalActivity": 5, "grpc_QueryWorkflow": 7}
	after := map[string]float64{"command_StartTimer": 5, "command_BatchMarkers": 3, "command_RecordMarker_LocalActivity": 9, "grpc_QueryWorkflow": 7,
		"command_StartChildWorkflowExecution": 1}
	got := billable(diffActions(after, before))
	want := map[string]float64{"command_StartTimer": 2, "command_BatchMarkers": 2, "command_StartChildWorkflowExecution": 1}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %g, want %g (all: %v)", k, got[k], v, got)
		}
	}
}
