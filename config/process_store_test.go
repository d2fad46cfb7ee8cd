package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStoreLocation: the store a log line names, never with a password;
// the default DSN is the one LoadProcess uses without ORDERSYNC_STORE_DSN.
func TestStoreLocation(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dsn, want := range map[string]string{
		"sqlite://.ordersync/orders.db": "sqlite://" + filepath.Join(wd, ".ordersync/orders.db"),
		"sqlite:///var/lib/o.db":        "sqlite:///var/lib/o.db",
		"orders.db":                     "sqlite://" + filepath.Join(wd, "orders.db"),
		"postgres://u:s3cret@db.internal:5432/orders?sslmode=require&password=x": "postgres://db.internal:5432/orders",
		"postgresql://db/orders": "postgresql://db/orders",
		"mysql://u:s3cret@db/x":  `(unsupported scheme "mysql")`,
	} {
		if got := StoreLocation(dsn); got != want {
			t.Errorf("StoreLocation(%q) = %q, want %q", dsn, got, want)
		}
	}
	t.Setenv(EnvPrefix+"_STORE_DSN", "")
	os.Unsetenv(EnvPrefix + "_STORE_DSN")
	p, err := LoadProcess()
	if err != nil {
		t.Fatal(err)
	}
	if !p.DefaultStore() || p.StoreDSN != DefaultStoreDSN {
		t.Errorf("without ORDERSYNC_STORE_DSN: StoreDSN %q, DefaultStore %v", p.StoreDSN, p.DefaultStore())
	}
}
