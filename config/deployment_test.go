package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateDeployment(t *testing.T) {
	flags := [2]string{"--deployment-name", "--build-id"}
	for _, tc := range []struct {
		name, deployment, build string
		wantErr                 []string
	}{
		{name: "neither: unversioned", deployment: "", build: ""},
		{name: "both", deployment: "ordersync", build: "v1.4.0"},
		{name: "build ID may hold dots", deployment: "orders-eu", build: "2026.11.22-abc123"},
		{name: "name only", deployment: "ordersync", wantErr: []string{"--deployment-name is set but --build-id is not"}},
		{name: "build only", build: "v2", wantErr: []string{"--build-id is set but --deployment-name is not"}},
		{name: "dot in name", deployment: "orders.eu", build: "v2", wantErr: []string{`--deployment-name "orders.eu": must not contain '.' or ':'`}},
		{name: "colon in name", deployment: "orders:eu", build: "v2", wantErr: []string{"must not contain '.' or ':'"}},
		{name: "reserved prefix", deployment: "__x", build: "__y", wantErr: []string{`--deployment-name "__x": must not start with "__"`, `--build-id "__y"`}},
		{name: "too long", deployment: "d", build: strings.Repeat("b", 256), wantErr: []string{"--build-id: 256 characters, at most 255"}},
		{name: "spaces", deployment: " d", build: "v\n1", wantErr: []string{`--deployment-name " d": no surrounding spaces`, `--build-id "v\n1"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateDeployment(tc.deployment, tc.build, flags)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.wantErr {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadProcessDeploymentFromEnvironment(t *testing.T) {
	p, err := LoadProcess()
	require.NoError(t, err)
	require.False(t, p.Versioned(), "unversioned unless both are set")

	t.Setenv("ORDERSYNC_DEPLOYMENT_NAME", "ordersync")
	t.Setenv("ORDERSYNC_BUILD_ID", "v7")
	p, err = LoadProcess()
	require.NoError(t, err)
	require.True(t, p.Versioned())
	require.Equal(t, "ordersync", p.DeploymentName)
	require.Equal(t, "v7", p.BuildID)

	// One of the two loads (a flag may give the other); the worker checks
	// the pair once its flags are applied.
	t.Setenv("ORDERSYNC_BUILD_ID", "")
	p, err = LoadProcess()
	require.NoError(t, err)
	require.False(t, p.Versioned())
	require.ErrorContains(t, ValidateDeployment(p.DeploymentName, p.BuildID, DeploymentSettings),
		"--deployment-name (ORDERSYNC_DEPLOYMENT_NAME) is set but --build-id (ORDERSYNC_BUILD_ID) is not")
}
