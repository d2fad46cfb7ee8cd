// Package natstest starts a real nats-server with JetStream for tests: the
// Debian package's binary (apt-get install nats-server), on a free
// loopback port, with its store in the test's temporary directory.
package natstest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// RequiredEnv, when set, turns a missing nats-server into a failure (CI
// sets it; a skip is easy to overlook).
const RequiredEnv = "ORDERSYNC_TEST_NATS_REQUIRED"

// Start runs nats-server -js until the test ends and returns its URL. The
// test is skipped (or fails, with RequiredEnv set) without the binary.
func Start(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("nats-server"); err != nil {
		msg := "nats-server not installed (apt-get install nats-server); the JetStream destination is NOT tested"
		if os.Getenv(RequiredEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	url, stop, err := Run(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return url
}

// Run starts nats-server -js on a free loopback port with its store and
// log in dir, waits until it listens, and returns its URL and a function
// that stops it. The benchmark uses it outside tests.
func Run(dir string) (string, func(), error) {
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		return "", nil, fmt.Errorf("nats-server not installed (apt-get install nats-server): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", filepath.Join(dir, "js"))
	logf, err := os.Create(filepath.Join(dir, "nats.log"))
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start nats-server: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return "nats://" + addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("nats-server did not listen on %s: %w", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
