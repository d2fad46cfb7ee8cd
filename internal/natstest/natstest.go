// Package natstest starts a real nats-server with JetStream for tests: the
// Debian package's binary (apt-get install nats-server), on a free
// loopback port, with its store in the test's temporary directory.
package natstest

import (
	"encoding/json"
	"fmt"
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
	// nats-server picks its own port (-p -1) and says which in a ports
	// file: a port picked here and handed over could be taken by another
	// process before nats-server binds it, and the readiness check would
	// then find that process listening.
	portsDir := filepath.Join(dir, "ports")
	if err := os.MkdirAll(portsDir, 0o755); err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", "-1", "-sd", filepath.Join(dir, "js"), "--ports_file_dir", portsDir)
	logf, err := os.Create(filepath.Join(dir, "nats.log"))
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, fmt.Errorf("start nats-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
		logf.Close()
	}
	portsFile := filepath.Join(portsDir, fmt.Sprintf("%s_%d.ports", filepath.Base(bin), cmd.Process.Pid))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if url, ok := clientURL(portsFile); ok {
			return url, stop, nil
		}
		select {
		case <-exited:
			logf.Close()
			return "", nil, fmt.Errorf("nats-server exited before it listened (log: %s)", filepath.Join(dir, "nats.log"))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("nats-server wrote no ports file %s within 10s", portsFile)
		}
	}
}

// clientURL reads the client URL from nats-server's ports file, once
// the server has written it.
func clientURL(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	var ports struct {
		Nats []string `json:"nats"`
	}
	if json.Unmarshal(b, &ports) != nil || len(ports.Nats) == 0 {
		return "", false // written but not complete yet
	}
	return ports.Nats[0], true
}
