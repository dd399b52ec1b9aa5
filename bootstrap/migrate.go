package bootstrap

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// Migrate applies the pending migrations of the configured database, as
// `switchboard migrate` does, and returns what it applied, each named by
// its file (20261122000001_accounts), oldest first; none when the database
// is up to date. It holds the migration lock while it runs, so replicas
// starting at the same moment wait for it. It needs no server key.
func Migrate(ctx context.Context, cfg Config) (applied []string, err error) {
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := store.Open(openCtx, cfg.DatabaseURL, store.Options{MaxConns: 2,
		ReadTimeout: cfg.DBReadTimeout, StatementTimeout: cfg.DBStatementTimeout})
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := db.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	applied, err = db.Migrate(ctx)
	if err != nil {
		return nil, err
	}
	labels := migrationLabels(store.MigrationFiles())
	for i, name := range applied {
		if l, ok := labels[name]; ok {
			applied[i] = l
		}
	}
	return applied, nil
}

// migrationLabels maps a migration's name (its timestamp) to the name of
// its file without the suffixes: 20261122000001 → 20261122000001_accounts.
func migrationLabels(files fs.FS) map[string]string {
	labels := map[string]string{}
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".up.sql") {
			return nil
		}
		base := strings.TrimSuffix(strings.TrimSuffix(path.Base(p), ".up.sql"), ".tx")
		if name, _, ok := strings.Cut(base, "_"); ok {
			labels[name] = base
		}
		return nil
	})
	return labels
}
