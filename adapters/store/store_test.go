package store_test

import (
	"context"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
)

func TestAccountsContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Accounts(t, func(t *testing.T) accounts.Store {
				db := dbtest.Open(t, dialect)
				return store.Bind(db, func(r *store.Repos) accounts.Repos { return r })
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

func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			db := dbtest.Open(t, dialect)
			ctx := context.Background()
			now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
			res, err := db.ReserveKey(ctx, "acc_a", "k1", "fp1", now, time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.New, res.Outcome)

			res, err = db.ReserveKey(ctx, "acc_a", "k1", "fp1", now.Add(time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.InFlight, res.Outcome, "the first request still runs")
			res, err = db.ReserveKey(ctx, "acc_a", "k1", "fp2", now.Add(time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.Mismatch, res.Outcome)
			res, err = db.ReserveKey(ctx, "acc_b", "k1", "fp2", now, time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.New, res.Outcome, "keys are per account")

			require.NoError(t, db.CompleteKey(ctx, "acc_a", "k1", 200, []byte(`{"ok":true}`)))
			res, err = db.ReserveKey(ctx, "acc_a", "k1", "fp1", now.Add(time.Hour), time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.Reservation{Outcome: idempotency.Replay, Status: 200, Body: []byte(`{"ok":true}`)}, res)

			res, err = db.ReserveKey(ctx, "acc_a", "k1", "fp3", now.Add(idempotency.Window+time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.New, res.Outcome, "after 24 hours the key is free")

			// A holder that died: its claim is taken over after the lock.
			_, err = db.ReserveKey(ctx, "acc_a", "k2", "fp", now, time.Minute)
			require.NoError(t, err)
			res, err = db.ReserveKey(ctx, "acc_a", "k2", "fp", now.Add(2*time.Minute), time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.New, res.Outcome)
			require.NoError(t, db.ReleaseKey(ctx, "acc_a", "k2"))

			n, err := db.PruneIdempotencyKeys(ctx, now.Add(idempotency.Window+time.Hour))
			require.NoError(t, err)
			require.EqualValues(t, 1, n, "only acc_b/k1 is older than the window: acc_a/k1 was taken anew and k2 released")
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
					Email:    store.Bind(db, func(r *store.Repos) appemail.Repos { return r }),
					Accounts: store.Bind(db, func(r *store.Repos) accounts.Repos { return r }),
				}
			})
		})
	}
}
