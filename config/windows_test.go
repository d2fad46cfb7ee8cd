package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWindows(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	ws, err := ParseWindows([]string{"MON-FRI 00:00-06:00 Europe/Berlin", "SAT 22:00-02:00"})
	require.NoError(t, err)

	tests := []struct {
		name     string
		at       time.Time
		open     bool
		nextOpen time.Time
		closesAt time.Time
	}{
		{"weekday night in Berlin", time.Date(2026, 11, 23, 3, 0, 0, 0, berlin), true, time.Date(2026, 11, 23, 3, 0, 0, 0, berlin), time.Date(2026, 11, 23, 6, 0, 0, 0, berlin)},
		{"weekday morning", time.Date(2026, 11, 23, 7, 0, 0, 0, berlin), false, time.Date(2026, 11, 24, 0, 0, 0, 0, berlin), time.Time{}},
		{"friday after close waits for saturday night UTC", time.Date(2026, 11, 27, 7, 0, 0, 0, berlin), false, time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC), time.Time{}},
		{"past midnight into sunday", time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC), true, time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC), time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.open, ws.OpenAt(tt.at))
			require.True(t, tt.nextOpen.Equal(ws.NextOpen(tt.at)), "next open: got %s want %s", ws.NextOpen(tt.at), tt.nextOpen)
			require.True(t, tt.closesAt.Equal(ws.ClosesAt(tt.at)), "closes: got %s want %s", ws.ClosesAt(tt.at), tt.closesAt)
		})
	}
	require.True(t, Windows(nil).OpenAt(time.Now()), "no windows means always open")
}

func TestWindowsAdjacentMerge(t *testing.T) {
	ws, err := ParseWindows([]string{"* 00:00-24:00"})
	require.NoError(t, err)
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	require.True(t, ws.OpenAt(at))
	// Every day open back to back: the close is at least a week ahead.
	require.True(t, ws.ClosesAt(at).Sub(at) >= 6*24*time.Hour)
}
