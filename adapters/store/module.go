package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.uber.org/fx"
)

// Config is what the store module needs from the composition root.
type Config struct {
	URL      string
	MaxConns int
	// MigrateOnStart applies pending migrations before the app starts.
	MigrateOnStart bool
	// ReadTimeout and StatementTimeout bound Postgres's answers (Options).
	ReadTimeout, StatementTimeout time.Duration
	// Background runs the health watcher and the maintenance loop: a
	// server's, not a one-shot command's.
	Background bool
}

// migrateOnStartTimeout bounds the migrations run at start, the wait for
// another replica's included.
const migrateOnStartTimeout = 5 * time.Minute

// Module provides the open *DB, migrated when configured, and closes it
// when the app stops.
var Module = fx.Module("store",
	fx.Provide(newModuleDB),
)

// moduleDeps are what the module's *DB is built from: the reactions are
// optional (an app without the webhooks feature has none).
type moduleDeps struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    Config
	Log       *slog.Logger
	Reactions ReactingOn `optional:"true"`
}

func newModuleDB(d moduleDeps) (*DB, error) {
	lc, cfg, log := d.Lifecycle, d.Config, d.Log
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := Open(ctx, cfg.URL, Options{MaxConns: cfg.MaxConns,
		ReadTimeout: cfg.ReadTimeout, StatementTimeout: cfg.StatementTimeout, Reactions: d.Reactions})
	if err != nil {
		return nil, err
	}
	if cfg.MigrateOnStart {
		// Migrating gets its own, longer budget: a replica may wait here
		// while another one applies a slow migration.
		migrateCtx, cancel := context.WithTimeout(context.Background(), migrateOnStartTimeout)
		defer cancel()
		applied, err := db.Migrate(migrateCtx)
		if err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("migrate: %w", err)
		}
		if len(applied) > 0 {
			log.Info("applied migrations", "migrations", applied)
		}
	}
	logUnknownMigrations(ctx, db, log)
	lc.Append(fx.StopHook(db.Close))
	if cfg.Background {
		go db.maintain(db.background, log)
		db.watchHealth(log)
	}
	return db, nil
}

// logUnknownMigrations logs the migrations a newer build applied to the
// database, which this build does not know: during a rolling upgrade the
// replicas of the older build serve on the newer schema (README,
// Upgrading). A database whose migrations cannot be read is left to the
// readiness check, which says so.
func logUnknownMigrations(ctx context.Context, db *DB, log *slog.Logger) {
	unknown, err := db.UnknownMigrations(ctx)
	if err != nil || len(unknown) == 0 {
		return
	}
	log.Info("the database has migrations this build does not know (a newer build applied them); serving on its schema",
		"migrations", unknown)
}

// maintain deletes expired rows that no request path removes (idempotency
// keys past their window, ended dashboard and MCP sessions), every ten minutes, until the
// database is closed.
func (db *DB) maintain(ctx context.Context, log *slog.Logger) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := db.IdempotencyKeys().PruneIdempotencyKeys(ctx, db.now()); err != nil && ctx.Err() == nil {
				log.Warn("database maintenance", "error", err)
			}
			if _, err := db.SessionStore().PruneSessions(ctx, db.now()); err != nil && ctx.Err() == nil {
				log.Warn("database maintenance", "error", err)
			}
			if _, err := db.MCPSessionStore().PruneSessions(ctx, db.now()); err != nil && ctx.Err() == nil {
				log.Warn("database maintenance", "error", err)
			}
		}
	}
}
