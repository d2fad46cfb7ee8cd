package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMistypedCommandIsOneLineWithASuggestion: `ordersync platfrom` printed
// cobra's message over several lines (blank "ordersync:" lines), and
// `ordersync platform paus` printed the help and exited 0.
func TestMistypedCommandIsOneLineWithASuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"platfrom"}, `unknown command "platfrom" for "ordersync"; did you mean "platform"?`},
		{[]string{"platform", "paus", "x"}, `unknown command "paus" for "ordersync platform"; did you mean "pause"?`},
		{[]string{"dlq", "lsit"}, `unknown command "lsit" for "ordersync dlq"; did you mean "list"?`},
	} {
		code, _, stderr := runCommand(t, nil, tc.args...)
		require.Equal(t, ExitUsage, code, stderr)
		require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		require.Contains(t, stderr, tc.want)
		require.NotContains(t, stderr, "ordersync: \n")
	}
}

// TestUnknownFlagSuggestsTheNearest: `platform status --wach` said only
// "unknown flag: --wach".
func TestUnknownFlagSuggestsTheNearest(t *testing.T) {
	code, _, stderr := runCommand(t, nil, "platform", "status", "--wach")
	require.Equal(t, ExitUsage, code, stderr)
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.Contains(t, stderr, `unknown flag --wach for "ordersync platform status"; did you mean --watch?`)

	// Inherited flags count; a prefix is enough.
	code, _, stderr = runCommand(t, nil, "dlq", "list", "--outpt", "json")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, stderr, "did you mean --output?")
	code, _, stderr = runCommand(t, nil, "changes", "--foll")
	require.Equal(t, ExitUsage, code)
	require.Contains(t, stderr, "did you mean --follow")
	// Nothing near: no guess.
	code, _, stderr = runCommand(t, nil, "changes", "--zzzzzz")
	require.Equal(t, ExitUsage, code)
	require.NotContains(t, stderr, "did you mean")
}

// TestEveryHelpStatesTheExitCodes: each command's help ends with the exit
// statuses Execute returns.
func TestEveryHelpStatesTheExitCodes(t *testing.T) {
	app := &App{}
	root := NewRootCommand(app)
	Finish(root)
	var walk func(args []string)
	seen := 0
	walk = func(path []string) {
		cmd, _, err := root.Find(path)
		require.NoError(t, err)
		var out, stderr bytes.Buffer
		r := NewRootCommand(&App{Out: &out, Err: &stderr})
		r.SetOut(&out)
		code := Execute(r, append(path, "--help"), &stderr)
		require.Equal(t, 0, code, stderr.String())
		require.Contains(t, out.String(), "Exit status:\n  0  done\n  1  the operation failed", strings.Join(path, " "))
		seen++
		for _, sub := range cmd.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(append(append([]string{}, path...), sub.Name()))
		}
	}
	walk(nil)
	require.Greater(t, seen, 40)
}
