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
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		msg := "nats-server not installed (apt-get install nats-server); the JetStream destination is NOT tested"
		if os.Getenv(RequiredEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", filepath.Join(dir, "js"))
	logf, err := os.Create(filepath.Join(dir, "nats.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return "nats://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server did not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
