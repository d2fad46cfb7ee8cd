package devcmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestClusterEnvFileIsPasteable: the cluster's hint was a DSN with the
// password masked, which cannot be pasted; the env file it now writes,
// sourced by a shell, sets the exact values (quotes, $ and spaces intact)
// and only its owner can read it.
func TestClusterEnvFileIsPasteable(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	path := filepath.Join(t.TempDir(), "env")
	dsn := "postgres://ordersync:p'a$s w`d@127.0.0.1:5432/ordersync_cluster?sslmode=disable"
	if err := writeEnvFile(path, [][2]string{{"ORDERSYNC_STORE_DSN", dsn}, {"ORDERSYNC_TEMPORAL_NAMESPACE", "default"}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	out, err := exec.Command(sh, "-c", `. "$1" && printf '%s|%s' "$ORDERSYNC_STORE_DSN" "$ORDERSYNC_TEMPORAL_NAMESPACE"`, "sh", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), dsn+"|default"; got != want {
		t.Errorf("sourced %q, want %q", got, want)
	}
}
