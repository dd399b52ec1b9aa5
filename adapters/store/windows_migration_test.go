package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The thread windows migration, on a database at the previous schema: an
// individual thread of a WhatsApp Cloud API number that a user wrote in
// gets a window closing 24 hours after that message was received;
// threads of sandbox numbers, groups and threads nobody wrote in get none.
func TestThreadWindowsMigrationFromThePreviousSchema(t *testing.T) {
	t.Parallel()
	forEachDialectBefore(t, "20261129000300", func(t *testing.T, db *store.DB) {
		ctx := context.Background()

		at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
		wrote := at.Add(2*time.Hour + 123456*time.Microsecond)
		exec := func(query string, args ...any) { t.Helper(); require.NoError(t, db.Exec(ctx, query, args...)) }
		exec("INSERT INTO accounts (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", "acc_aaaa", "a", at, at)
		for _, n := range []struct{ id, number, provider string }{
			{"num_cloud", "+14155550100", "whatsapp-cloud"}, {"num_sandbox", "+14155550101", "sandbox"},
		} {
			exec("INSERT INTO numbers (id, account_id, number, service, provider, sealed_settings, enabled, created_at) VALUES (?, ?, ?, 'whatsapp', ?, ?, TRUE, ?)",
				n.id, "acc_aaaa", n.number, n.provider, []byte{1}, at)
		}
		for _, th := range []struct {
			id, typ, agent, contact string
			inbound                 *time.Time
		}{
			{"thr_cloud", "individual", "+14155550100", "+4917012345678", &wrote},
			{"thr_silent", "individual", "+14155550100", "+4917012345679", nil},
			{"thr_sandbox", "individual", "+14155550101", "+4917012345678", &wrote},
			{"thr_group", "group", "+14155550100", "", &wrote},
		} {
			var contact any = th.contact
			if th.contact == "" {
				contact = nil
			}
			exec("INSERT INTO threads (id, account_id, service, type, agent_number, contact, name, last_inbound_at, created_at, updated_at) VALUES (?, 'acc_aaaa', 'whatsapp', ?, ?, ?, 'x', ?, ?, ?)",
				th.id, th.typ, th.agent, contact, th.inbound, at, at)
		}

		_, err := db.Migrate(ctx)
		require.NoError(t, err)

		r := db.MessagingStore()
		window := func(id string) *time.Time {
			t.Helper()
			th, err := r.Thread(ctx, "acc_aaaa", id)
			require.NoError(t, err)
			return th.WindowClosesAt
		}
		closes := window("thr_cloud")
		require.NotNil(t, closes)
		require.WithinDuration(t, wrote.Add(24*time.Hour), *closes, time.Second, "24 hours after the message, to the second at least")
		require.False(t, closes.After(wrote.Add(24*time.Hour)), "never later than 24 hours after it")
		require.Nil(t, window("thr_silent"), "nobody wrote")
		require.Nil(t, window("thr_sandbox"), "the sandbox has no window")
		require.Nil(t, window("thr_group"), "groups have no window")
	})
}

// forEachDialectBefore runs test, in parallel, on an empty database of
// each dialect migrated up to the migration version (left out).
func forEachDialectBefore(t *testing.T, version string, test func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			db, err := store.Open(context.Background(), dbtest.EmptyURL(t, dialect), store.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			require.NoError(t, db.MigrateBefore(context.Background(), version))
			test(t, db)
		})
	}
}
