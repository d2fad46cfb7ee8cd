package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodePlatformJSONRoundTrips(t *testing.T) {
	f, err := Parse([]byte(twoPlatforms))
	require.NoError(t, err)
	for _, p := range f.Platforms {
		b, err := json.Marshal(p)
		require.NoError(t, err)
		got, err := DecodePlatformJSON(b)
		require.NoError(t, err)
		// Options come back as JSON values, as they reach a workflow.
		want := p
		require.NoError(t, json.Unmarshal(mustJSON(t, p.Options), &want.Options))
		require.Equal(t, want, got)
	}
	got, err := DecodePlatformJSON([]byte(`{"name":"x","interval":"90s","timeout":30000000000,"rate_limit":null,"windows":null}`))
	require.NoError(t, err, "durations as strings or nanoseconds; null leaves a field unset")
	require.Equal(t, Platform{Name: "x", Interval: Duration(90e9), Timeout: Duration(30e9)}, got)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func TestDecodePlatformJSONRefusesWhatTheFileWould(t *testing.T) {
	tests := []struct {
		name, json string
		want       []string // one per problem, in order
	}{
		{"unknown field", `{"name":"acme","kind":"sim","bogus":1}`, []string{`platform "acme": field "bogus": unknown field`}},
		{"unknown nested fields", `{"name":"acme","rate_limit":{"rps":1,"burts":2},"credentials":{"env":"T","vault":"x"}}`,
			[]string{`platform "acme": field "credentials.vault": unknown field`, `platform "acme": field "rate_limit.burts": unknown field`}},
		{"names match exactly", `{"name":"acme","Kind":"sim"}`, []string{`field "Kind": unknown field`}},
		{"wrong types", `{"name":"acme","page_size":"lots","rate_limit":{"rps":"fast"},"windows":"MON 00:00-01:00","interval":"soon","credentials":"tok"}`,
			[]string{
				`field "credentials": must be an object, got "tok"`,
				`field "interval": "soon" is not a duration like 90s or 15m`,
				`field "page_size": must be an integer, got "lots"`,
				`field "rate_limit.rps": must be a number, got "fast"`,
				`field "windows": must be a list of strings, got "MON 00:00-01:00"`,
			}},
		{"not an object", `["acme"]`, []string{`settings must be one JSON object of platform settings, got ["acme"]`}},
		{"null", `null`, []string{`settings must be one JSON object of platform settings, got null`}},
		{"two values", `{"name":"acme"} {"name":"evil"}`, []string{`settings are not valid JSON: invalid character '{' after top-level value`}},
		{"not JSON", `{"name":`, []string{`settings are not valid JSON: unexpected end of JSON input`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := DecodePlatformJSON([]byte(tt.json))
			require.Equal(t, Platform{}, p, "nothing partial")
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tt.want), err.Error())
			for i, w := range tt.want {
				require.Contains(t, lines[i], w)
			}
		})
	}
}
