package config

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/internal/tuning"
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

// countedOptions counts how often options of kind "counted" are decoded.
type countedOptions struct {
	N int `yaml:"n"`
}

var countedDecodes int

func (o *countedOptions) Finish(Platform, ProblemFunc) { countedDecodes++ }

// TestKindOptionsAreDecodedOncePerUse: validating a platform decodes its
// options once and hands that value to the kind's tuning check (Shopify's
// check decoded them a second time); Settings and Warnings decode once
// each and hand the value on.
func TestKindOptionsAreDecodedOncePerUse(t *testing.T) {
	saved, savedOptions := kindSpecs, maps.Clone(anyKindOption)
	t.Cleanup(func() { kindSpecs, anyKindOption = saved, savedOptions })
	var got []int
	record := func(o OptionsSchema) { got = append(got, o.(*countedOptions).N) }
	RegisterKind(KindSpec{Name: "counted", NewOptions: func() OptionsSchema { return &countedOptions{} },
		CheckTuning: func(_ Platform, o OptionsSchema, _ ProblemFunc) { record(o) },
		Derive:      func(_ Platform, o OptionsSchema, _ *tuning.Settings) { record(o) },
		Warnings:    func(_ Platform, o OptionsSchema, _ time.Time, _ ProblemFunc) { record(o) }})

	countedDecodes = 0
	f, err := Parse([]byte("platforms:\n  x:\n    kind: counted\n    endpoint: https://x.example.com\n    credentials: {env: X}\n    options: {n: 3}\n"))
	require.NoError(t, err)
	require.Equal(t, 1, countedDecodes, "validation decodes the options once")
	p, _ := f.Get("x")
	p.Settings()
	require.Equal(t, 2, countedDecodes)
	require.Empty(t, p.WarningsAt(time.Now()))
	require.Equal(t, 3, countedDecodes)
	require.Equal(t, []int{3, 3, 3}, got, "each hook gets the decoded options")
}
