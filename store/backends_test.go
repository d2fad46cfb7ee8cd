package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresDSNEnv names the PostgreSQL server the conformance suite runs
// against; .ci/postgres.sh prints a value for it.
const postgresDSNEnv = "ORDERSYNC_TEST_POSTGRES_DSN"

// postgresRequiredEnv, when set to anything, turns the PostgreSQL skip into a
// failure: `go test` without -v hides a skip, so CI should set it.
const postgresRequiredEnv = "ORDERSYNC_TEST_POSTGRES_REQUIRED"

// skipUnavailable skips (or, when required, fails) a backend that cannot be
// tested.
func skipUnavailable(t *testing.T, b backend) {
	t.Helper()
	reason := b.unavailable()
	if reason == "" {
		return
	}
	if b.name == "postgres" && os.Getenv(postgresRequiredEnv) != "" {
		t.Fatalf("%s (and %s is set, so this is a failure)", reason, postgresRequiredEnv)
	}
	t.Skip(reason)
}

// backend hands each test a DSN naming a fresh, empty store.
type backend struct {
	name string
	// unavailable says why the backend cannot be tested; empty when it can.
	unavailable func() string
	// fresh returns the DSN of a new empty store.
	fresh func(t testing.TB) string
}

var backends = []backend{
	{name: "sqlite", unavailable: func() string { return "" }, fresh: freshSQLite},
	{name: "postgres", unavailable: postgresUnavailable, fresh: freshPostgres},
}

func freshSQLite(t testing.TB) string {
	// A directory that does not exist yet, to prove Open creates it.
	return "sqlite://" + filepath.Join(t.TempDir(), "state", "orders.db")
}

var (
	pgOnce   sync.Once
	pgReason string // why PostgreSQL is unusable; empty when it works
)

// postgresUnavailable checks the server once per test binary and shouts
// when it cannot be used, so a skipped PostgreSQL half is never silent.
func postgresUnavailable() string {
	pgOnce.Do(func() {
		dsn := os.Getenv(postgresDSNEnv)
		if dsn == "" {
			pgReason = postgresDSNEnv + " is not set"
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				pgReason = fmt.Sprintf("cannot connect using %s: %v", postgresDSNEnv, err)
			} else {
				conn.Close(ctx)
			}
		}
		if pgReason != "" {
			pgReason = "POSTGRESQL NOT AVAILABLE: " + pgReason +
				"; the PostgreSQL store is NOT tested (run `eval \"$(bash .ci/postgres.sh | tail -n1)\"` first)"
			fmt.Fprintln(os.Stderr, "!!!!!! "+pgReason+" !!!!!!")
		}
	})
	return pgReason
}

// freshPostgres creates a uniquely named schema and returns the test DSN
// with search_path pointing at it, so runs never see each other's rows.
func freshPostgres(t testing.TB) string {
	t.Helper()
	base := os.Getenv(postgresDSNEnv)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "ordersync_test_" + hex.EncodeToString(b[:])

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", postgresDSNEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", postgresDSNEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
