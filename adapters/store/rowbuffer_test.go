package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
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

			t.Run("AUnitThatReadsJoinsTheBatch", func(t *testing.T) {
				t.Parallel()
				db := openWithAccount(t, dialect)
				units := make([]func(ctx context.Context, r *store.Repos) error, 6)
				for i := range units {
					units[i] = insertEmailUnit(fmt.Sprintf("eml_mixed_%d", i))
				}
				// On Postgres the units before it in the batch only write,
				// so the transaction begins with this read (lazytx.go), which
				// first writes what they kept.
				units[3] = func(ctx context.Context, r *store.Repos) error {
					if err := r.InsertEmail(ctx, newEmail("eml_mixed_3")); err != nil {
						return err
					}
					got, err := r.Email(ctx, "acc_rows", "eml_mixed_3")
					if err != nil {
						return err
					}
					require.Equal(t, "eml_mixed_3", got.ID)
					return nil
				}
				for i, err := range lineUp(t, db, units) {
					require.NoError(t, err, "unit %d", i)
				}
				n, err := db.Bun().NewSelect().Table("emails").Where("id LIKE 'eml_mixed_%'").Count(context.Background())
				require.NoError(t, err)
				require.Equal(t, 6, n)
				require.Zero(t, db.SharedStats().Redone)
			})
		})
	}
}

// queryLog records the statements a store runs.
type queryLog struct {
	mu      sync.Mutex
	queries []string
}

func (l *queryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (l *queryLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	l.mu.Lock()
	l.queries = append(l.queries, e.Query)
	l.mu.Unlock()
}

func (l *queryLog) containing(part string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var found []string
	for _, q := range l.queries {
		if strings.Contains(q, part) {
			found = append(found, q)
		}
	}
	return found
}

// On Postgres a shared batch whose units only write is sent as one
// multi-statement query, without BEGIN and COMMIT (lazytx.go).
func TestWriteOnlyBatches(t *testing.T) {
	t.Parallel()
	db := openWithAccount(t, store.Postgres)
	log := &queryLog{}
	db.AddQueryHook(log)
	// Text that must reach the table as written: placeholders of both
	// drivers, quotes, a statement separator and a comment opener.
	const body = "why? $1 ?0 'quoted' \"double\" ; -- not a comment /* nor this */ \\ end"
	units := make([]func(ctx context.Context, r *store.Repos) error, 5)
	for i := range units {
		id := fmt.Sprintf("eml_one_trip_%d", i)
		units[i] = func(ctx context.Context, r *store.Repos) error {
			// As a send's fan-out does: the account has no endpoint.
			if _, err := r.WebhookEndpoint(ctx, "acc_rows"); !failure.Is(err, failure.KindNotFound) {
				return fmt.Errorf("endpoint: want not found, got %v", err)
			}
			e := newEmail(id)
			e.Body, e.Subject = body, body
			if err := r.InsertEmail(ctx, e); err != nil {
				return err
			}
			_, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "one_trip", Payload: []byte(body)})
			return err
		}
	}
	for i, err := range lineUp(t, db, units) {
		require.NoError(t, err, "unit %d", i)
	}
	writes := log.containing(`INSERT INTO "emails"`)
	require.Len(t, writes, 1, "the batch's emails")
	require.Contains(t, writes[0], "INSERT INTO jobs", "the jobs went in the same query")
	require.Len(t, log.containing("FROM webhook_endpoints"), 1, "the batch read the endpoint once, beside its transaction")
	for i := range units {
		got, err := db.Repos().EmailByID(context.Background(), fmt.Sprintf("eml_one_trip_%d", i))
		require.NoError(t, err)
		require.Equal(t, body, got.Body)
		require.Equal(t, body, got.Subject)
	}
	var payloads [][]byte
	require.NoError(t, db.Bun().NewSelect().Table("jobs").Column("payload").Where("kind = 'one_trip'").Scan(context.Background(), &payloads))
	require.Len(t, payloads, 5)
	for _, p := range payloads {
		require.Equal(t, body, string(p))
	}
	require.Zero(t, db.SharedStats().Redone)

	// A batch that changes the endpoint reads it in its transaction.
	now := time.Now().UTC().Truncate(time.Microsecond)
	saved := lineUp(t, db, []func(ctx context.Context, r *store.Repos) error{
		func(ctx context.Context, r *store.Repos) error {
			rec := webhooks.Record{Endpoint: webhook.Endpoint{AccountID: "acc_rows", URL: "https://example.com/one-trip", Enabled: true, CreatedAt: now, UpdatedAt: now}, SealedSecret: []byte{1}}
			if err := r.SaveWebhookEndpoint(ctx, rec); err != nil {
				return err
			}
			got, err := r.WebhookEndpoint(ctx, "acc_rows")
			if err != nil {
				return err
			}
			require.Equal(t, "https://example.com/one-trip", got.Endpoint.URL)
			return nil
		},
	})
	require.NoError(t, saved[0])
}

// A send's rows (message, event, thread activity) are kept for the commit,
// and its lookups (sending number, webhook endpoint) for the rest of the
// transaction; these check that the transaction still sees its own work
// and that its own changes are never hidden by what it kept.
func TestSendWritesAndLookupsInATransaction(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := openWithAccount(t, dialect)
			now := time.Now().UTC().Truncate(time.Microsecond)
			n := account.Number{ID: "num_rows", AccountID: "acc_rows", Number: "+15550001111", Service: account.WhatsApp, Provider: account.ProviderSandbox, SealedSettings: []byte{}, Enabled: true, CreatedAt: now}
			require.NoError(t, db.Repos().InsertNumber(ctx, n))
			th := messaging.Thread{ID: "thr_rows", AccountID: "acc_rows", Service: account.WhatsApp, Type: messaging.Individual, AgentNumber: n.Number, Contact: "+15550002222", CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.Repos().InsertThread(ctx, th, nil))

			later := now.Add(time.Minute)
			err := db.Transact(ctx, func(ctx context.Context, r *store.Repos) error {
				m := messaging.Message{ID: "msg_rows", AccountID: "acc_rows", ThreadID: th.ID, Service: account.WhatsApp, Direction: messaging.OutboundAPI,
					From: n.Number, To: th.Contact, Content: messaging.Content{Kind: messaging.KindText, Text: "hi"}, Status: messaging.Queued, CreatedAt: later, UpdatedAt: later}
				require.NoError(t, r.InsertMessage(ctx, m))
				require.NoError(t, r.TouchThread(ctx, th.ID, later, false))
				require.NoError(t, r.InsertEvent(ctx, event.Event{ID: "evt_rows", AccountID: "acc_rows", Type: event.MessageSent, ThreadID: th.ID, Payload: []byte(`{}`), CreatedAt: later}))
				got, err := r.Message(ctx, "acc_rows", m.ID)
				require.NoError(t, err, "the transaction reads its own message")
				require.Equal(t, "hi", got.Content.Text)
				recent, err := r.RecentMessages(ctx, "acc_rows", th.ID, 5)
				require.NoError(t, err)
				require.Len(t, recent, 1)
				events, err := r.EventsAfter(ctx, "acc_rows", "", 10)
				require.NoError(t, err)
				require.Len(t, events, 1, "and its own event")

				// Lookups kept for the transaction, and forgotten when it
				// changes what they read.
				_, err = r.WebhookEndpoint(ctx, "acc_rows")
				require.True(t, failure.Is(err, failure.KindNotFound), "%v", err)
				rec := webhooks.Record{Endpoint: webhook.Endpoint{AccountID: "acc_rows", URL: "https://example.com/h", Enabled: true, CreatedAt: now, UpdatedAt: now}, SealedSecret: []byte{1}}
				require.NoError(t, r.SaveWebhookEndpoint(ctx, rec))
				found, err := r.WebhookEndpoint(ctx, "acc_rows")
				require.NoError(t, err, "a saved endpoint is read, not the remembered absence")
				require.Equal(t, rec.Endpoint.URL, found.Endpoint.URL)

				got1, err := r.NumberByAddress(ctx, account.WhatsApp, n.Number)
				require.NoError(t, err)
				require.True(t, got1.Enabled)
				_, err = r.SetNumberEnabled(ctx, "acc_rows", n.ID, false)
				require.NoError(t, err)
				got2, err := r.NumberByAddress(ctx, account.WhatsApp, n.Number)
				require.NoError(t, err)
				require.False(t, got2.Enabled, "a disabled number is read as disabled")
				return nil
			})
			require.NoError(t, err)
			got, err := db.Repos().Thread(ctx, "acc_rows", th.ID)
			require.NoError(t, err)
			require.True(t, got.UpdatedAt.Equal(later), "the thread's activity was written with the commit: %v", got.UpdatedAt)
			_, err = db.Repos().MessageByID(ctx, "msg_rows")
			require.NoError(t, err)
		})
	}
}

// A status change updates its message and appends an event: both are kept
// for the commit, so a batch of status changes writes its events with one
// INSERT and, on Postgres, its changes with one UPDATE, the two in one
// query. A message inserted and changed in one transaction, or changed
// twice, ends with its last change, and a read in the transaction sees it.
func TestStatusChangesKeepTheirEventsForTheCommit(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := openWithAccount(t, dialect)
			now := time.Now().UTC().Truncate(time.Microsecond)
			th := messaging.Thread{ID: "thr_status", AccountID: "acc_rows", Service: account.WhatsApp, Type: messaging.Individual, AgentNumber: "+15550001111", Contact: "+15550002222", CreatedAt: now, UpdatedAt: now}
			require.NoError(t, db.Repos().InsertThread(ctx, th, nil))
			message := func(i int) messaging.Message {
				return messaging.Message{ID: fmt.Sprintf("msg_status_%d", i), AccountID: "acc_rows", ThreadID: th.ID, Service: account.WhatsApp, Direction: messaging.OutboundAPI,
					From: th.AgentNumber, To: th.Contact, Content: messaging.Content{Kind: messaging.KindText, Text: "hi"}, Status: messaging.Queued, CreatedAt: now, UpdatedAt: now}
			}
			for i := range 6 {
				require.NoError(t, db.Repos().InsertMessage(ctx, message(i)))
			}
			log := &queryLog{}
			db.AddQueryHook(log)
			units := make([]func(ctx context.Context, r *store.Repos) error, 6)
			for i := range units {
				units[i] = func(ctx context.Context, r *store.Repos) error {
					m := message(i)
					m.Status, m.UpdatedAt = messaging.Sent, now.Add(time.Second)
					if err := r.UpdateMessage(ctx, m); err != nil {
						return err
					}
					return r.InsertEvent(ctx, event.Event{ID: fmt.Sprintf("evt_status_%d", i), AccountID: "acc_rows", Type: event.MessageSent, ThreadID: th.ID, Payload: []byte(`{}`), CreatedAt: now})
				}
			}
			for i, err := range lineUp(t, db, units) {
				require.NoError(t, err, "unit %d", i)
			}
			require.Len(t, log.containing(`INSERT INTO "events"`), 1, "one INSERT for the batch's events")
			if dialect == store.Postgres {
				updates := log.containing(`UPDATE messages`)
				require.Len(t, updates, 1, "one UPDATE for the batch's status changes")
				require.Contains(t, updates[0], `INSERT INTO "events"`, "the changes and the events go in one query")
				require.Empty(t, log.containing("BEGIN"), "a batch of status changes begins no transaction")
			}
			events, err := db.Repos().EventsAfter(ctx, "acc_rows", "", 10)
			require.NoError(t, err)
			require.Len(t, events, 6)
			for i := range 6 {
				got, err := db.Repos().MessageByID(ctx, message(i).ID)
				require.NoError(t, err)
				require.Equal(t, messaging.Sent, got.Status)
				require.True(t, got.UpdatedAt.Equal(now.Add(time.Second)), "updated at %v", got.UpdatedAt)
			}

			// Inserted, changed twice and read back in one transaction.
			err = db.Transact(ctx, func(ctx context.Context, r *store.Repos) error {
				m := message(6)
				if err := r.InsertMessage(ctx, m); err != nil {
					return err
				}
				m.Status, m.ProviderMessageID, m.UpdatedAt = messaging.Sent, "wamid.6", now.Add(time.Second)
				if err := r.UpdateMessage(ctx, m); err != nil {
					return err
				}
				m.Status, m.FailureCode, m.FailureText, m.UpdatedAt = messaging.Failed, "rejected", "it's \"refused\"; {x,y}", now.Add(2*time.Second)
				if err := r.UpdateMessage(ctx, m); err != nil {
					return err
				}
				got, err := r.MessageByID(ctx, m.ID)
				require.NoError(t, err)
				require.Equal(t, messaging.Failed, got.Status, "a read in the transaction sees its change")
				return nil
			})
			require.NoError(t, err)
			got, err := db.Repos().MessageByID(ctx, message(6).ID)
			require.NoError(t, err)
			require.Equal(t, messaging.Failed, got.Status)
			require.Equal(t, "rejected", got.FailureCode)
			require.Equal(t, "it's \"refused\"; {x,y}", got.FailureText)
			require.Equal(t, "wamid.6", got.ProviderMessageID)
			require.True(t, got.UpdatedAt.Equal(now.Add(2*time.Second)), "updated at %v", got.UpdatedAt)

			// Outside a transaction a missing message is reported.
			gone := message(7)
			require.True(t, failure.Is(db.Repos().UpdateMessage(ctx, gone), failure.KindNotFound))
		})
	}
}
