package gctune

import (
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

func TestApplySetsTheDefaultWithoutGOGC(t *testing.T) {
	t.Setenv("GOGC", "") // restores the variable after the test
	os.Unsetenv("GOGC")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if got, err := Apply(); got != DefaultGCPercent || err != nil {
		t.Fatalf("Apply() = %d, %v; want %d", got, err, DefaultGCPercent)
	}
	if got := current(); got != DefaultGCPercent {
		t.Fatalf("GC percent in effect = %d, want %d", got, DefaultGCPercent)
	}
}

func TestApplyKeepsAnOperatorsGOGC(t *testing.T) {
	// The runtime reads GOGC at start-up; here the test plays that part.
	t.Setenv("GOGC", "150")
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	if got, err := Apply(); got != 150 || err != nil {
		t.Fatalf("Apply() = %d, %v; want the operator's 150", got, err)
	}
	if got := current(); got != 150 {
		t.Fatalf("GC percent in effect = %d, want 150", got)
	}
}

func TestApplyKeepsGOGCOff(t *testing.T) {
	t.Setenv("GOGC", "off")
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if got, err := Apply(); got != -1 || err != nil {
		t.Fatalf("Apply() = %d, %v; want -1 (off)", got, err)
	}
}

func TestApplyNamesAGOGCTheRuntimeIgnored(t *testing.T) {
	// The runtime falls back to 100 for a value it cannot read.
	t.Setenv("GOGC", "OFF")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	got, err := Apply()
	if got != DefaultGCPercent || current() != DefaultGCPercent {
		t.Fatalf("Apply() = %d (in effect %d), want ordersync's %d", got, current(), DefaultGCPercent)
	}
	if err == nil || !strings.Contains(err.Error(), `GOGC="OFF"`) {
		t.Fatalf("error %v does not name the value", err)
	}
}
