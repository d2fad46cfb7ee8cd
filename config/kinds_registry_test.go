package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestUnregisteredKindsAreAnError: a binary that does not link package
// connectors has no kind specs; its platforms are refused with a message
// that says so, never accepted without their kind's defaults and checks.
func TestUnregisteredKindsAreAnError(t *testing.T) {
	require.NotEmpty(t, Kinds(), "kinds_link_test.go links connectors")
	saved, savedOptions := kindSpecs, anyKindOption
	kindSpecs, anyKindOption = nil, map[string]bool{}
	t.Cleanup(func() { kindSpecs, anyKindOption = saved, savedOptions })

	_, err := Parse([]byte("platforms:\n  x:\n    kind: shopify\n    endpoint: https://a.myshopify.com\n    credentials: {env: X}\n"))
	require.EqualError(t, err, `platform "x": field "kind": kind "shopify" has no registered spec: is package connectors linked?`)
	err = ValidateSettings(Platform{Name: "x", Kind: "sim"}.Settings())
	require.Error(t, err)
	require.Equal(t, `platform "x": field "kind": kind "sim" has no registered spec: is package connectors linked?`,
		strings.Split(err.Error(), "\n")[0], "a config message's settings are refused alike")
}

// TestRegisterKindRefusesDuplicates: two specs of one kind are a
// programming error, found at start.
func TestRegisterKindRefusesDuplicates(t *testing.T) {
	require.Panics(t, func() { RegisterKind(KindSpec{Name: "sim"}) })
	require.Panics(t, func() { RegisterKind(KindSpec{}) })
}
