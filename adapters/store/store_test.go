package store_test

import (
	"context"
	"database/sql"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/mcpsessions"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
)

func TestAccountsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Accounts(t, func(t *testing.T) accounts.Store {
				db := dbtest.Open(t, dialect)
				return db.AccountStore()
			})
		})
	}
}

func TestSessionsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Sessions(t, func(t *testing.T) storetest.SessionsFixture {
				db := dbtest.Open(t, dialect)
				return storetest.SessionsFixture{Store: db.SessionStore(), Accounts: db.AccountStore()}
			})
		})
	}
}

func TestMCPSessionsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.MCPSessions(t, func(t *testing.T) mcpsessions.Store {
				return dbtest.Open(t, dialect).MCPSessionStore()
			})
		})
	}
}

// Three replicas starting at once on one database must apply each migration
// once and all come up.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			url := dbtest.EmptyURL(t, dialect)
			ctx := context.Background()
			const replicas = 3
			applied := make([][]string, replicas)
			errs := make([]error, replicas)
			var wg sync.WaitGroup
			for i := 0; i < replicas; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					db, err := store.Open(ctx, url, store.Options{})
					if err != nil {
						errs[i] = err
						return
					}
					defer db.Close()
					applied[i], errs[i] = db.Migrate(ctx)
				}()
			}
			wg.Wait()
			total := 0
			for i := range replicas {
				require.NoError(t, errs[i])
				total += len(applied[i])
			}
			db, err := store.Open(ctx, url, store.Options{})
			require.NoError(t, err)
			defer db.Close()
			pending, err := db.PendingMigrations(ctx)
			require.NoError(t, err)
			require.Empty(t, pending)
			again, err := db.Migrate(ctx)
			require.NoError(t, err)
			require.Empty(t, again, "a second run applies nothing")
			files, err := fs.Glob(store.MigrationFiles(), "migrations/"+string(dialect)+"/*.up.sql")
			require.NoError(t, err)
			require.NotEmpty(t, files)
			require.Equal(t, len(files), total, "each migration applied exactly once across replicas")
		})
	}
}

// A replica that finds another one migrating waits for it however long it
// takes, even past the read and statement timeouts that bound each query.
func TestMigrateWaitsOutALongMigration(t *testing.T) {
	t.Parallel()
	url := dbtest.EmptyURL(t, store.Postgres)
	ctx := context.Background()
	holder := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(url)))
	defer holder.Close()
	conn, err := holder.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	// The key Migrate uses, held as another replica would hold it.
	_, err = conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", 0x737762_6d696772)
	require.NoError(t, err)

	db, err := store.Open(ctx, url, store.Options{ReadTimeout: 400 * time.Millisecond, StatementTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer db.Close()
	done := make(chan error, 1)
	go func() {
		_, err := db.Migrate(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Migrate returned while the lock was held: %v", err)
	case <-time.After(time.Second): // longer than both timeouts
	}
	_, err = conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", 0x737762_6d696772)
	require.NoError(t, err)
	require.NoError(t, <-done)
	pending, err := db.PendingMigrations(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)
}

// A migration runs as long as it must: the pool's read and statement
// timeouts, meant for requests, do not cut it (an index built over a
// large table, here a migration table another session keeps locked).
func TestMigrationsOutliveTheRequestTimeouts(t *testing.T) {
	t.Parallel()
	url := dbtest.EmptyURL(t, store.Postgres)
	ctx := context.Background()
	setup, err := store.Open(ctx, url, store.Options{})
	require.NoError(t, err)
	_, err = setup.Migrate(ctx)
	require.NoError(t, err)
	require.NoError(t, setup.Close())

	holder := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(url)))
	defer holder.Close()
	tx, err := holder.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	_, err = tx.ExecContext(ctx, "LOCK TABLE bun_migrations IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)

	db, err := store.Open(ctx, url, store.Options{ReadTimeout: 400 * time.Millisecond, StatementTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	defer db.Close()
	done := make(chan error, 1)
	go func() {
		_, err := db.Migrate(ctx)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Migrate returned while its table was locked: %v", err)
	case <-time.After(time.Second): // longer than both timeouts
	}
	require.NoError(t, tx.Commit())
	require.NoError(t, <-done)
}

func TestIdempotencyContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Idempotency(t, func(t *testing.T) storetest.IdempotencyStores {
				db := dbtest.Open(t, dialect)
				decide := func(ctx context.Context, decide func(ctx context.Context) (writes.Batch, error)) error {
					return db.WebhookStore().Decide(ctx, func(ctx context.Context, _ webhooks.TxReads) (writes.Batch, error) { return decide(ctx) })
				}
				return storetest.IdempotencyStores{Keys: db.IdempotencyKeys(), Decide: decide, Committer: db, Prune: db.IdempotencyKeys().PruneIdempotencyKeys}
			})
		})
	}
}

func TestEmailContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Email(t, func(t *testing.T) storetest.EmailStores {
				db := dbtest.Open(t, dialect)
				return storetest.EmailStores{
					Email:     db.EmailStore(),
					Inbox:     db.InboxStore(),
					Committer: db,
					Accounts:  db.AccountStore(),
				}
			})
		})
	}
}
