package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/retention"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// retentionFixture opens a fresh database twice: once for the stores, and
// once more as another replica would, for its pruning lock.
func retentionFixture(t *testing.T, dialect store.Dialect) storetest.RetentionFixture {
	url := dbtest.URL(t, dialect)
	open := func() *store.DB {
		db, err := store.Open(context.Background(), url, store.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	db, replica := open(), open()
	return storetest.RetentionFixture{
		Store: db.RetentionStore(), Lock: db.RetentionStore(), OtherLock: replica.RetentionStore(),
		Accounts: db.AccountStore(), Webhooks: db.WebhookStore(), Cron: db.CronStore(), Mailbox: db.MailboxStore(),
		Count: func(t *testing.T, query string, args ...any) int {
			var n int
			require.NoError(t, db.Bun().NewRaw(query, args...).Scan(context.Background(), &n))
			return n
		},
	}
}

func TestRetentionContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			storetest.Retention(t, func(t *testing.T) storetest.RetentionFixture { return retentionFixture(t, dialect) })
		})
	}
}

// The pruner over the real store: each account's history goes after its
// own period, the server's for accounts without one; a pass while
// another replica prunes does nothing.
func TestPrunerKeepsEachAccountsPeriod(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			f := retentionFixture(t, dialect)
			ctx := context.Background()
			now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
			days := func(n int) time.Time { return now.Add(-time.Duration(n) * account.Day) }

			accounts := map[string]int{"default": 0, "year": 365, "week": 7, "decade": 3650}
			ids := map[string]string{}
			for name, own := range accounts {
				a := account.Account{ID: ident.New(ident.Account), Name: name, CreatedAt: now, UpdatedAt: now}
				require.NoError(t, f.Accounts.Repos().InsertAccount(ctx, a))
				if own > 0 {
					_, err := f.Accounts.Repos().SetHistoryRetention(ctx, a.ID, own, now)
					require.NoError(t, err)
				}
				ids[name] = a.ID
			}
			ages := []int{4000, 400, 40, 10, 1}
			events := map[string][]string{}
			for name, id := range ids {
				for _, age := range ages {
					e := event.Event{ID: ident.New(ident.Event), AccountID: id, Type: event.MessageReceived, Payload: []byte(`{}`), CreatedAt: days(age)}
					require.NoError(t, f.Webhooks.Decide(ctx, func(context.Context, webhooks.TxReads) (writes.Batch, error) {
						return writes.Batch{Events: []event.Event{e}}, nil
					}))
					events[name] = append(events[name], e.ID)
				}
			}
			kept := func(name string) []int {
				var out []int
				for i, id := range events[name] {
					if f.Count(t, "SELECT COUNT(*) FROM events WHERE id = ?", id) == 1 {
						out = append(out, ages[i])
					}
				}
				return out
			}

			p := retention.New(f.Store, f.Lock, retention.Options{Retention: 30 * account.Day, Now: func() time.Time { return now }})
			var report retention.Report
			ran, err := f.OtherLock.Exclusively(ctx, func(ctx context.Context) error {
				var err error
				report, err = p.Prune(ctx)
				return err
			})
			require.NoError(t, err)
			require.True(t, ran)
			require.False(t, report.Ran, "another replica was pruning")
			require.Len(t, kept("default"), len(ages), "nothing was deleted")

			report, err = p.Prune(ctx)
			require.NoError(t, err)
			require.True(t, report.Ran)
			require.Equal(t, 3+2+4+1, report.Deleted[retention.Events])
			require.Equal(t, []int{10, 1}, kept("default"), "the server's 30 days")
			require.Equal(t, []int{40, 10, 1}, kept("year"))
			require.Equal(t, []int{1}, kept("week"))
			require.Equal(t, []int{400, 40, 10, 1}, kept("decade"))
		})
	}
}
