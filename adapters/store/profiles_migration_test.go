package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// The number profiles migration, on a database at the previous schema: a
// number stored before reads with no profile, and takes one after.
func TestNumberProfilesMigrationFromThePreviousSchema(t *testing.T) {
	t.Parallel()
	forEachDialectBefore(t, "20261129001100", func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
		require.NoError(t, db.Exec(ctx, "INSERT INTO accounts (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", "acc_aaaa", "a", at, at))
		require.NoError(t, db.Exec(ctx, "INSERT INTO numbers (id, account_id, number, service, provider, sealed_settings, enabled, created_at) VALUES (?, ?, ?, 'telegram', 'telegram', ?, TRUE, ?)",
			"num_old", "acc_aaaa", "+14155550100", []byte{1}, at))

		_, err := db.Migrate(ctx)
		require.NoError(t, err)

		r := db.AccountStore().Repos()
		numbers, err := r.Numbers(ctx, "acc_aaaa")
		require.NoError(t, err)
		require.Len(t, numbers, 1)
		require.Equal(t, account.Profile{}, numbers[0].Profile)
		name := "Ada"
		later := at.Add(time.Hour)
		n, err := r.SetNumberProfile(ctx, "acc_aaaa", "num_old", account.ProfileChange{Name: &name, At: later})
		require.NoError(t, err)
		require.Equal(t, account.Profile{Name: "Ada", UpdatedAt: &later}, n.Profile)
	})
}
