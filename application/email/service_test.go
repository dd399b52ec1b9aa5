package email_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// fakeSender is a Sender double with a function field.
type fakeSender struct {
	send func(ctx context.Context, m appemail.Outgoing) (appemail.Receipt, error)
}

func (f *fakeSender) Send(ctx context.Context, m appemail.Outgoing) (appemail.Receipt, error) {
	return f.send(ctx, m)
}

type testBundle struct {
	db      *store.DB
	svc     *appemail.Service
	sender  *fakeSender
	account string
	now     time.Time
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, _, err := acc.CreateAccount(context.Background(), "Acme")
	require.NoError(t, err)
	b := &testBundle{db: db, sender: &fakeSender{}, account: a.ID, now: time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)}
	b.svc = appemail.NewService(appemail.Deps{
		Committer: db, Store: db.EmailStore(),
		Sender: b.sender, ServiceDomain: "Mail.Example.com", Now: func() time.Time { return b.now },
	})
	_, err = b.svc.CreateAddress(context.Background(), a.ID, "agent", "mail.example.com")
	require.NoError(t, err)
	return b
}

// queue sends an email and returns it with the job that delivers it.
func (b *testBundle) queue(t *testing.T) (email.Email, jobs.Job) {
	t.Helper()
	e, err := b.svc.Send(context.Background(), appemail.SendInput{
		AccountID: b.account, SenderAddress: "agent@mail.example.com", RecipientAddress: "user@example.org", Subject: "Hi", Body: "Hello",
	})
	require.NoError(t, err)
	payload, _ := json.Marshal(map[string]string{"email_id": e.ID})
	return e, jobs.Job{Kind: appemail.DeliverKind, Payload: payload, Attempt: 1, MaxAttempts: 3}
}

func (b *testBundle) read(t *testing.T, id string) email.Email {
	t.Helper()
	e, err := b.svc.Email(context.Background(), b.account, id)
	require.NoError(t, err)
	return e
}

// events are the account's events of type typ, oldest first, as
// payloads.
func (b *testBundle) events(t *testing.T, typ event.Type) []appemail.OutcomePayload {
	t.Helper()
	all, err := b.db.WebhookStore().EventsAfter(context.Background(), b.account, "", 100)
	require.NoError(t, err)
	var out []appemail.OutcomePayload
	for _, e := range all {
		if e.Type == typ {
			var p appemail.OutcomePayload
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			out = append(out, p)
		}
	}
	return out
}

// A delivery's outcome is an event committed with it: email.sent when
// the relay accepts the email, email.failed when it refuses it for good;
// a retry is none.
func TestDeliveryOutcomesAreEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sent, job := b.queue(t)
	b.sender.send = func(context.Context, appemail.Outgoing) (appemail.Receipt, error) {
		return appemail.Receipt{}, &appemail.SMTPError{Code: 451, Reply: "451 4.7.1 try later"}
	}
	require.Error(t, b.svc.Work(context.Background(), job))
	require.Empty(t, b.events(t, event.EmailSent))
	require.Empty(t, b.events(t, event.EmailFailed), "a retry is no outcome")

	b.sender.send = func(context.Context, appemail.Outgoing) (appemail.Receipt, error) {
		return appemail.Receipt{Reply: "250 2.0.0 Ok: queued as 4BXk"}, nil
	}
	require.NoError(t, b.svc.Work(context.Background(), job))
	got := b.events(t, event.EmailSent)
	require.Len(t, got, 1)
	require.Equal(t, sent.ID, got[0].EmailID)
	require.Equal(t, "sent", got[0].Status)
	require.Equal(t, sent.ThreadID, got[0].ThreadID)
	require.Equal(t, sent.MessageID, got[0].MessageID)
	require.Equal(t, "user@example.org", got[0].RecipientAddress)
	require.Equal(t, []string{"user@example.org"}, got[0].To)
	require.Equal(t, "250 2.0.0 Ok: queued as 4BXk", got[0].SMTPReply)
	require.NotEmpty(t, got[0].DateSent)

	refused, job := b.queue(t)
	b.sender.send = func(context.Context, appemail.Outgoing) (appemail.Receipt, error) {
		return appemail.Receipt{}, &appemail.SMTPError{Code: 550, Reply: "550 5.1.1 User unknown"}
	}
	require.True(t, jobs.IsPermanent(b.svc.Work(context.Background(), job)))
	failed := b.events(t, event.EmailFailed)
	require.Len(t, failed, 1)
	require.Equal(t, refused.ID, failed[0].EmailID)
	require.Equal(t, "failed", failed[0].Status)
	require.Equal(t, "rejected", failed[0].ErrorCode)
	require.Equal(t, "550 5.1.1 User unknown", failed[0].SMTPReply)
	require.Len(t, b.events(t, event.EmailSent), 1)
}

func TestTransientFailuresRetryThenGiveUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, job := b.queue(t)
	down := errors.New("dial tcp 127.0.0.1:25: connection refused")
	b.sender.send = func(context.Context, appemail.Outgoing) (appemail.Receipt, error) { return appemail.Receipt{}, down }

	err := b.svc.Work(context.Background(), job)
	require.ErrorIs(t, err, down)
	require.False(t, jobs.IsPermanent(err), "a connection failure is retried")
	got := b.read(t, e.ID)
	require.Equal(t, email.Queued, got.Status)
	require.Equal(t, down.Error(), got.Reply, "the last failure is visible while retrying")
	require.Equal(t, 1, got.Attempts)

	b.sender.send = func(context.Context, appemail.Outgoing) (appemail.Receipt, error) {
		return appemail.Receipt{}, &appemail.SMTPError{Code: 421, Reply: "421 4.3.2 Service shutting down"}
	}
	job.Attempt = 3
	err = b.svc.Work(context.Background(), job)
	require.True(t, jobs.IsPermanent(err), "the last attempt ends the job")
	got = b.read(t, e.ID)
	require.Equal(t, email.Failed, got.Status)
	require.Equal(t, "retries_exhausted", got.FailureCode)
	require.Contains(t, got.Reply, "421 4.3.2")
}

func TestSentEmailsAreNotSentAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, job := b.queue(t)
	calls := 0
	b.sender.send = func(_ context.Context, m appemail.Outgoing) (appemail.Receipt, error) {
		calls++
		require.Equal(t, e.MessageID, m.MessageID)
		require.Equal(t, "<"+e.ID+"@mail.example.com>", m.MessageID)
		require.Equal(t, "Hello", m.Text)
		require.Empty(t, m.HTML)
		return appemail.Receipt{Reply: "250 ok"}, nil
	}
	require.NoError(t, b.svc.Work(context.Background(), job))
	require.NoError(t, b.svc.Work(context.Background(), job), "a job that runs again after the send does nothing")
	require.Equal(t, 1, calls)
	got := b.read(t, e.ID)
	require.Equal(t, email.Sent, got.Status)
	require.Equal(t, b.now, *got.SentAt)
}

func TestUnsendableEmailsFailAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e, job := b.queue(t)
	b.sender.send = func(context.Context, appemail.Outgoing) (appemail.Receipt, error) {
		return appemail.Receipt{}, errors.Join(appemail.ErrUnsendable, errors.New("bad address"))
	}
	err := b.svc.Work(context.Background(), job)
	require.True(t, jobs.IsPermanent(err))
	require.Equal(t, "unsendable", b.read(t, e.ID).FailureCode)
}

func TestCreateAddressOnTheServiceDomainOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.CreateAddress(context.Background(), b.account, "other", "example.net")
	require.True(t, failure.Is(err, failure.KindForbidden), "got %v", err)
	_, err = b.svc.CreateAddress(context.Background(), b.account, "AGENT", "MAIL.example.com")
	require.True(t, failure.Is(err, failure.KindConflict), "case-folded duplicate: %v", err)
	_, err = b.svc.Email(context.Background(), b.account, "msg_notanemail")
	require.True(t, failure.Is(err, failure.KindNotFound))
}

// countingCommitter counts the batches committed through it.
type countingCommitter struct {
	writes.Committer
	batches int
}

func (c *countingCommitter) Commit(ctx context.Context, b writes.Batch) error {
	c.batches++
	return c.Committer.Commit(ctx, b)
}

// A send is one commit: the email, its job (and its answer, with a key).
func TestSendIsOneCommit(t *testing.T) {
	t.Parallel()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	ctx := context.Background()
	a, _, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	committer := &countingCommitter{Committer: db}
	svc := appemail.NewService(appemail.Deps{Store: db.EmailStore(), Committer: committer,
		Sender: &fakeSender{}, ServiceDomain: "mail.example.com"})
	in := appemail.SendInput{AccountID: a.ID, SenderAddress: "later@mail.example.com", RecipientAddress: "user@example.org", Subject: "Hi", Body: "Hello"}

	_, err = svc.Send(ctx, in)
	require.True(t, failure.Is(err, failure.KindForbidden), "no such address yet: %v", err)
	_, err = svc.CreateAddress(ctx, a.ID, "later", "mail.example.com")
	require.NoError(t, err)
	e, err := svc.Send(ctx, in)
	require.NoError(t, err, "an address created after a refused send is found: misses are not cached")
	require.Equal(t, 1, committer.batches)
	_, err = svc.Email(ctx, a.ID, e.ID)
	require.NoError(t, err)
}
