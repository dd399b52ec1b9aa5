package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// The committer contract: both committers (inline and batched) on both
// dialects write a batch all or nothing, and what they wrote reads back.
func TestCommitterContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		for name, committer := range map[string]func(db *store.DB) writes.Committer{
			"inline":  inlineCommitter,
			"batched": batchedCommitter,
		} {
			t.Run(string(dialect)+"/"+name, func(t *testing.T) {
				t.Parallel()
				storetest.Committer(t, func(t *testing.T) storetest.CommitterFixture {
					db := dbtest.Open(t, dialect)
					return storetest.CommitterFixture{
						Committer: committer(db),
						Accounts:  db.AccountStore(),
						Channels:  db.ChannelStore(),
						Cron:      db.CronStore(),
						Messaging: db.MessagingStore(),
						Webhooks:  db.WebhookStore(),
						Email:     db.EmailStore(),
						Keys:      db.IdempotencyKeys(),
						Erasure:   db.ErasureStore(),
						Jobs:      db.JobQueue(),
					}
				})
			})
		}
	}
}

// boundQueries keeps the statements that hold marker, with their
// parameters.
type boundQueries struct {
	marker string
	mu     sync.Mutex
	seen   []*bun.QueryEvent
}

func (c *boundQueries) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (c *boundQueries) AfterQuery(_ context.Context, ev *bun.QueryEvent) {
	if strings.Contains(ev.Query, c.marker) {
		c.mu.Lock()
		c.seen = append(c.seen, ev)
		c.mu.Unlock()
	}
}

// On Postgres a batch's values are parameters of fixed SQL text, whether
// the batch is committed (one query for all its statements) or written by
// a decision (a statement at a time): no value is written into the text.
func TestPostgresBatchesBindTheirValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t, store.Postgres)
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, db.AccountStore().InsertAccount(ctx, account.Account{ID: "acc_bound", Name: "bound", CreatedAt: now, UpdatedAt: now}))
	th := messaging.Thread{ID: "thr_bound", AccountID: "acc_bound", Service: account.WhatsApp, Type: messaging.Individual,
		AgentNumber: "+15550001000", Contact: "+15550002000", CreatedAt: now, UpdatedAt: now}
	queries := &boundQueries{marker: `INSERT INTO "messages"`}
	db.AddQueryHook(queries)
	message := func(id, text string) messaging.Message {
		return messaging.Message{ID: id, AccountID: th.AccountID, ThreadID: th.ID, Service: th.Service, Direction: messaging.OutboundAPI,
			From: th.AgentNumber, To: th.Contact, Content: messaging.Content{Kind: messaging.KindText, Text: text},
			Status: messaging.Queued, CreatedAt: now, UpdatedAt: now}
	}
	committed := message("msg_committed", "it's committed $1 ?")
	require.NoError(t, db.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: th}}, Messages: []messaging.Message{committed}}))
	decided := message("msg_decided", "it's decided $1 ?")
	require.NoError(t, db.MessagingStore().Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
		return writes.Batch{Messages: []messaging.Message{decided}}, nil
	}))

	queries.mu.Lock()
	defer queries.mu.Unlock()
	require.Len(t, queries.seen, 2)
	for i, m := range []messaging.Message{committed, decided} {
		ev := queries.seen[i]
		require.NotContains(t, ev.Query, m.Content.Text, "the text is not in the query")
		require.Contains(t, ev.QueryArgs, m.Content.Text, "it is one of its parameters")
		got, err := db.MessagingStore().Message(ctx, th.AccountID, m.ID)
		require.NoError(t, err)
		require.Equal(t, m.Content.Text, got.Content.Text)
	}
}
