package gctune

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestApplySetsTheDefaultWithoutGOGC(t *testing.T) {
	t.Setenv("GOGC", "") // restores the variable after the test
	os.Unsetenv("GOGC")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	if got := Apply(); got != DefaultGCPercent {
		t.Fatalf("Apply() = %d, want %d", got, DefaultGCPercent)
	}
	if got := current(); got != DefaultGCPercent {
		t.Fatalf("GC percent in effect = %d, want %d", got, DefaultGCPercent)
	}
}

func TestApplyKeepsAnOperatorsGOGC(t *testing.T) {
	// The runtime reads GOGC at start-up; here the test plays that part.
	t.Setenv("GOGC", "150")
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	if got := Apply(); got != 150 {
		t.Fatalf("Apply() = %d, want the operator's 150", got)
	}
	if got := current(); got != 150 {
		t.Fatalf("GC percent in effect = %d, want 150", got)
	}
}

func TestApplyKeepsGOGCOff(t *testing.T) {
	t.Setenv("GOGC", "off")
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if got := Apply(); got != -1 {
		t.Fatalf("Apply() = %d, want -1 (off)", got)
	}
}
