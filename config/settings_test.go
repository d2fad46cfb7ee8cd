package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/tuning"
)

func settingsTestPlatform() Platform {
	p := BuiltinDefaults()
	p.Name, p.Kind, p.TaskQueue, p.Start = "shop", "shopify", "orders-shopify", "-24h"
	p.Endpoint, p.Credentials = "https://shop.example", CredentialRef{Env: "SHOP_TOKEN"}
	p.Options = map[string]any{"api": "rest"}
	p.Windows = []string{"MON-FRI 00:00-06:00"}
	return p
}

// TestSettingsAreTheTuning: Settings holds every tuning field of Platform
// and nothing of its identity, and WithTuning puts them back: a field
// added to Platform must be placed on one side or the other.
func TestSettingsAreTheTuning(t *testing.T) {
	identity := map[string]bool{"endpoint": true, "credentials": true, "options": true, "allow_plaintext": true}
	settingsFields := map[string]bool{}
	st := reflect.TypeOf(tuning.Settings{})
	for i := 0; i < st.NumField(); i++ {
		settingsFields[jsonName(st.Field(i))] = true
	}
	pt := reflect.TypeOf(Platform{})
	for i := 0; i < pt.NumField(); i++ {
		name := jsonName(pt.Field(i))
		if identity[name] {
			continue
		}
		require.True(t, settingsFields[name], "Platform field %q is neither identity nor in tuning.Settings", name)
	}

	p := settingsTestPlatform()
	s := p.Settings()
	require.NotNil(t, s.Bulk, "shopify: bulk said explicitly")
	require.False(t, s.Bulk.Enabled, "shopify on REST: bulk off")
	raw, err := json.Marshal(s)
	require.NoError(t, err)
	for k := range identity {
		require.NotContains(t, string(raw), `"`+k+`"`)
	}
	other := Platform{Name: "shop", Kind: "shopify", Endpoint: "https://registered.example", Credentials: CredentialRef{Env: "REG"}}
	back := other.WithTuning(s)
	require.Equal(t, other.Endpoint, back.Endpoint)
	require.Equal(t, other.Credentials, back.Credentials)
	p.Endpoint, p.Credentials, p.Options = other.Endpoint, other.Credentials, nil
	require.Equal(t, p, back, "the tuning comes back whole")
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// TestDecodeSettingsJSON: a `config` payload may still carry the whole
// platform entry; its identity is dropped unread, every other unknown
// field is refused by name, at any depth.
func TestDecodeSettingsJSON(t *testing.T) {
	p := settingsTestPlatform()
	full, err := json.Marshal(p)
	require.NoError(t, err)
	s, err := DecodeSettingsJSON(full)
	require.NoError(t, err)
	require.Equal(t, p.Name, s.Name)
	require.Equal(t, p.PageSize, s.PageSize)
	require.Nil(t, s.LegacyOptions, "options in a message are the registry's, never read")

	for payload, field := range map[string]string{
		`{"name":"shop","endpont":"https://x"}`:              "endpont",
		`{"name":"shop","rate_limit":{"rps":1,"burts":2}}`:   "rate_limit.burts",
		`{"name":"shop","bulk":{"enabled":true,"min":"1h"}}`: "bulk.min",
		`{"name":"shop","Kind":"shopify"}`:                   "Kind",
	} {
		_, err := DecodeSettingsJSON([]byte(payload))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, payload)
		require.Equal(t, field, ve.Problems[0].Field, payload)
	}
}

// TestValidateSettingsUsesTheFileRules: a message's settings are held to
// the ranges and kind limits the platforms file is.
func TestValidateSettingsUsesTheFileRules(t *testing.T) {
	s := settingsTestPlatform().Settings()
	require.NoError(t, ValidateSettings(s))
	for field, mutate := range map[string]func(*tuning.Settings){
		"interval":                   func(s *tuning.Settings) { s.Interval = Duration(time.Millisecond) },
		"page_size":                  func(s *tuning.Settings) { s.PageSize = 251 },
		"concurrency":                func(s *tuning.Settings) { s.Concurrency = 65 },
		"dead_letter_retry.schedule": func(s *tuning.Settings) { s.DeadLetterRetry.Schedule = []Duration{Duration(time.Second)} },
		"windows":                    func(s *tuning.Settings) { s.Windows = []string{"NOPE"} },
		"task_queue":                 func(s *tuning.Settings) { s.TaskQueue = string(make([]byte, 201)) },
		"kind":                       func(s *tuning.Settings) { s.Kind = "magento" },
	} {
		bad := s
		mutate(&bad)
		err := ValidateSettings(bad)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, field)
		fields := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			fields[i] = p.Field
		}
		require.Contains(t, fields, field, "%v", err)
	}
}
