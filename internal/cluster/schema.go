package cluster

import (
	"fmt"

	"go.temporal.io/server/common/log"
	postgresschema "go.temporal.io/server/schema/postgresql/v12"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// Schema names of Temporal's embedded PostgreSQL schemas (the directories
// schema/postgresql/v12/... of the server module, which temporal-sql-tool
// reads with --schema-name).
const (
	mainSchema       = "postgresql/v12/temporal"
	visibilitySchema = "postgresql/v12/visibility"
)

// SetupSchema creates Temporal's two databases and brings their schemas to
// the versions this server build needs, with the code temporal-sql-tool
// runs for
//
//	temporal-sql-tool --plugin postgres12_pgx --db temporal create-database
//	temporal-sql-tool ... --db temporal setup-schema -v 0.0
//	temporal-sql-tool ... --db temporal update-schema --schema-name postgresql/v12/temporal
//
// and the same for the visibility database. Every step is idempotent: an
// existing database is kept, setup-schema only creates the version tables
// if missing, and update-schema applies only the versions not yet applied,
// so this is also how a newer server build upgrades the schema.
func SetupSchema(pg Postgres, logger log.Logger) error {
	if logger == nil {
		logger = log.NewNoopLogger()
	}
	if err := pg.validate(); err != nil {
		return err
	}
	for _, db := range []struct {
		name, schemaName, version string
	}{
		{pg.Database, mainSchema, postgresschema.Version},
		{pg.VisibilityDatabase, visibilitySchema, postgresschema.VisibilityVersion},
	} {
		if err := setupDatabase(pg, db.name, db.schemaName, db.version, logger); err != nil {
			return fmt.Errorf("set up Temporal database %s on %s: %w", db.name, pg.Addr, err)
		}
	}
	return nil
}

func setupDatabase(pg Postgres, name, schemaName, want string, logger log.Logger) error {
	cfg := pg.sqlConfig(name, 1)
	// create-database connects to the admin database to create this one
	// (it changes the config it is given, hence a copy).
	if err := sqltool.DoCreateDatabase(pg.sqlConfig(name, 1), pg.AdminDatabase, logger); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	conn, err := sqltool.NewConnection(cfg, logger)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	if err := schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run(); err != nil {
		return fmt.Errorf("setup-schema: %w", err)
	}
	if err := schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: name, SchemaName: schemaName}, logger).Run(); err != nil {
		return fmt.Errorf("update-schema: %w", err)
	}
	// The server refuses to start on an older schema; say so here, naming it.
	got, err := conn.ReadSchemaVersion()
	if err != nil {
		return fmt.Errorf("read the schema version: %w", err)
	}
	if olderVersion(got, want) {
		return fmt.Errorf("schema version %s after update-schema, this server needs %s", got, want)
	}
	return nil
}

// olderVersion compares Temporal schema versions ("1.9" < "1.19").
func olderVersion(a, b string) bool {
	var aMajor, aMinor, bMajor, bMinor int
	_, errA := fmt.Sscanf(a, "%d.%d", &aMajor, &aMinor)
	_, errB := fmt.Sscanf(b, "%d.%d", &bMajor, &bMinor)
	if errA != nil || errB != nil {
		return a != b
	}
	return aMajor < bMajor || (aMajor == bMajor && aMinor < bMinor)
}
