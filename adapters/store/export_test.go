package store

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/uptrace/bun/migrate"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/jobs"
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

var claimProbes atomic.Int64

// ClaimBuffers runs the Postgres claim of kinds, limit jobs at now, under
// the generic plan every connection ends up with, in a transaction rolled
// back, and returns the shared buffers it touched (EXPLAIN ANALYZE).
func (db *DB) ClaimBuffers(ctx context.Context, kinds []string, limit int, now time.Time) (int, error) {
	leases := make([]jobs.Lease, len(kinds))
	for i, k := range kinds {
		leases[i] = jobs.Lease{Kind: k, Until: now.Add(time.Minute)}
	}
	c := newClaim(leases, limit, now, jobs.ClaimFilter{Pool: "probe"})
	args, err := c.postgresArgs("probe-worker", leases)
	if err != nil {
		return 0, err
	}
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	name := fmt.Sprintf("claim_probe_%d", claimProbes.Add(1))
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `DEALLOCATE `+name) }()
	for _, stmt := range []string{`SET LOCAL plan_cache_mode = force_generic_plan`, `PREPARE ` + name + ` AS ` + claimPostgres} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return 0, err
		}
	}
	placeholders := strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ")
	var plan string
	if err := tx.NewRaw(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE `+name+`(`+placeholders+`)`, args...).Scan(ctx, &plan); err != nil {
		return 0, err
	}
	var out []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(plan), &out); err != nil || len(out) != 1 {
		return 0, fmt.Errorf("read the plan %q: %v", plan, err)
	}
	return out[0].Plan.Hit + out[0].Plan.Read, nil
}
