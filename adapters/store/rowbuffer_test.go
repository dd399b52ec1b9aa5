package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

func newEmail(id string) email.Email {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return email.Email{
		ID: id, AccountID: "acc_rows", From: "a@example.com", To: "b@example.org",
		Subject: "s", Body: "b", MessageID: "<" + id + "@example.com>", Status: email.Queued,
		CreatedAt: now, UpdatedAt: now,
	}
}

func insertEmailUnit(id string) func(ctx context.Context, r *store.Repos) error {
	return func(ctx context.Context, r *store.Repos) error { return r.InsertEmail(ctx, newEmail(id)) }
}

// openWithAccount opens a one-leader database with the account the emails
// belong to.
func openWithAccount(t *testing.T, dialect store.Dialect) *store.DB {
	t.Helper()
	db := openOneLeader(t, dialect)
	now := time.Now().UTC()
	require.NoError(t, db.Repos().InsertAccount(context.Background(), account.Account{ID: "acc_rows", Name: "rows", Version: 1, CreatedAt: now, UpdatedAt: now}))
	return db
}

// Rows a transaction inserts are written at its commit (rowbuffer.go):
// these check that the transaction still reads them, and that a row that
// cannot be written fails its own caller only.
func TestDeferredInserts(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()

			t.Run("ATransactionReadsItsOwnRows", func(t *testing.T) {
				t.Parallel()
				db := openWithAccount(t, dialect)
				err := db.Transact(context.Background(), func(ctx context.Context, r *store.Repos) error {
					require.NoError(t, r.InsertEmail(ctx, newEmail("eml_own")))
					got, err := r.Email(ctx, "acc_rows", "eml_own")
					require.NoError(t, err)
					require.Equal(t, "eml_own", got.ID)
					return nil
				})
				require.NoError(t, err)
			})

			t.Run("ARolledBackTransactionWritesNothing", func(t *testing.T) {
				t.Parallel()
				db := openWithAccount(t, dialect)
				refused := fmt.Errorf("refused")
				err := db.Transact(context.Background(), func(ctx context.Context, r *store.Repos) error {
					require.NoError(t, r.InsertEmail(ctx, newEmail("eml_gone")))
					return refused
				})
				require.ErrorIs(t, err, refused)
				_, err = db.Repos().EmailByID(context.Background(), "eml_gone")
				require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
			})

			t.Run("ADuplicateFailsOnlyItsOwnCaller", func(t *testing.T) {
				t.Parallel()
				db := openWithAccount(t, dialect)
				require.NoError(t, db.Repos().InsertEmail(context.Background(), newEmail("eml_taken")))
				units := make([]func(ctx context.Context, r *store.Repos) error, 8)
				for i := range units {
					units[i] = insertEmailUnit(fmt.Sprintf("eml_batch_%d", i))
				}
				units[3] = insertEmailUnit("eml_taken")
				errs := lineUp(t, db, units)
				for i, err := range errs {
					if i == 3 {
						require.True(t, failure.Is(err, failure.KindConflict), "the duplicate's caller: got %v", err)
						continue
					}
					require.NoError(t, err, "unit %d", i)
					_, err := db.Repos().EmailByID(context.Background(), fmt.Sprintf("eml_batch_%d", i))
					require.NoError(t, err, "unit %d's email", i)
				}
				require.Equal(t, int64(8), db.SharedStats().Redone, "the batch failed at its commit and each unit ran alone")
			})

			t.Run("ABatchWritesItsRowsTogether", func(t *testing.T) {
				t.Parallel()
				db := openWithAccount(t, dialect)
				units := make([]func(ctx context.Context, r *store.Repos) error, 16)
				for i := range units {
					units[i] = insertEmailUnit(fmt.Sprintf("eml_together_%d", i))
				}
				for i, err := range lineUp(t, db, units) {
					require.NoError(t, err, "unit %d", i)
				}
				n, err := db.Bun().NewSelect().Table("emails").Where("id LIKE 'eml_together_%'").Count(context.Background())
				require.NoError(t, err)
				require.Equal(t, 16, n)
				require.Zero(t, db.SharedStats().Redone)
			})
		})
	}
}
