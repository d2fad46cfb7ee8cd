package config

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIdentityDiff(t *testing.T) {
	declared := Platform{Name: "x", Kind: "http", Endpoint: "https://api.example.com", Credentials: CredentialRef{Env: "T"},
		Options: map[string]any{"path": "/orders", "page": 1, "auth": map[string]any{"type": "header", "name": "X-Key"}}}
	tests := []struct {
		name   string
		change func(p *Platform)
		want   string
	}{
		{"same", func(*Platform) {}, ""},
		{"tuning", func(p *Platform) { p.PageSize, p.Interval, p.TaskQueue, p.Windows = 5, Duration(1), "q", []string{"*"} }, ""},
		{"kind", func(p *Platform) { p.Kind = "sim" }, "kind"},
		{"endpoint", func(p *Platform) { p.Endpoint = "https://evil.example.com" }, "endpoint"},
		{"endpoint, trailing slash", func(p *Platform) { p.Endpoint += "/" }, "endpoint"},
		{"credentials env", func(p *Platform) { p.Credentials.Env = "ORDERSYNC_STORE_DSN" }, "credentials"},
		{"credentials file", func(p *Platform) { p.Credentials = CredentialRef{File: "/etc/hostname"} }, "credentials"},
		{"option changed", func(p *Platform) {
			p.Options = map[string]any{"path": "/x", "page": 1, "auth": declared.Options["auth"]}
		}, "options.path"},
		{"nested option changed", func(p *Platform) {
			p.Options = map[string]any{"path": "/orders", "page": 1, "auth": map[string]any{"type": "query", "name": "X-Key"}}
		}, "options.auth"},
		{"option added", func(p *Platform) {
			p.Options = map[string]any{"path": "/orders", "page": 1, "auth": declared.Options["auth"], "token_url": "https://evil"}
		}, "options.token_url"},
		{"options dropped", func(p *Platform) { p.Options = nil }, "options.auth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := declared
			tt.change(&p)
			require.Equal(t, tt.want, IdentityDiff(declared, p))
		})
	}

	t.Run("options after a trip through JSON", func(t *testing.T) {
		b, err := json.Marshal(declared)
		require.NoError(t, err)
		var back Platform
		require.NoError(t, json.Unmarshal(b, &back))
		require.IsType(t, float64(0), back.Options["page"], "numbers come back as float64")
		require.Empty(t, IdentityDiff(declared, back))
	})
	t.Run("empty and absent options agree", func(t *testing.T) {
		a, b := declared, declared
		a.Options, b.Options = nil, map[string]any{}
		require.Empty(t, IdentityDiff(a, b))
	})
}
