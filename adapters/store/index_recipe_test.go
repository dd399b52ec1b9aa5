package store_test

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/migrate"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// concurrentIndexRecipe is the migration docs/upgrading.md gives for an
// index on a big Postgres table: no .tx suffix, one statement per
// --bun:split chunk, an invalid index of a failed earlier run dropped
// first.
const concurrentIndexRecipe = `-- Threads by their agent number, built without blocking sends.
DROP INDEX CONCURRENTLY IF EXISTS threads_agent_number_idx;
--bun:split
CREATE INDEX CONCURRENTLY threads_agent_number_idx ON threads (account_id, agent_number);
`

// The recipe runs as bun runs a migration and leaves a valid index; the
// same statements in a .tx migration, or without --bun:split, fail, which
// is why tests/lint asks for the recipe's form.
func TestConcurrentIndexRecipe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(t *testing.T, file, sql string) error {
		db := dbtest.Open(t, store.Postgres)
		migrations := migrate.NewMigrations()
		require.NoError(t, migrations.Discover(fstest.MapFS{file: {Data: []byte(sql)}}))
		m := migrate.NewMigrator(db.Bun(), migrations, migrate.WithTableName("recipe_migrations"),
			migrate.WithLocksTableName("recipe_migration_locks"), migrate.WithMarkAppliedOnSuccess(true))
		require.NoError(t, m.Init(ctx))
		_, err := m.Migrate(ctx)
		if err == nil {
			var valid bool
			require.NoError(t, db.Bun().NewRaw(`SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
				WHERE c.relname = 'threads_agent_number_idx'`).Scan(ctx, &valid))
			require.True(t, valid, "the index is built and valid")
		}
		return err
	}

	t.Run("recipe", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, run(t, "20261201000100_threads_agent_number.up.sql", concurrentIndexRecipe))
	})
	t.Run("in a transaction", func(t *testing.T) {
		t.Parallel()
		err := run(t, "20261201000100_threads_agent_number.tx.up.sql", concurrentIndexRecipe)
		require.ErrorContains(t, err, "cannot run inside a transaction block")
	})
	t.Run("without split", func(t *testing.T) {
		t.Parallel()
		err := run(t, "20261201000100_threads_agent_number.up.sql", `DROP INDEX CONCURRENTLY IF EXISTS threads_agent_number_idx;
CREATE INDEX CONCURRENTLY threads_agent_number_idx ON threads (account_id, agent_number);`)
		require.ErrorContains(t, err, "cannot run inside a transaction block", "Postgres runs the statements of one query in one transaction")
	})
}
