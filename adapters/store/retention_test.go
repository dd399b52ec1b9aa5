package store_test

import (
	"context"
	"fmt"
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
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
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

// A message retention deletes exactly the messages and emails older than
// it (with their reactions; replies lose the quote of a deleted message),
// keeps what is still queued, the threads and the accounts without one,
// and takes the account's history down to its period too.
func TestPrunerMessageRetention(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, count := openCounting(t, dialect)
			now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
			days := func(n int) time.Time { return now.Add(-time.Duration(n) * account.Day) }

			ages := []int{400, 8, 7, 6, 1}
			type seeded struct{ account, thread string }
			seed := func(name string, retention int) seeded {
				a := account.Account{ID: ident.New(ident.Account), Name: name, CreatedAt: days(500), UpdatedAt: days(500)}
				require.NoError(t, db.AccountStore().Repos().InsertAccount(ctx, a))
				if retention > 0 {
					_, err := db.AccountStore().Repos().SetMessageRetention(ctx, a.ID, retention, now)
					require.NoError(t, err)
				}
				th := messaging.Thread{ID: ident.New(ident.Thread), AccountID: a.ID, Service: account.WhatsApp, Type: messaging.Individual,
					AgentNumber: "+15550001000", Contact: "+15550002000", CreatedAt: days(500), UpdatedAt: days(500)}
				b := writes.Batch{Threads: []writes.NewThread{{Thread: th}}}
				var ids []string
				for i, age := range ages {
					m := messaging.Message{ID: fmt.Sprintf("msg_%s_%d", name, age), AccountID: a.ID, ThreadID: th.ID, Service: account.WhatsApp,
						Direction: messaging.Inbound, From: th.Contact, To: th.AgentNumber, Status: messaging.Received,
						Content: messaging.Content{Kind: messaging.KindText, Text: fmt.Sprintf("text %d days old", age)}, CreatedAt: days(age), UpdatedAt: days(age)}
					if age == 1 {
						// The newest answers the 8-day-old one, quoting it.
						m.ReplyTo = messaging.Reply{MessageID: ids[1], Text: "text 8 days old"}
					}
					ids = append(ids, m.ID)
					b.Messages = append(b.Messages, m)
					b.MessageReactions = append(b.MessageReactions, messaging.Reaction{MessageID: m.ID, AccountID: a.ID, ThreadID: th.ID,
						Service: account.WhatsApp, Reactor: th.Contact, Emoji: "👍", At: days(ages[i])})
					b.Emails = append(b.Emails, email.Email{ID: fmt.Sprintf("eml_%s_%d", name, age), AccountID: a.ID, Direction: email.Outbound,
						From: "agent@example.com", To: "someone@example.com", Subject: "s", Body: "b", Status: email.Sent, CreatedAt: days(age), UpdatedAt: days(age)})
					b.Events = append(b.Events, event.Event{ID: fmt.Sprintf("evt_%s_%d", name, age), AccountID: a.ID, Type: event.MessageReceived,
						Payload: []byte(`{}`), CreatedAt: days(age)})
				}
				// Still queued, however old: its send is to come.
				b.Messages = append(b.Messages, messaging.Message{ID: "msg_" + name + "_queued", AccountID: a.ID, ThreadID: th.ID, Service: account.WhatsApp,
					Direction: messaging.OutboundAPI, From: th.AgentNumber, To: th.Contact, Status: messaging.Queued,
					Content: messaging.Content{Kind: messaging.KindText, Text: "to send"}, CreatedAt: days(400), UpdatedAt: days(400)})
				b.Emails = append(b.Emails, email.Email{ID: "eml_" + name + "_queued", AccountID: a.ID, Direction: email.Outbound,
					From: "agent@example.com", To: "someone@example.com", Subject: "s", Body: "b", Status: email.Queued, CreatedAt: days(400), UpdatedAt: days(400)})
				require.NoError(t, db.Commit(ctx, b))
				return seeded{a.ID, th.ID}
			}
			week, forever := seed("week", 7), seed("forever", 0)
			keptAges := func(table, prefix string) []int {
				var out []int
				for _, age := range ages {
					if count("SELECT COUNT(*) FROM "+table+" WHERE id = ?", fmt.Sprintf("%s_%d", prefix, age)) == 1 {
						out = append(out, age)
					}
				}
				return out
			}

			// Batches of two, so that a thread with more old messages than a
			// batch is walked again.
			p := retention.New(db.RetentionStore(), db.RetentionStore(), retention.Options{Retention: 30 * account.Day, Batch: 2, Now: func() time.Time { return now }})
			report, err := p.Prune(ctx)
			require.NoError(t, err)
			require.Equal(t, 2, report.Deleted[retention.Messages], "older than 7 days: 400 and 8")
			require.Equal(t, 2, report.Deleted[retention.Emails])
			require.Equal(t, []int{7, 6, 1}, keptAges("messages", "msg_week"))
			require.Equal(t, []int{7, 6, 1}, keptAges("emails", "eml_week"))
			require.Equal(t, ages, keptAges("messages", "msg_forever"), "no message retention: everything stays")
			require.Equal(t, ages, keptAges("emails", "eml_forever"))
			require.Equal(t, 1, count("SELECT COUNT(*) FROM messages WHERE id = ?", "msg_week_queued"), "a queued message stays")
			require.Equal(t, 1, count("SELECT COUNT(*) FROM emails WHERE id = ?", "eml_week_queued"), "a queued email stays")
			require.Equal(t, 3, count("SELECT COUNT(*) FROM message_reactions WHERE account_id = ?", week.account), "reactions go with their messages")
			require.Equal(t, 5, count("SELECT COUNT(*) FROM message_reactions WHERE account_id = ?", forever.account))
			require.Equal(t, 0, count("SELECT COUNT(*) FROM messages WHERE id = ? AND quoted_text <> ''", "msg_week_1"), "the quote of a deleted message goes")
			require.Equal(t, 1, count("SELECT COUNT(*) FROM messages WHERE id = ? AND quoted_text <> ''", "msg_forever_1"))
			require.Equal(t, 1, count("SELECT COUNT(*) FROM threads WHERE id = ?", week.thread), "the thread stays")
			require.Equal(t, []int{7, 6, 1}, keptAges("events", "evt_week"), "history goes at the shorter period")
			require.Equal(t, []int{8, 7, 6, 1}, keptAges("events", "evt_forever"), "the server's 30 days")

			// A second pass finds nothing more.
			report, err = p.Prune(ctx)
			require.NoError(t, err)
			require.Zero(t, report.Deleted[retention.Messages])
			require.Zero(t, report.Deleted[retention.Emails])
		})
	}
}

// Pruning under load: while batches keep recording events with pending
// deliveries (and finished ones), passes that find every row old delete
// the finished deliveries but never a pending one nor its event.
func TestPrunerUnderLoadKeepsPendingDeliveries(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, count := openCounting(t, dialect)
			now := time.Now().UTC()
			a := account.Account{ID: ident.New(ident.Account), Name: "load", CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.AccountStore().Repos().InsertAccount(ctx, a))
			_, err := db.AccountStore().Repos().SetMessageRetention(ctx, a.ID, 1, now)
			require.NoError(t, err)

			// Every row is older than the period at the passes' cutoff.
			p := retention.New(db.RetentionStore(), db.RetentionStore(), retention.Options{Retention: account.Day, Batch: 7,
				Now: func() time.Time { return time.Now().Add(400 * account.Day) }})
			const rounds = 60
			var pending []string
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range rounds {
					at := time.Now().UTC()
					var b writes.Batch
					for j, status := range []webhook.Status{webhook.Pending, webhook.Succeeded, webhook.Failed} {
						e := event.Event{ID: ident.New(ident.Event), AccountID: a.ID, Type: event.MessageReceived, Payload: []byte(`{}`), CreatedAt: at}
						d := webhook.Delivery{ID: ident.New(ident.Webhook), AccountID: a.ID, EventID: e.ID, EventType: e.Type,
							Status: status, NextAttemptAt: at, CreatedAt: at, UpdatedAt: at}
						b.Events, b.Deliveries = append(b.Events, e), append(b.Deliveries, d)
						if j == 0 {
							pending = append(pending, d.ID)
						}
					}
					if err := db.Commit(ctx, b); err != nil {
						t.Errorf("round %d: %v", i, err)
						return
					}
				}
			}()
			passes, deleted := 0, 0
			for running := true; running; {
				select {
				case <-done:
					running = false
				default:
				}
				report, err := p.Prune(ctx)
				require.NoError(t, err)
				passes++
				deleted += report.Deleted[retention.WebhookDeliveries]
			}
			require.Greater(t, passes, 1)
			require.Len(t, pending, rounds)
			for _, id := range pending {
				require.Equal(t, 1, count("SELECT COUNT(*) FROM webhook_deliveries WHERE id = ? AND status = 'pending'", id), "pending delivery %s is kept", id)
				require.Equal(t, 1, count("SELECT COUNT(*) FROM events e JOIN webhook_deliveries d ON d.event_id = e.id WHERE d.id = ?", id), "with its event")
			}
			report, err := p.Prune(ctx)
			require.NoError(t, err)
			deleted += report.Deleted[retention.WebhookDeliveries]
			require.Equal(t, 2*rounds, deleted, "every finished delivery goes, in some pass")
			require.Equal(t, rounds, count("SELECT COUNT(*) FROM webhook_deliveries WHERE account_id = ?", a.ID), "the pending ones are left")
		})
	}
}

// openCounting opens a fresh database, and a count of what a query finds
// in it.
func openCounting(t *testing.T, dialect store.Dialect) (*store.DB, func(query string, args ...any) int) {
	t.Helper()
	db, err := store.Open(context.Background(), dbtest.URL(t, dialect), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db, func(query string, args ...any) int {
		var n int
		require.NoError(t, db.Bun().NewRaw(query, args...).Scan(context.Background(), &n))
		return n
	}
}
