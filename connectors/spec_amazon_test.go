package connectors_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/config"
	"github.com/ordersync/ordersync/connectors"
)

func TestAmazonAPIVersions(t *testing.T) {
	const amz = "platforms:\n  amz:\n    kind: amazon\n    endpoint: https://sellingpartnerapi-eu.amazon.com\n    credentials: {env: AMZ}\n"
	tests := []struct {
		name     string
		yaml     string
		version  string
		rate     config.RateLimit
		included []string
		warning  string // "" for none
	}{
		{"no api_version is 2026-01-01 (existing files move to searchOrders)", amz + "    options: {marketplace_ids: [A1PA6795UKMFR9]}\n",
			connectors.AmazonAPI20260101, config.RateLimit{RPS: 0.0056, Burst: 20}, nil, ""},
		{"explicit 2026-01-01 with buyer and recipient", amz + "    options: {api_version: 2026-01-01, marketplace_ids: [A1PA6795UKMFR9], included_data: [BUYER, RECIPIENT]}\n",
			connectors.AmazonAPI20260101, config.RateLimit{RPS: 0.0056, Burst: 20}, []string{"BUYER", "RECIPIENT"}, ""},
		{"legacy v0 keeps getOrders' rate and warns", amz + "    options: {api_version: v0, marketplace_ids: [A1PA6795UKMFR9]}\n",
			connectors.AmazonAPIV0, config.RateLimit{RPS: 0.0167, Burst: 20}, nil,
			`platform "amz": field "options.api_version": Amazon removes Orders API v0 (getOrders) on 2027-03-27; set api_version 2026-01-01`},
		{"v0 from the default block", "default:\n  options: {api_version: v0}\n" + amz + "    options: {marketplace_ids: [A1PA6795UKMFR9]}\n",
			connectors.AmazonAPIV0, config.RateLimit{RPS: 0.0167, Burst: 20}, nil, `Amazon removes Orders API v0`},
		{"a rate written in the file wins over either version's", amz + "    rate_limit: {rps: 0.5}\n    options: {api_version: v0, marketplace_ids: [A1PA6795UKMFR9]}\n",
			connectors.AmazonAPIV0, config.RateLimit{RPS: 0.5, Burst: 20}, nil, `Amazon removes Orders API v0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse([]byte(tt.yaml))
			require.NoError(t, err)
			p, _ := f.Get("amz")
			o, err := config.KindOptions[connectors.AmazonOptions](p)
			require.NoError(t, err)
			require.Equal(t, tt.version, o.APIVersion)
			require.Equal(t, tt.included, o.IncludedData)
			require.Equal(t, tt.rate, p.RateLimit)
			if v, ok := p.Options["api_version"]; ok {
				require.Equal(t, tt.version, v, "an unquoted 2026-01-01 is the version as written, not a YAML timestamp")
			}
			ws := f.Warnings()
			if tt.warning == "" {
				require.Empty(t, ws)
				return
			}
			require.Len(t, ws, 1)
			require.Contains(t, ws[0].String(), tt.warning)
		})
	}

	bad := []struct{ name, options, want string }{
		{"unknown version", "{api_version: v1, marketplace_ids: [A1PA6795UKMFR9]}", `field "options.api_version": "v1" is not an Amazon Orders API version`},
		{"included data with v0", "{api_version: v0, marketplace_ids: [A1PA6795UKMFR9], included_data: [BUYER]}", `field "options.included_data": needs api_version 2026-01-01`},
		{"unknown dataset", "{marketplace_ids: [A1PA6795UKMFR9], included_data: [buyer]}", `field "options.included_data": "buyer" is not a searchOrders dataset (one of BUYER, RECIPIENT,`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(amz + "    options: " + tt.options + "\n"))
			require.ErrorContains(t, err, tt.want)
		})
	}
}
