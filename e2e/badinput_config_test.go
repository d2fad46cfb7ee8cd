package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ordersync/ordersync/cli"
)

// Malformed configuration, the first row of the bad-input matrix: every
// command that reads the platforms file refuses a broken one with exit 2 and
// one line per mistake naming platform and field, before it touches
// Temporal, so nothing changes.
var brokenConfigs = []struct {
	name, yaml string
	want       []string
}{
	{"many mistakes in one platform", `
default:
  interval: 15m
  overlap: 20m
platforms:
  acme:
    kind: sim
    endpoint: "ftp://x"
    credentials: {env: ORDERSYNC_E2E_A_TOKEN}
    colour: blue
    retries: -1
    start: yesterday
    rate_limit: {rps: 0}
`, []string{
		`platform "acme": field "colour": unknown field (line 10)`,
		`platform "acme": field "endpoint": "ftp://x" is not an http(s) URL`,
		`platform "acme": field "start": "yesterday" is neither RFC3339`,
		`platform "acme": field "overlap": must be shorter than interval (15m0s), got 20m0s`,
		`platform "acme": field "retries": must not be negative, got -1`,
		`platform "acme": field "rate_limit.rps": must be positive, got 0`,
	}},
	{"not YAML", "platforms:\n  a:\n    kind: sim\n  endpoint: [\n", []string{"not valid YAML: yaml: line 4"}},
	{"empty file", "", []string{"the file is empty; it needs a platforms mapping"}},
	{"duration in words", "platforms:\n  a:\n    kind: sim\n    endpoint: http://127.0.0.1/x\n    credentials: {env: X}\n    interval: 10 minutes\n",
		[]string{`platform "a": field "interval": "10 minutes" is not a duration like 90s or 15m (line 6)`}},
	{"a secret instead of a reference", "platforms:\n  a:\n    kind: sim\n    endpoint: http://127.0.0.1/x\n    credentials: shpat_0123456789\n",
		[]string{`platform "a": field "credentials": must be a mapping (line 5)`,
			`platform "a": field "credentials": is required: {env: VAR_NAME}, {file: /path/to/secret} or {stored: credential-name}; secrets never go in this file`}},
	{"a secret in the env reference", "platforms:\n  a:\n    kind: sim\n    endpoint: http://127.0.0.1/x\n    credentials: {env: \"sk-live-0123\"}\n",
		[]string{`platform "a": field "credentials.env": "sk-live-0123" is not an environment variable name (put the secret in the environment, not here)`}},
	{"platform twice", "platforms:\n  a:\n    kind: sim\n    endpoint: http://127.0.0.1/x\n    credentials: {env: X}\n  a:\n    kind: sim\n",
		[]string{`platform "a": defined twice (line 6)`}},
	{"bad name and kind", "platforms:\n  Acme Shop:\n    kind: magento\n    endpoint: http://127.0.0.1/x\n    credentials: {env: X}\n",
		[]string{`platform "Acme Shop": name must be`, `platform "Acme Shop": field "kind": unknown kind "magento"`}},
	{"bad work window", "platforms:\n  a:\n    kind: sim\n    endpoint: http://127.0.0.1/x\n    credentials: {env: X}\n    windows: [\"MON-FRX 00:00-06:00\"]\n",
		[]string{`platform "a": field "windows": "MON-FRX 00:00-06:00": unknown day "FRX"`}},
}

// TestBadInputMalformedConfig checks `config validate`, `worker` and
// `platform apply` on each broken file, and that apply, given a file with a
// valid change next to a mistake, pushes nothing to the running cursors.
func TestBadInputMalformedConfig(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end")
	}
	s := startSystem(t, cliSim(), cliPlatforms)
	s.startCursors()
	before := s.status("cli-a").Settings

	good := s.platformsPath
	for _, tc := range brokenConfigs {
		t.Run(tc.name, func(t *testing.T) {
			s.platformsPath = writeTemp(t, tc.yaml)
			for _, args := range [][]string{{"config", "validate"}, {"worker"}, {"platform", "apply"}} {
				code, _, errOut := s.runCLI(args...)
				require.Equal(t, cli.ExitUsage, code, "%v: %s", args, errOut)
				lines := strings.Split(strings.TrimSpace(errOut), "\n")
				require.Len(t, lines, len(tc.want), "%v: one line per mistake: %s", args, errOut)
				for i, w := range tc.want {
					require.Contains(t, lines[i], w, "%v", args)
					require.True(t, strings.HasPrefix(lines[i], "ordersync: "+s.platformsPath+": "), "names the file: %s", lines[i])
				}
			}
		})
	}

	// A valid change (cli-a's page size) next to a mistake in cli-b: the
	// whole file is refused and cli-a keeps its settings.
	mixed := strings.Replace(cliPlatforms, "page_size: 50", "page_size: 40", 1)
	mixed = strings.Replace(mixed, "credentials: {env: ORDERSYNC_E2E_B_TOKEN}", "credentials: {env: ORDERSYNC_E2E_B_TOKEN}\n    overlap: 1h", 1)
	s.platformsPath = writeTemp(t, strings.ReplaceAll(mixed, "{{SIM}}", s.simSrv.URL))
	code, out, errOut := s.runCLI("platform", "apply")
	require.Equal(t, cli.ExitUsage, code, out+errOut)
	require.Contains(t, errOut, `platform "cli-b": field "overlap": must be shorter than interval (10s), got 1h0m0s`)
	require.Equal(t, before, s.status("cli-a").Settings, "nothing was applied")

	s.platformsPath = good
	code, _, errOut = s.runCLI("config", "validate")
	require.Zero(t, code, errOut)
}
