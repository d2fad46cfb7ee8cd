package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/ordersync/ordersync/connectors"
	"github.com/ordersync/ordersync/internal/receiver"
	"github.com/ordersync/ordersync/store"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var demoReceiverLine = regexp.MustCompile(`demo-receiver: ([\d,]+) changes received \((sim-[a-z]+ [\d,]+(, )?)+\), last seq (\d+)`)

// TestDevDemoReceiver runs `ordersync dev` on examples/demo-platforms.yaml
// (its addresses moved to free ports) as `make run` does: orders flow from
// the simulator through the store to the demo receiver, which checks each
// signature and prints its counts; `ordersync verify --destination
// demo-receiver` agrees with what it got; then every command of the
// README's walkthrough runs as written against it.
func TestDevDemoReceiver(t *testing.T) {
	parallel(t, light)
	if testing.Short() {
		t.Skip("end-to-end: runs ordersync dev")
	}
	demo, err := os.ReadFile("../examples/demo-platforms.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	// A change the demo receiver acknowledged before this start, past a
	// retention of 1s: dev compacts the feed at start, as a worker does.
	seeded := seedAckedChange(t, "sqlite://"+filepath.Join(dir, "orders.db"), "sim-acme", "demo-receiver")
	time.Sleep(1100 * time.Millisecond)

	// The ports are free when picked, but another process may take one
	// before dev listens on it: dev then stops at once, naming the port,
	// and starts again on others.
	var (
		simAddr, rcvAddr, file string
		env                    []string
		cmd                    *exec.Cmd
		out                    *lockedBuffer
		exited                 chan error
	)
	for attempt := 1; ; attempt++ {
		simAddr = fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
		rcvAddr = fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
		port := freeTCPPort(t)
		yaml := strings.NewReplacer("127.0.0.1:8780", simAddr, "127.0.0.1:8781", rcvAddr).Replace(string(demo))
		require.Contains(t, yaml, "http://"+rcvAddr+"/orders", "the demo file's destination points at the demo receiver")
		file = filepath.Join(dir, "demo-platforms.yaml")
		require.NoError(t, os.WriteFile(file, []byte(yaml), 0o644))
		env = []string{
			"ORDERSYNC_DATA_DIR=" + filepath.Join(dir, "data"),
			"ORDERSYNC_STORE_DSN=sqlite://" + filepath.Join(dir, "orders.db"),
			"ORDERSYNC_METRICS_ADDRESS=",
			"ORDERSYNC_TEMPORAL_ADDRESS=" + fmt.Sprintf("127.0.0.1:%d", port),
			"ORDERSYNC_LOG_LEVEL=warn",
			"ORDERSYNC_CHANGE_RETENTION=1s",
		}
		cmd = exec.Command(ordersyncBinary(t), "dev", "-f", file, "--port", strconv.Itoa(port), "--ui-port", "0",
			"--sim-listen", simAddr, "--receiver-listen", rcvAddr)
		// The demo secret comes from dev itself, not from this environment.
		cmd.Env = append(withoutEnv(environ(), "ORDERSYNC_DEMO_HOOK_SECRET"), env...)
		out = &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		exited = make(chan error, 1)
		go func(cmd *exec.Cmd, exited chan error) { exited <- cmd.Wait() }(cmd, exited)
		if devListening(t, cmd, out, exited, attempt) {
			break
		}
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("ordersync dev output:\n%s", out.String())
		}
	})

	// The receiver prints a line once changes arrived (every 10s while
	// they change), and verify finds them delivered.
	var delivered int64
	deadline := time.Now().Add(4 * time.Minute)
	for {
		if m := demoReceiverLine.FindStringSubmatch(out.String()); m != nil {
			code, vout, verr := runOrdersync(t, env, "verify", "-f", file, "--destination", "demo-receiver", "--settle", "0s", "-o", "json")
			require.Contains(t, []int{0, 1}, code, "%s %s", vout, verr)
			var v struct {
				Running bool `json:"running"`
				Total   struct {
					Accepted, Delivered int64
				} `json:"total"`
			}
			require.NoError(t, json.Unmarshal([]byte(vout), &v), vout)
			require.True(t, v.Running, "dev started delivery/demo-receiver")
			if delivered = v.Total.Delivered; delivered > 0 {
				break
			}
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("ordersync dev exited: %v", err)
		case <-time.After(time.Second):
		}
		require.False(t, time.Now().After(deadline), "no demo-receiver line with changes within 4 minutes")
	}
	// Compacted at start, so the receiver's count below leaves it out too.
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(dir, "orders.db"))
	require.NoError(t, err)
	first, err := st.Changes(context.Background(), store.ChangeQuery{After: 0, Limit: 1})
	st.Close()
	require.NoError(t, err)
	require.NotEmpty(t, first)
	require.Greater(t, first[0].Seq, seeded, "dev compacted the acknowledged change older than the retention")
	resp, err := http.Get("http://" + rcvAddr + "/stats")
	require.NoError(t, err)
	var stats receiver.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&stats))
	resp.Body.Close()
	require.GreaterOrEqual(t, stats.Changes, delivered, "every change acknowledged was received (and counted once)")
	require.Zero(t, stats.Rejected, "every delivery's signature checked out")
	require.NotEmpty(t, stats.Platforms)
	t.Logf("demo receiver: %+v; verify --destination: %d delivered", stats, delivered)

	// A newcomer's second terminal: the README's walkthrough, as written.
	runReadmeWalkthrough(t, env, file, rcvAddr)

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		stopped = true
		require.NoError(t, err, "ordersync dev stops cleanly on Ctrl-C")
	case <-time.After(time.Minute):
		t.Fatal("ordersync dev did not stop within a minute of SIGINT")
	}
	text := out.String()
	require.Contains(t, text, "Demo receiver:     http://"+rcvAddr+"/")
	require.Contains(t, text, "Delivery delivery/demo-receiver")
	lines := demoReceiverLine.FindAllString(text, -1)
	require.NotEmpty(t, lines)
	t.Logf("last line: %s", lines[len(lines)-1])
}

// devListening waits until `ordersync dev` listens on all its ports (it
// names the demo receiver's after the simulator's and the server's). False
// if it stopped because another process had taken one of them, which an
// early attempt may retry on others; any other end fails the test.
func devListening(t *testing.T, cmd *exec.Cmd, out *lockedBuffer, exited chan error, attempt int) bool {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	for !strings.Contains(out.String(), "Demo receiver:") {
		select {
		case err := <-exited:
			if attempt < 5 && strings.Contains(out.String(), "cannot listen on ") {
				t.Logf("attempt %d: a port was taken, trying others:\n%s", attempt, out.String())
				return false
			}
			t.Fatalf("ordersync dev exited before it listened: %v\n%s", err, out.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("ordersync dev did not listen within 3 minutes:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return true
}

// seedAckedChange stores one order of platform in the store at dsn and
// acknowledges its change for destination; it returns the change's seq.
func seedAckedChange(t *testing.T, dsn, platform, destination string) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	require.NoError(t, err)
	defer st.Close()
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	_, err = st.UpsertOrders(ctx, []connectors.Order{{Platform: platform, ID: "seeded-before-dev", Status: "paid", Currency: "EUR",
		Total: "1.00", CreatedAt: at, UpdatedAt: at}})
	require.NoError(t, err)
	changes, err := st.Changes(ctx, store.ChangeQuery{After: 0, Limit: 10})
	require.NoError(t, err)
	require.Len(t, changes, 1)
	require.NoError(t, st.AckChanges(ctx, destination, changes[0].Seq))
	return changes[0].Seq
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
