package store

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// migrationFS holds one directory of NNNN_name.sql files per dialect. They
// ship inside the binary so a deployed ordersync can upgrade its own schema.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

// migration is one schema step; version comes from the file name prefix.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the dialect's migrations sorted by version.
func loadMigrations(dialect string) ([]migration, error) {
	dir := path.Join("migrations", dialect)
	entries, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, fmt.Errorf("read %s migrations: %w", dialect, err)
	}
	var migs []migration
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s/%s: name must look like 0001_name.sql", dialect, e.Name())
		}
		body, err := fs.ReadFile(migrationFS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read migration %s/%s: %w", dialect, e.Name(), err)
		}
		migs = append(migs, migration{version: v, name: e.Name(), sql: string(body)})
	}
	slices.SortFunc(migs, func(a, b migration) int { return a.version - b.version })
	for i := 1; i < len(migs); i++ {
		if migs[i].version == migs[i-1].version {
			return nil, fmt.Errorf("migrations %s/%s and %s share version %d", dialect, migs[i-1].name, migs[i].name, migs[i].version)
		}
	}
	return migs, nil
}

// pendingMigrations returns the migrations not yet recorded as applied.
func pendingMigrations(all []migration, applied map[int]bool) []migration {
	var out []migration
	for _, m := range all {
		if !applied[m.version] {
			out = append(out, m)
		}
	}
	return out
}
