package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A platform that sets nothing retries on the default schedule, and its
// settings travel without the field (so payloads of before it, and the
// histories that hold them, stay byte for byte the same).
func TestDeadLetterRetryDefaults(t *testing.T) {
	f, err := Parse([]byte(onePlatform))
	require.NoError(t, err)
	r := f.Platforms[0].DeadLetterRetry
	require.True(t, r.On())
	require.Equal(t, DefaultDeadLetterRetrySchedule, r.Waits())
	for try, want := range map[int]time.Duration{1: 5 * time.Minute, 2: 30 * time.Minute, 3: 2 * time.Hour, 4: 6 * time.Hour, 5: 6 * time.Hour, 400: 6 * time.Hour} {
		require.Equal(t, want, r.Wait(try), "try %d", try)
	}
	require.Equal(t, "5m0s, 30m0s, 2h0m0s, then every 6h0m0s", r.String())
	b, err := json.Marshal(f.Platforms[0])
	require.NoError(t, err)
	require.NotContains(t, string(b), "dead_letter_retry")
}

// The default block and a platform set the schedule and the off switch,
// field by field; both survive the JSON of a config signal.
func TestDeadLetterRetrySettings(t *testing.T) {
	f, err := Parse([]byte("default:\n  dead_letter_retry: {schedule: [10m, 1h]}\n" + onePlatform +
		"  y:\n    kind: sim\n    endpoint: http://127.0.0.1/shops/y\n    credentials: {env: T}\n    dead_letter_retry: {enabled: false}\n"))
	require.NoError(t, err)
	x, _ := f.Get("x")
	y, _ := f.Get("y")
	require.True(t, x.DeadLetterRetry.On())
	require.Equal(t, []time.Duration{10 * time.Minute, time.Hour}, x.DeadLetterRetry.Waits())
	require.Equal(t, time.Hour, x.DeadLetterRetry.Wait(7))
	require.False(t, y.DeadLetterRetry.On())
	require.Equal(t, "off", y.DeadLetterRetry.String())
	require.Equal(t, []time.Duration{10 * time.Minute, time.Hour}, y.DeadLetterRetry.Waits(), "the default block's schedule, kept for when it is on again")

	for _, p := range []Platform{x, y} {
		b, err := json.Marshal(p)
		require.NoError(t, err)
		back, err := DecodePlatformJSON(b)
		require.NoError(t, err)
		require.Equal(t, p.DeadLetterRetry, back.DeadLetterRetry)
	}
}

// Every mistake is one line naming the platform and the field.
func TestDeadLetterRetryValidation(t *testing.T) {
	for _, tt := range []struct{ setting, want string }{
		{"dead_letter_retry: {schedule: [5m, 30s]}", `platform "x": field "dead_letter_retry.schedule": wait 2 is 30s; it must be at least 1m`},
		{"dead_letter_retry: {schedule: [0s]}", `platform "x": field "dead_letter_retry.schedule": wait 1 is 0s; it must be at least 1m`},
		{"dead_letter_retry: {schedule: [-5m]}", `field "dead_letter_retry.schedule": wait 1 is -5m0s; it must be at least 1m`},
		{"dead_letter_retry: {schedule: [5m, 169h]}", `field "dead_letter_retry.schedule": wait 2 is 169h0m0s; it must be at most 168h`},
		{"dead_letter_retry: {schedule: [" + strings.TrimSuffix(strings.Repeat("1h, ", 21), ", ") + "]}",
			`field "dead_letter_retry.schedule": has 21 waits; the limit is 20`},
		{"dead_letter_retry: {schedule: [soon]}", `field "dead_letter_retry.schedule": "soon" is not a duration like 90s or 15m`},
		{"dead_letter_retry: {enabled: maybe}", `field "dead_letter_retry.enabled"`},
		{"dead_letter_retry: {every: 5m}", `field "dead_letter_retry.every": unknown field`},
		{"dead_letter_retry: 5m", `field "dead_letter_retry": must be a mapping`},
	} {
		t.Run(tt.setting, func(t *testing.T) {
			_, err := Parse([]byte(onePlatform + "    " + tt.setting + "\n"))
			require.Error(t, err)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one line per mistake:\n%s", err)
			require.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := Parse([]byte(onePlatform + "    dead_letter_retry: {enabled: true, schedule: [1m, 168h]}\n"))
	require.NoError(t, err, "the bounds themselves are valid")
}

// A config signal's payload is held to the same rules.
func TestDeadLetterRetryFromJSON(t *testing.T) {
	f, err := Parse([]byte(onePlatform))
	require.NoError(t, err)
	b, err := json.Marshal(f.Platforms[0])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	m["dead_letter_retry"] = map[string]any{"schedule": []string{"10s"}}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	p, err := DecodePlatformJSON(b)
	require.NoError(t, err)
	require.ErrorContains(t, p.Validate(), `platform "x": field "dead_letter_retry.schedule": wait 1 is 10s; it must be at least 1m`)
	// Workflow code never sees such a wait below the floor.
	require.Equal(t, MinDeadLetterRetryWait, p.DeadLetterRetry.Wait(1))

	m["dead_letter_retry"] = map[string]any{"enable": false}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	_, err = DecodePlatformJSON(b)
	require.ErrorContains(t, err, `field "dead_letter_retry.enable": unknown field`)
}
