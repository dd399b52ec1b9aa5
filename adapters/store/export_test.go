package store

import (
	"context"
	"io/fs"
	"log/slog"
	"strings"
	"testing/fstest"

	"github.com/uptrace/bun/migrate"

	"github.com/switchboard-dev/switchboard/application/writes"
)

// WatchHealth starts the health watcher, as the fx module does.
func (db *DB) WatchHealth(log *slog.Logger) { db.watchHealth(log) }

// MigrateBefore applies the migrations whose names sort before name: the
// database at the schema of an earlier release.
func (db *DB) MigrateBefore(ctx context.Context, name string) error {
	sub, err := fs.Sub(migrationFiles, "migrations/"+string(db.dialect))
	if err != nil {
		return err
	}
	earlier := fstest.MapFS{}
	err = fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path >= name {
			return err
		}
		data, err := fs.ReadFile(sub, path)
		earlier[path] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		return err
	}
	migrations := migrate.NewMigrations()
	if err := migrations.Discover(earlier); err != nil {
		return err
	}
	m := migrate.NewMigrator(db.write, migrations, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return err
	}
	_, err = m.Migrate(ctx)
	return err
}

// Exec runs a statement with ? placeholders on the database.
func (db *DB) Exec(ctx context.Context, query string, args ...any) error {
	_, err := db.write.NewRaw(query, args...).Exec(ctx)
	return err
}

// Die lets the process's lock go as its death would (kill -9): without
// marking it stopped.
func (p *Process) Die() {
	p.stop()
	<-p.done
	p.unlock()
}

// DeadProcesses lists the processes known dead now.
func (db *DB) DeadProcesses(ctx context.Context) ([]string, error) {
	var ids []string
	err := db.write.NewRaw(db.deadProcesses+" ORDER BY id").Scan(ctx, &ids)
	return ids, err
}

// ProcessLockClass is the first key of the processes' advisory locks.
const ProcessLockClass = processClass

// Observe looks at the other processes' locks now, as the process does
// every processCheckInterval.
func (p *Process) Observe(ctx context.Context) error { return p.observe(ctx) }

// ForgetZeroDefaults makes every batch INSERT write every column, as
// before the schema's defaults are read.
func (db *DB) ForgetZeroDefaults() { db.zeroDefaults.Store(nil) }

// BatchText is the SQL text a Postgres batch of b is sent as (its
// placeholders not filled in).
func (db *DB) BatchText(b writes.Batch) string {
	var texts []string
	for _, s := range pgStatements(rowTables{db.write.Dialect().Tables(), db.defaults()}, b, db.now(), func() *binder { return &binder{} }) {
		texts = append(texts, s.text)
	}
	return strings.Join(texts, ";\n")
}
