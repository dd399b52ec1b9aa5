package store_test

import (
	"context"
	"io/fs"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
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

func TestIdempotencyContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Idempotency(t, func(t *testing.T) storetest.IdempotencyStores {
				db := dbtest.Open(t, dialect)
				transact := func(ctx context.Context, fn func(ctx context.Context, r idempotency.Recorder) error) error {
					return db.Transact(ctx, func(ctx context.Context, c *store.Conn) error { return fn(ctx, c) })
				}
				return storetest.IdempotencyStores{Keys: db, Transact: transact, Committer: db, Prune: db.PruneIdempotencyKeys}
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
					Committer: db,
					Accounts:  db.AccountStore(),
				}
			})
		})
	}
}
