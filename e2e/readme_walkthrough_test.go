package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// walkthroughLine is one command of the README's walkthrough: the shell
// text as written and what its comment promises.
type walkthroughLine struct {
	shell   string
	comment string
}

// readmeWalkthrough returns the commands of the README's "A ten-minute
// walkthrough" section: every line of its ```sh blocks, in order.
func readmeWalkthrough(t *testing.T) []walkthroughLine {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := string(b)
	start := strings.Index(text, "## A ten-minute walkthrough")
	require.GreaterOrEqual(t, start, 0, "README has its walkthrough section")
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var lines []walkthroughLine
	inSh := false
	for _, l := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(l, "```sh"):
			inSh = true
		case strings.HasPrefix(l, "```"):
			inSh = false
		case inSh && strings.TrimSpace(l) != "":
			shell, comment, _ := strings.Cut(l, " # ")
			lines = append(lines, walkthroughLine{shell: strings.TrimSpace(shell), comment: comment})
		}
	}
	require.GreaterOrEqual(t, len(lines), 10, "the walkthrough's commands were found")
	return lines
}

var exportPlatformsFile = regexp.MustCompile(`^export ORDERSYNC_PLATFORMS_FILE=(\S+)$`)

// runReadmeWalkthrough runs every command of the README's walkthrough, as
// written, against a running `ordersync dev` (TestDevDemoReceiver's): a
// newcomer pastes them into a second terminal, so each must work. The
// only rewrites are the ones the test's set-up forces: the demo's ports
// moved to free ones (rcvAddr), ./bin/ordersync is the binary under test,
// and the platforms file is the test's copy of the demo's. A command
// exits 0 unless its comment says it may exit 1; `--watch` runs until it
// has drawn its table, then is stopped as a reader would with Ctrl-C.
func runReadmeWalkthrough(t *testing.T, env []string, platformsFile, rcvAddr string) {
	t.Helper()
	bin := ordersyncBinary(t)
	rewrite := strings.NewReplacer("./bin/ordersync", bin, "127.0.0.1:8781", rcvAddr)
	env = append(env, "ORDERSYNC_PLATFORMS_FILE="+platformsFile)
	for _, l := range readmeWalkthrough(t) {
		if m := exportPlatformsFile.FindStringSubmatch(l.shell); m != nil {
			require.Equal(t, "examples/demo-platforms.yaml", m[1], "the walkthrough uses the demo's platforms file")
			continue
		}
		if strings.HasPrefix(l.shell, "curl ") {
			if _, err := exec.LookPath("curl"); err != nil && os.Getenv("CI") == "" {
				t.Logf("skipped (no curl here): %s", l.shell)
				continue
			}
		}
		shell := rewrite.Replace(l.shell)
		watch := strings.Contains(l.shell, "--watch")
		timeout := 2 * time.Minute
		if watch {
			timeout = 8 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		cmd := exec.CommandContext(ctx, "bash", "-c", shell)
		cmd.Env = append(environ(), env...)
		cmd.Dir = ".." // the README's commands run from the repository's root
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		began := time.Now()
		err := cmd.Run()
		cancel()
		code := 0
		var exit *exec.ExitError
		switch {
		case err == nil:
		case watch && errors.Is(err, context.DeadlineExceeded):
			code = -1 // stopped by the Ctrl-C above, as intended
		case errors.As(err, &exit):
			code = exit.ExitCode()
		default:
			require.NoError(t, err, "run %s", l.shell)
		}
		t.Logf("README walkthrough: %s -> exit %d in %s", l.shell, code, time.Since(began).Round(time.Millisecond))
		what := l.shell + "\nstdout:\n" + clipForLog(out.String()) + "\nstderr:\n" + clipForLog(errOut.String())
		switch {
		case watch:
			require.NotEqual(t, 2, code, "%s: a usage error", what)
			require.Contains(t, out.String(), "sim-acme", "%s: the watch drew the demo platforms", what)
		case strings.Contains(l.comment, "exit 1"):
			require.Contains(t, []int{0, 1}, code, what)
		default:
			require.Zero(t, code, what)
			require.NotEmpty(t, strings.TrimSpace(out.String()), "%s: printed nothing", what)
		}
	}
}

// clipForLog keeps a failure's output readable.
func clipForLog(s string) string {
	const max = 4000
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
