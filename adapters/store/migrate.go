package store

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/migrate"
)

//go:embed migrations
var migrationFiles embed.FS

// migrationLockID is the Postgres advisory lock key that serialises
// migrations across replicas (an arbitrary constant: "swbmigr" in ASCII).
const migrationLockID = 0x737762_6d696772

// migrationLockPoll is how often a replica asks again for the migration
// lock another one holds.
const migrationLockPoll = 200 * time.Millisecond

// Migrate applies every pending migration. It holds a lock for the whole
// run (a Postgres advisory lock, or an flock beside the SQLite file), so
// replicas starting at once apply each migration exactly once: the first
// applies, the others wait and then find nothing to do. On Postgres the
// lock and the migrations use connections of their own, without the
// pool's read and statement timeouts: ctx alone bounds how long a
// migration, or the wait for another replica's, may take.
func (db *DB) Migrate(ctx context.Context) (applied []string, err error) {
	on := db.write
	if db.migrationConnector != nil {
		sqldb := sql.OpenDB(db.migrationConnector)
		sqldb.SetMaxOpenConns(2) // the lock's session and the migrations'
		on = bun.NewDB(sqldb, pgdialect.New())
		defer on.Close()
	}
	unlock, err := db.lockMigrations(ctx, on)
	if err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = fmt.Errorf("release migration lock: %w", uerr)
		}
	}()

	m, err := db.migrator(on, migrate.WithMarkAppliedOnSuccess(true))
	if err != nil {
		return nil, err
	}
	if err := m.Init(ctx); err != nil {
		return nil, fmt.Errorf("create migration tables: %w", err)
	}
	group, err := m.Migrate(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply migrations: %w", err)
	}
	for _, mig := range group.Migrations {
		applied = append(applied, mig.Name)
	}
	if err := db.loadZeroDefaults(ctx, on); err != nil {
		return applied, fmt.Errorf("read column defaults: %w", err)
	}
	return applied, nil
}

// PendingMigrations lists migrations not applied yet; readiness uses it to
// refuse traffic on a schema that is behind the binary.
func (db *DB) PendingMigrations(ctx context.Context) ([]string, error) {
	m, err := db.migrator(db.read)
	if err != nil {
		return nil, err
	}
	status, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, mig := range status.Unapplied() {
		pending = append(pending, mig.Name)
	}
	return pending, nil
}

// UnknownMigrations lists the migrations applied to the database that
// this build does not have, by name (their timestamp), oldest first: a
// newer build migrated the database. Migrations are expand-then-contract
// (README, Upgrading): the schema of the next build still serves this one,
// so such a database is served, not refused; the list is for the log.
// The migrator ignores them when it applies this build's migrations.
func (db *DB) UnknownMigrations(ctx context.Context) ([]string, error) {
	m, err := db.migrator(db.read)
	if err != nil {
		return nil, err
	}
	known, err := m.MigrationsWithStatus(ctx)
	if err != nil {
		return nil, err
	}
	applied, err := m.AppliedMigrations(ctx)
	if err != nil {
		return nil, err
	}
	ours := make(map[string]bool, len(known))
	for _, mig := range known {
		ours[mig.Name] = true
	}
	var unknown []string
	for _, mig := range applied {
		if !ours[mig.Name] {
			unknown = append(unknown, mig.Name)
		}
	}
	slices.Sort(unknown)
	return unknown, nil
}

// migrator is a migrator of this build's migrations (of the database's
// dialect) over on.
func (db *DB) migrator(on *bun.DB, opts ...migrate.MigratorOption) (*migrate.Migrator, error) {
	sub, err := fs.Sub(migrationFiles, "migrations/"+string(db.dialect))
	if err != nil {
		return nil, err
	}
	migrations := migrate.NewMigrations()
	if err := migrations.Discover(sub); err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	return migrate.NewMigrator(on, migrations, opts...), nil
}

func (db *DB) lockMigrations(ctx context.Context, on *bun.DB) (func() error, error) {
	if db.dialect == SQLite {
		f, err := os.OpenFile(db.sqlitePath+".migrate-lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, err
		}
		return func() error {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			return f.Close()
		}, nil
	}
	// The advisory lock belongs to a session, so it is taken and released on
	// one pinned connection. It is polled rather than awaited, so that a
	// cancelled ctx ends the wait at once.
	conn, err := on.Conn(ctx)
	if err != nil {
		return nil, err
	}
	for {
		var locked bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", migrationLockID).Scan(&locked); err != nil {
			_ = conn.Close()
			return nil, err
		}
		if locked {
			break
		}
		select {
		case <-time.After(migrationLockPoll):
		case <-ctx.Done():
			_ = conn.Close()
			return nil, ctx.Err()
		}
	}
	return func() error {
		_, err := conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(?)", migrationLockID)
		if cerr := conn.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}

// MigrationFiles exposes the embedded migrations, so that test helpers can
// tell when they change.
func MigrationFiles() fs.FS { return migrationFiles }
