package cluster

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql"
)

// Postgres says where Temporal keeps its data: two databases on one
// PostgreSQL server, one for the history, task and namespace tables, one for
// visibility (the workflow list and search attributes).
type Postgres struct {
	// Addr is host:port.
	Addr           string
	User, Password string
	// Database holds Temporal's main tables (default "temporal").
	Database string
	// VisibilityDatabase holds the visibility tables (default Database
	// + "_visibility").
	VisibilityDatabase string
	// AdminDatabase is connected to when creating the two (default "postgres").
	AdminDatabase string
	// Attributes are connection parameters such as sslmode.
	Attributes map[string]string
	// MaxConns bounds each service's pool on the main database (default
	// 10); visibility pools get a quarter of it (at least 2). The four
	// services each have both pools, so the server opens at most
	// 4 × (MaxConns + MaxConns/4) connections: 48 by default (the e2e
	// stack, three workers included, was seen at 34). Debian's PostgreSQL
	// allows 100.
	MaxConns int
}

// PostgresFromDSN reads a postgres:// URL: user, password, host:port, the
// main database's name (the path) and connection parameters. search_path
// is dropped: Temporal's tables live in each database's public schema.
func PostgresFromDSN(dsn string) (Postgres, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return Postgres{}, errors.New("not a postgres://user:password@host:port/database URL")
	}
	pg := Postgres{Addr: u.Host, Database: strings.TrimPrefix(u.Path, "/"), Attributes: map[string]string{}}
	if u.User != nil {
		pg.User = u.User.Username()
		pg.Password, _ = u.User.Password()
	}
	if _, _, err := net.SplitHostPort(pg.Addr); err != nil {
		pg.Addr = net.JoinHostPort(pg.Addr, "5432")
	}
	for k, v := range u.Query() {
		if k != "search_path" && len(v) > 0 {
			pg.Attributes[k] = v[0]
		}
	}
	pg.applyDefaults()
	return pg, nil
}

func (pg *Postgres) applyDefaults() {
	if pg.Database == "" {
		pg.Database = "temporal"
	}
	if pg.VisibilityDatabase == "" {
		pg.VisibilityDatabase = pg.Database + "_visibility"
	}
	if pg.AdminDatabase == "" {
		pg.AdminDatabase = "postgres"
	}
	if pg.MaxConns == 0 {
		pg.MaxConns = 10
	}
}

func (pg *Postgres) validate() error {
	pg.applyDefaults()
	if pg.Addr == "" {
		return errors.New("PostgreSQL address is empty")
	}
	if pg.User == "" {
		return fmt.Errorf("PostgreSQL %s: no user", pg.Addr)
	}
	return nil
}

// sqlConfig is the server's connection config for one of the databases.
func (pg Postgres) sqlConfig(database string, maxConns int) *config.SQL {
	attrs := make(map[string]string, len(pg.Attributes))
	for k, v := range pg.Attributes {
		attrs[k] = v
	}
	return &config.SQL{
		PluginName:        postgresql.PluginNamePGX,
		DatabaseName:      database,
		ConnectAddr:       pg.Addr,
		ConnectProtocol:   "tcp",
		User:              pg.User,
		Password:          pg.Password,
		ConnectAttributes: attrs,
		MaxConns:          maxConns,
		MaxIdleConns:      maxConns,
		MaxConnLifetime:   time.Hour,
	}
}
