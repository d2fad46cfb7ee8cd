package tuning

import (
	"testing"
	"time"
)

func TestParseDays(t *testing.T) {
	ok := map[string]time.Duration{
		"-2d":    -48 * time.Hour,
		"2d":     48 * time.Hour,
		"-1d12h": -36 * time.Hour,
		"1.5d":   36 * time.Hour,
		"-6h":    -6 * time.Hour,
		"90s":    90 * time.Second,
		"0":      0,
		"0d":     0,
		"+1d30m": 24*time.Hour + 30*time.Minute,
		"-2160h": -2160 * time.Hour,
	}
	for in, want := range ok {
		got, err := ParseDays(in)
		if err != nil || got != want {
			t.Errorf("ParseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-", "d", "-d", "2x", "2d-3h", "1e3d", "--2d", "2dd", "abc"} {
		if got, err := ParseDays(in); err == nil {
			t.Errorf("ParseDays(%q) = %v, want an error", in, got)
		}
	}
}
