package memory_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/memory"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

func TestAccountsContract(t *testing.T) {
	t.Parallel()
	storetest.Accounts(t, func(*testing.T) accounts.Store {
		return memory.New(memory.Options{}).AccountStore()
	})
}

func TestIdempotencyContract(t *testing.T) {
	t.Parallel()
	storetest.Idempotency(t, func(*testing.T) storetest.IdempotencyStores {
		db := memory.New(memory.Options{})
		transact := func(ctx context.Context, fn func(ctx context.Context, r idempotency.Recorder) error) error {
			return db.Transact(ctx, func(ctx context.Context, r *memory.Repos) error { return fn(ctx, r) })
		}
		return storetest.IdempotencyStores{Keys: db, Transact: transact, Committer: db, Prune: db.PruneIdempotencyKeys}
	})
}

func TestEmailContract(t *testing.T) {
	t.Parallel()
	storetest.Email(t, func(*testing.T) storetest.EmailStores {
		db := memory.New(memory.Options{})
		return storetest.EmailStores{
			Email:     db.EmailStore(),
			Committer: db,
			Accounts:  db.AccountStore(),
		}
	})
}

func TestWebhooksContract(t *testing.T) {
	t.Parallel()
	storetest.Webhooks(t, func(*testing.T) storetest.WebhookFixture {
		db := memory.New(memory.Options{})
		return storetest.WebhookFixture{
			Store:      db.WebhookStore(),
			NewAccount: func(t *testing.T) string { return newAccount(t, db) },
		}
	})
}

func TestMessagingContract(t *testing.T) {
	t.Parallel()
	storetest.Messaging(t, func(*testing.T) storetest.MessagingFixture {
		db := memory.New(memory.Options{})
		return storetest.MessagingFixture{
			Store:     db.MessagingStore(),
			Accounts:  db.AccountStore(),
			Committer: db,
			Pages:     db.Repos(),
		}
	})
}

func TestChannelsContract(t *testing.T) {
	t.Parallel()
	storetest.Channels(t, func(*testing.T) storetest.ChannelsFixture {
		db := memory.New(memory.Options{})
		return storetest.ChannelsFixture{
			Store:        db.ChannelStore(),
			Accounts:     db.AccountStore(),
			PruneUpdates: db.Repos().PruneUpdates,
		}
	})
}

func TestCommitterContract(t *testing.T) {
	t.Parallel()
	storetest.Committer(t, func(*testing.T) storetest.CommitterFixture {
		db, q := queueFed()
		return storetest.CommitterFixture{
			Committer: db,
			Accounts:  db.AccountStore(),
			Channels:  db.ChannelStore(),
			Messaging: db.MessagingStore(),
			Webhooks:  db.WebhookStore(),
			Email:     db.EmailStore(),
			Keys:      db,
			Jobs:      q,
		}
	})
}

// queueFed is a memory Queue that db's commits feed, as the runner's
// queue is fed by the store's: the committer contract claims its jobs.
func queueFed() (*memory.DB, *memory.Queue) {
	q := memory.NewQueue(nil)
	db := memory.New(memory.Options{OnEnqueue: func(js []jobs.Job) {
		ps := make([]jobs.EnqueueParams, len(js))
		for i, j := range js {
			ps[i] = jobs.EnqueueParams{Kind: j.Kind, Payload: j.Payload, RunAt: j.RunAt, UniqueKey: j.UniqueKey, PaceKey: j.PaceKey,
				AccountID: j.AccountID, EndpointKey: j.EndpointKey, MaxAttempts: j.MaxAttempts}
		}
		if err := q.Enqueue(context.Background(), ps); err != nil {
			panic(err) // a batch's jobs were valid when it committed
		}
	}})
	return db, q
}

// newAccount stores a new account and returns its id.
func newAccount(t *testing.T, db *memory.DB) string {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	a := account.Account{ID: ident.New(ident.Account), Name: "memory", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.Repos().InsertAccount(context.Background(), a))
	return a.ID
}

// reactFunc is a writes.Reactions double.
type reactFunc func(ctx context.Context, b *writes.Batch) error

func (f reactFunc) React(ctx context.Context, b *writes.Batch) error { return f(ctx, b) }

// Jobs reach the hook once their commit is done, never from a rollback;
// a unique key is enqueued once.
func TestEnqueuedJobsReachTheHookAfterTheirCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	var handed []jobs.Job
	db := memory.New(memory.Options{OnEnqueue: func(js []jobs.Job) {
		mu.Lock()
		defer mu.Unlock()
		handed = append(handed, js...)
	}})
	boom := errors.New("boom")
	err := db.Transact(ctx, func(ctx context.Context, r *memory.Repos) error {
		_, err := r.EnqueueJob(ctx, jobs.EnqueueParams{Kind: "rolled.back"})
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Empty(t, handed)
	require.Empty(t, db.Jobs())

	require.NoError(t, db.Commit(ctx, writes.Batch{Jobs: []jobs.EnqueueParams{{Kind: "a"}, {Kind: "b", Payload: []byte("x")}}}))
	first, err := db.Repos().EnqueueJob(ctx, jobs.EnqueueParams{Kind: "c", UniqueKey: "once"})
	require.NoError(t, err)
	again, err := db.Repos().EnqueueJob(ctx, jobs.EnqueueParams{Kind: "c", UniqueKey: "once"})
	require.NoError(t, err)
	require.Equal(t, first, again, "a unique key is held by its job")
	require.Len(t, handed, 3)
	require.Equal(t, db.Jobs(), handed)
	require.Equal(t, []string{"a", "b", "c"}, []string{handed[0].Kind, handed[1].Kind, handed[2].Kind})
	require.Equal(t, []byte("x"), handed[1].Payload)
	require.Equal(t, first, handed[2].ID)
}

// A reaction reads through the repositories while a transaction writes its
// batch: it sees the committed tables and does not wait for the writer.
func TestReactionsReadBesideTheirTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		db  *memory.DB
		acc string
	)
	db = memory.New(memory.Options{Reactions: reactFunc(func(ctx context.Context, b *writes.Batch) error {
		recs, err := db.WebhookStore().Repos().WebhookEndpoints(ctx, []string{acc})
		if err != nil {
			return err
		}
		for _, e := range b.Events {
			b.Jobs = append(b.Jobs, jobs.EnqueueParams{Kind: "reacted", Payload: []byte(e.ID), AccountID: e.AccountID})
		}
		require.Empty(t, recs)
		return nil
	})})
	acc = newAccount(t, db)
	e := event.Event{ID: ident.New(ident.Event), AccountID: acc, Type: event.MessageSent, Payload: []byte(`{}`), CreatedAt: time.Now()}
	require.NoError(t, db.Transact(ctx, func(ctx context.Context, r *memory.Repos) error {
		return r.WriteBatch(ctx, writes.Batch{Events: []event.Event{e}})
	}))
	js := db.Jobs()
	require.Len(t, js, 1, "the reaction's job was written with the batch")
	require.Equal(t, []byte(e.ID), js[0].Payload)
}

// What a read returns is the caller's: changing it changes nothing stored.
func TestReadsReturnCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := memory.New(memory.Options{})
	acc := newAccount(t, db)
	r := db.Repos()
	now := time.Now()
	c := account.Credential{ID: ident.New(ident.Credential), AccountID: acc, KeyHash: []byte{1, 2}, SecretHash: []byte{3}, CreatedAt: now}
	require.NoError(t, r.InsertCredential(ctx, c))
	c.KeyHash[0] = 9 // the caller's slice, after the insert
	got, err := r.CredentialByKeyHash(ctx, []byte{1, 2}, nil)
	require.NoError(t, err)
	got.KeyHash[1] = 9
	again, err := r.CredentialByKeyHash(ctx, []byte{1, 2}, nil)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 2}, again.KeyHash)

	th := domain.Thread{ID: ident.New(ident.Thread), AccountID: acc, Service: account.WhatsApp, Type: domain.Group, AgentNumber: "+14155550100", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, r.InsertThread(ctx, th, []domain.Participant{{Address: "+14155550100", IsAgent: true}, {Address: "+14155550111"}}))
	ps, err := r.Participants(ctx, th.ID)
	require.NoError(t, err)
	ps[0].Address = "changed"
	ps, err = r.Participants(ctx, th.ID)
	require.NoError(t, err)
	require.Equal(t, "+14155550100", ps[0].Address)
}

// A transaction's repositories end with it, as a database/sql transaction
// does.
func TestATransactionsReposEndWithIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := memory.New(memory.Options{})
	var kept *memory.Repos
	require.NoError(t, db.Transact(ctx, func(_ context.Context, r *memory.Repos) error { kept = r; return nil }))
	_, err := kept.CountAccounts(ctx)
	require.ErrorIs(t, err, sql.ErrTxDone)
	require.ErrorIs(t, kept.InsertAccount(ctx, account.Account{ID: ident.New(ident.Account)}), sql.ErrTxDone)

	ended, cancel := context.WithCancel(ctx)
	err = db.Transact(ended, func(ctx context.Context, r *memory.Repos) error {
		require.NoError(t, r.InsertAccount(ctx, account.Account{ID: ident.New(ident.Account)}))
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled, "a transaction whose context ended rolls back")
	n, err := db.Repos().CountAccounts(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

// The readers that the GraphQL API and live subscriptions use run over
// the fake too: a received message reaches a live subscriber on the
// commit's wake-up (the poll is too slow to), and the batched reads list
// it.
func TestLiveFeedAndPagedReads(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := memory.New(memory.Options{})
	acc := newAccount(t, db)
	number := account.Number{ID: ident.New(ident.Number), AccountID: acc, Number: "+14155550100", Service: account.WhatsApp,
		Provider: account.ProviderSandbox, SealedSettings: []byte{1}, Enabled: true, CreatedAt: time.Now()}
	require.NoError(t, db.Repos().InsertNumber(ctx, number))
	svc := messaging.NewService(messaging.Deps{Store: db.MessagingStore(), Committer: db})
	live := messaging.NewLive(db, db.Repos(), messaging.LiveOptions{Poll: time.Minute})
	go live.Run(ctx)
	updates, stop, err := live.Subscribe(ctx, acc)
	require.NoError(t, err)
	defer stop()

	m, err := svc.Receive(ctx, messaging.InboundInput{AccountID: acc, Service: "whatsapp", From: "+14155550111", To: number.Number,
		Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.NoError(t, err)
	select {
	case u := <-updates:
		require.Equal(t, m, u.Message)
	case <-time.After(10 * time.Second):
		t.Fatal("no live update")
	}

	reader := messaging.NewReader(db.Repos())
	page, more, err := reader.ThreadPage(ctx, messaging.ThreadPageQuery{AccountID: acc, Limit: 1})
	require.NoError(t, err)
	require.False(t, more)
	require.Len(t, page, 1)
	require.Equal(t, m.ThreadID, page[0].Thread.ID)
	require.True(t, page[0].Cursor.Activity.Equal(m.CreatedAt), "the thread's activity is its last message")
	msgs, err := reader.MessagePages(ctx, acc, []string{m.ThreadID}, nil, 10)
	require.NoError(t, err)
	require.Equal(t, []domain.Message{m}, msgs[m.ThreadID].Messages)
	parts, err := reader.Participants(ctx, acc, []string{m.ThreadID})
	require.NoError(t, err)
	require.Equal(t, []domain.Participant{{Address: number.Number, IsAgent: true}, {Address: "+14155550111"}}, parts[m.ThreadID])
	none, err := reader.MessagePages(ctx, newAccount(t, db), []string{m.ThreadID}, nil, 10)
	require.NoError(t, err)
	require.Empty(t, none, "another account's thread")
}

func TestSessionsContract(t *testing.T) {
	t.Parallel()
	storetest.Sessions(t, func(*testing.T) storetest.SessionsFixture {
		db := memory.New(memory.Options{})
		return storetest.SessionsFixture{Store: db.SessionStore(), Accounts: db.AccountStore()}
	})
}
