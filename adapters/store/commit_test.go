package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// The committer contract: both committers (inline and batched) on both
// dialects write a batch all or nothing, and what they wrote reads back.
func TestCommitterContract(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		for name, committer := range map[string]func(db *store.DB) writes.Committer{
			"inline":  func(db *store.DB) writes.Committer { return db.Inline() },
			"batched": func(db *store.DB) writes.Committer { return db },
		} {
			t.Run(string(dialect)+"/"+name, func(t *testing.T) {
				t.Parallel()
				committerContract(t, func(t *testing.T) (*store.DB, writes.Committer) {
					db := openWithAccount(t, dialect)
					return db, committer(db)
				})
			})
		}
	}
}

// commitFixture is a thread of acc_rows to write into.
type commitFixture struct {
	db     *store.DB
	c      writes.Committer
	thread messaging.Thread
	now    time.Time
}

func newCommitFixture(t *testing.T, open func(t *testing.T) (*store.DB, writes.Committer)) commitFixture {
	t.Helper()
	db, c := open(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	th := messaging.Thread{ID: "thr_commit", AccountID: "acc_rows", Service: account.WhatsApp, Type: messaging.Individual,
		AgentNumber: "+15550001000", Contact: "+15550002000", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.MessagingStore().InsertThread(context.Background(), th, nil))
	return commitFixture{db: db, c: c, thread: th, now: now}
}

// send is what a send decides: the message, the thread's activity, the
// event, a delivery of it, the job, and an answer.
func (f commitFixture) send(id string) writes.Batch {
	at := f.now.Add(time.Second)
	m := messaging.Message{ID: id, AccountID: "acc_rows", ThreadID: f.thread.ID, Service: account.WhatsApp, Direction: messaging.OutboundAPI,
		From: f.thread.AgentNumber, To: f.thread.Contact, Content: messaging.Content{Kind: messaging.KindText, Text: "it's \"quoted\" ? $1"},
		Status: messaging.Queued, CreatedAt: at, UpdatedAt: at}
	e := event.Event{ID: "evt_" + id, AccountID: "acc_rows", Type: event.MessageSent, ThreadID: f.thread.ID, Payload: []byte(`{"id":"` + id + `"}`), CreatedAt: at}
	d := webhook.Delivery{ID: "whk_" + id, AccountID: "acc_rows", EventID: e.ID, EventType: e.Type, ThreadID: f.thread.ID,
		Status: webhook.Pending, NextAttemptAt: at, CreatedAt: at, UpdatedAt: at}
	return writes.Batch{
		Messages:       []messaging.Message{m},
		ThreadActivity: []writes.ThreadActivity{{ThreadID: f.thread.ID, At: at}},
		Events:         []event.Event{e},
		Deliveries:     []webhook.Delivery{d},
		Jobs:           []jobs.EnqueueParams{{Kind: "commit.test", Payload: []byte(id), AccountID: "acc_rows", PaceKey: "p", EndpointKey: "e"}},
		Answers:        []writes.Answer{{AccountID: "acc_rows", Key: "key-" + id, Response: idempotency.Response{Status: 200, Body: []byte(id)}}},
	}
}

func (f commitFixture) jobs(t *testing.T) int {
	t.Helper()
	n, err := f.db.Bun().NewSelect().Table("jobs").Where("kind = 'commit.test'").Count(context.Background())
	require.NoError(t, err)
	return n
}

func committerContract(t *testing.T, open func(t *testing.T) (*store.DB, writes.Committer)) {
	ctx := context.Background()

	t.Run("WritesEverythingItHolds", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		b := f.send("msg_all")
		_, err := f.db.ReserveKey(ctx, "acc_rows", "key-msg_all", "fp", f.now, time.Minute)
		require.NoError(t, err)
		require.NoError(t, f.c.Commit(ctx, b))
		r := f.db.MessagingStore()
		m, err := r.Message(ctx, "acc_rows", "msg_all")
		require.NoError(t, err)
		require.Equal(t, b.Messages[0], m, "the text reads back as written, placeholders and quotes included")
		th, err := r.Thread(ctx, "acc_rows", f.thread.ID)
		require.NoError(t, err)
		require.True(t, th.UpdatedAt.Equal(b.ThreadActivity[0].At), "the thread's activity moved")
		events, err := f.db.WebhookStore().EventsAfter(ctx, "acc_rows", "", 10)
		require.NoError(t, err)
		require.Len(t, events, 1)
		require.Equal(t, b.Events[0].ID, events[0].ID)
		d, err := f.db.WebhookStore().WebhookDelivery(ctx, "acc_rows", "whk_msg_all")
		require.NoError(t, err)
		require.Equal(t, webhook.Pending, d.Status)
		require.Equal(t, 1, f.jobs(t))
		res, err := f.db.ReserveKey(ctx, "acc_rows", "key-msg_all", "fp", f.now.Add(time.Second), time.Minute)
		require.NoError(t, err)
		require.Equal(t, idempotency.Replay, res.Outcome)
		require.Equal(t, []byte("msg_all"), res.Response.Body)
	})

	t.Run("ATakenAnswerWritesNothing", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		first := f.send("msg_first")
		require.NoError(t, f.c.Commit(ctx, first))
		again := f.send("msg_again")
		again.Answers = first.Answers
		require.ErrorIs(t, f.c.Commit(ctx, again), idempotency.ErrAnsweredElsewhere)
		_, err := f.db.MessagingStore().Message(ctx, "acc_rows", "msg_again")
		require.True(t, failure.Is(err, failure.KindNotFound), "the refused batch's message is not there: %v", err)
		require.Equal(t, 1, f.jobs(t), "nor its job")
	})

	t.Run("ATakenIDIsAConflict", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		require.NoError(t, f.c.Commit(ctx, f.send("msg_dup")))
		b := f.send("msg_dup")
		b.Answers = nil
		err := f.c.Commit(ctx, b)
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
	})

	t.Run("StatusMovesKeepTheProviderIDWhenNoneIsGiven", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		require.NoError(t, f.c.Commit(ctx, f.send("msg_status")))
		at := f.now.Add(2 * time.Second)
		require.NoError(t, f.c.Commit(ctx, writes.Batch{Statuses: []writes.MessageStatus{
			{MessageID: "msg_status", Status: messaging.Sent, ProviderMessageID: "wamid.1", UpdatedAt: at},
		}}))
		require.NoError(t, f.c.Commit(ctx, writes.Batch{Statuses: []writes.MessageStatus{
			{MessageID: "msg_status", Status: messaging.Failed, FailureCode: "x", FailureText: "why", UpdatedAt: at.Add(time.Second)},
		}}))
		m, err := f.db.MessagingStore().Message(ctx, "acc_rows", "msg_status")
		require.NoError(t, err)
		require.Equal(t, messaging.Failed, m.Status)
		require.Equal(t, "wamid.1", m.ProviderMessageID)
		require.Equal(t, "why", m.FailureText)
	})

	t.Run("EmailOutcomesReachQueuedEmailsOnly", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		e := email.Email{ID: "eml_commit", AccountID: "acc_rows", From: "a@b.example", To: "c@d.example", Subject: "s", Body: "b",
			MessageID: "<eml_commit@b.example>", Status: email.Queued, CreatedAt: f.now, UpdatedAt: f.now}
		require.NoError(t, f.c.Commit(ctx, writes.Batch{Emails: []email.Email{e}}))
		sent := e
		at := f.now.Add(time.Second)
		sent.Status, sent.Reply, sent.SentAt, sent.Attempts, sent.UpdatedAt = email.Sent, "250 ok", &at, 1, at
		require.NoError(t, f.c.Commit(ctx, writes.Batch{EmailOutcomes: []email.Email{sent}}))
		failed := e
		failed.Status, failed.FailureCode, failed.UpdatedAt = email.Failed, "late", at.Add(time.Second)
		require.NoError(t, f.c.Commit(ctx, writes.Batch{EmailOutcomes: []email.Email{failed}}))
		got, err := f.db.EmailStore().Email(ctx, "acc_rows", "eml_commit")
		require.NoError(t, err)
		require.Equal(t, email.Sent, got.Status, "an email no longer queued is left as it is")
		require.Equal(t, "250 ok", got.Reply)
		require.True(t, got.SentAt.Equal(at))
	})

	t.Run("ConcurrentCommitsAllLand", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		const n = 40
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = f.c.Commit(ctx, f.send(fmt.Sprint("msg_c", i))) })
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "batch %d", i)
		}
		require.Equal(t, n, f.jobs(t))
		events, err := f.db.WebhookStore().EventsAfter(ctx, "acc_rows", "", 100)
		require.NoError(t, err)
		require.Len(t, events, n)
	})

	t.Run("AnEndedCallerWritesNothing", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		ended, cancel := context.WithCancel(ctx)
		cancel()
		require.Error(t, f.c.Commit(ended, f.send("msg_ended")))
		require.Zero(t, f.jobs(t))
	})

	t.Run("TheEmptyBatchWritesNothing", func(t *testing.T) {
		t.Parallel()
		f := newCommitFixture(t, open)
		require.NoError(t, f.c.Commit(ctx, writes.Batch{}))
	})
}
