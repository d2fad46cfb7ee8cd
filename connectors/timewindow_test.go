package connectors_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/connectors"
)

func TestWindowBounds(t *testing.T) {
	at := func(s string) time.Time {
		return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Add(must(time.ParseDuration(s)))
	}
	require.Equal(t, at("1s"), connectors.CeilTime(at("500ms"), time.Second))
	require.Equal(t, at("1s"), connectors.CeilTime(at("1s"), time.Second))
	require.Equal(t, at("0s"), connectors.LastInstantBefore(at("1s"), time.Second), "inclusive end of [.., 10:00:01)")
	require.Equal(t, at("0s"), connectors.LastInstantBefore(at("500ms"), time.Second), "10:00:00 is before 10:00:00.5")
	require.Equal(t, at("999ms"), connectors.LastInstantBefore(at("1s"), time.Millisecond))
}
