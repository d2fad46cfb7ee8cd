package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/ordersync/ordersync/api"
)

// The ordersync binary is built once per test run, or taken from
// ORDERSYNC_BIN (e.g. bin/ordersync after `make build`).
var (
	binOnce sync.Once
	binPath string
	binErr  error
)

func ordersyncBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ORDERSYNC_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ordersync-e2e-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "ordersync")
		// .ci/run and the Makefile put go on PATH; /usr/local/go is this
		// machine kind's install when a shell did not.
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = "/usr/local/go/bin/go"
		}
		cmd := exec.Command(gobin, "build", "-o", binPath, "./cmd/ordersync")
		cmd.Dir = ".." // the module root; tests run in e2e/
		cmd.Env = append(environ(), "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	require.NoError(t, binErr, "go build ./cmd/ordersync: %s", binPath)
	return binPath
}

// workerProc is an `ordersync worker` OS process.
type workerProc struct {
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
}

// startWorkerProc runs `ordersync worker` with env (KEY=VALUE) added to the
// test's environment; its output goes to a log file in the test's temp dir.
// The process is drained with SIGTERM at cleanup.
func startWorkerProc(t *testing.T, name string, env []string, args ...string) *workerProc {
	t.Helper()
	return startProc(t, name, env, append([]string{"worker"}, args...)...)
}

// startProc runs `ordersync args...` as startWorkerProc runs a worker.
func startProc(t *testing.T, name string, env []string, args ...string) *workerProc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(ordersyncBinary(t), args...)
	cmd.Env = append(environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	w := &workerProc{cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, w.tail(4000))
		}
	})
	return w
}

// stop drains the worker (SIGTERM) and kills it if it does not exit.
func (w *workerProc) stop() {
	select {
	case <-w.done:
		return
	default:
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(15 * time.Second):
		_ = w.cmd.Process.Kill()
		<-w.done
	}
}

func (w *workerProc) tail(n int) string {
	b, _ := os.ReadFile(w.logPath)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

var metricsURLRE = regexp.MustCompile(`url=(http://\S+/metrics)`)

// metricsURL waits for the worker to log where it serves /metrics.
func (w *workerProc) metricsURL(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := metricsURLRE.FindStringSubmatch(w.tail(1 << 20)); m != nil {
			return m[1]
		}
		select {
		case <-w.done:
			t.Fatalf("worker exited before serving metrics:\n%s", w.tail(4000))
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("worker logged no metrics URL:\n%s", w.tail(4000))
	return ""
}

// scrapeMetrics fetches a /metrics page.
func scrapeMetrics(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// metricValue returns the value of the sample whose name and labels start
// with series (e.g. `ordersync_pages_total{platform="x"}`), or -1.
func metricValue(body, series string) float64 {
	sc := bufio.NewScanner(bytes.NewReader([]byte(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.Fields(rest)[0], 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// statusOf queries a cursor's status.
func statusOf(t *testing.T, c client.Client, platform string) api.CursorStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.QueryWorkflow(ctx, api.CursorWorkflowID(platform), "", api.QueryStatus)
	require.NoError(t, err)
	var st api.CursorStatus
	require.NoError(t, v.Get(&st))
	return st
}
