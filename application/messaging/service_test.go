package messaging_test

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
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// fakeProvider is a provider double with a function field.
type fakeProvider struct {
	send func(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error)
}

func (f fakeProvider) Send(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	return f.send(ctx, m)
}

// Capabilities: text only, no groups, so the capability checks can be seen.
func (f fakeProvider) Capabilities() messaging.Capabilities {
	return messaging.Capabilities{Kinds: []domain.Kind{domain.KindText}}
}

type testBundle struct {
	svc      *messaging.Service
	accounts *accounts.Service
	account  account.Account
	number   account.Number
	provider *fakeProvider
	db       *store.DB
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	ctx := context.Background()
	a, _, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	n, err := acc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	p := &fakeProvider{}
	svc := messaging.NewService(messaging.Deps{
		Committer: db, Store: db.MessagingStore(),
		Providers: messaging.ProviderSet{account.ProviderSandbox: p},
		Opener:    acc,
	})
	return &testBundle{svc: svc, accounts: acc, account: a, number: n, provider: p, db: db}
}

// queued sends one text message after the user wrote first, and returns it
// with the delivery job a runner would hand to Work.
func (b *testBundle) queued(t *testing.T, attempt int) (domain.Message, jobs.Job) {
	t.Helper()
	ctx := context.Background()
	_, err := b.svc.Receive(ctx, messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: "+14155550111", To: b.number.Number,
		Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.NoError(t, err)
	m, err := b.svc.SendIndividual(ctx, messaging.SendInput{AccountID: b.account.ID, Service: "whatsapp", From: b.number.Number, To: "+14155550111",
		Content: domain.Content{Kind: domain.KindText, Text: "hello"}})
	require.NoError(t, err)
	payload, _ := json.Marshal(map[string]string{"message_id": m.ID})
	return m, jobs.Job{Kind: messaging.DeliverKind, Payload: payload, Attempt: attempt, MaxAttempts: messaging.DeliveryAttempts}
}

func (b *testBundle) status(t *testing.T, id string) domain.Message {
	t.Helper()
	d, err := b.svc.Message(context.Background(), b.account.ID, id)
	require.NoError(t, err)
	return d.Message
}

func TestDeliveryOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("transient errors retry and leave the message queued", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.provider.send = func(context.Context, messaging.Outbound) (messaging.Receipt, error) {
			return messaging.Receipt{}, errors.New("connection reset")
		}
		m, job := b.queued(t, 1)
		err := b.svc.Work(ctx, job)
		require.Error(t, err)
		require.False(t, jobs.IsPermanent(err))
		require.Equal(t, domain.Queued, b.status(t, m.ID).Status)
	})

	t.Run("the last attempt marks the message failed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.provider.send = func(context.Context, messaging.Outbound) (messaging.Receipt, error) {
			return messaging.Receipt{}, errors.New("connection reset")
		}
		m, job := b.queued(t, messaging.DeliveryAttempts)
		require.True(t, jobs.IsPermanent(b.svc.Work(ctx, job)))
		got := b.status(t, m.ID)
		require.Equal(t, domain.Failed, got.Status)
		require.Equal(t, "delivery_failed", got.FailureCode)
	})

	t.Run("a provider 429 waits for its retry-after", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.provider.send = func(context.Context, messaging.Outbound) (messaging.Receipt, error) {
			return messaging.Receipt{}, &messaging.ProviderError{Code: "rate_limited", Message: "slow down", RetryAfter: 7 * time.Second}
		}
		_, job := b.queued(t, 1)
		d, ok := jobs.RetryDelay(b.svc.Work(ctx, job))
		require.True(t, ok)
		require.Equal(t, 7*time.Second, d)
	})

	t.Run("success records the provider id, and work is idempotent", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		calls := 0
		b.provider.send = func(_ context.Context, out messaging.Outbound) (messaging.Receipt, error) {
			calls++
			require.Equal(t, "+14155550111", out.To)
			return messaging.Receipt{ProviderMessageID: "wamid.1", Status: domain.Sent}, nil
		}
		m, job := b.queued(t, 1)
		require.NoError(t, b.svc.Work(ctx, job))
		require.NoError(t, b.svc.Work(ctx, job), "a repeated job finds the message no longer queued")
		require.Equal(t, 1, calls)
		got := b.status(t, m.ID)
		require.Equal(t, domain.Sent, got.Status)
		require.Equal(t, "wamid.1", got.ProviderMessageID)

		// Provider reports move the status forward only.
		require.NoError(t, b.svc.ApplyStatus(ctx, account.WhatsApp, "wamid.1", domain.Read, "", ""))
		require.NoError(t, b.svc.ApplyStatus(ctx, account.WhatsApp, "wamid.1", domain.Delivered, "", ""))
		require.Equal(t, domain.Read, b.status(t, m.ID).Status)
		require.NoError(t, b.svc.ApplyStatus(ctx, account.WhatsApp, "wamid.unknown", domain.Read, "", ""), "unknown ids are ignored")

		// The timeline is the message's steps as the event log has them,
		// the refused backward move left out.
		got = b.status(t, m.ID)
		steps, err := messaging.NewReader(b.db.MessagingStore()).Timelines(ctx, b.account.ID, []domain.Message{got})
		require.NoError(t, err)
		var statuses []domain.Status
		for _, s := range steps[m.ID] {
			statuses = append(statuses, s.Status)
		}
		require.Equal(t, []domain.Status{domain.Queued, domain.Sent, domain.Read}, statuses)
		none, err := messaging.NewReader(b.db.MessagingStore()).Timelines(ctx, "acc_other", []domain.Message{got})
		require.NoError(t, err)
		require.Empty(t, none, "another account's message has no timeline")
	})

	t.Run("a number disabled before delivery fails the message", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.provider.send = func(context.Context, messaging.Outbound) (messaging.Receipt, error) {
			t.Error("a disabled number must not send")
			return messaging.Receipt{}, nil
		}
		m, job := b.queued(t, 1)
		_, err := b.accounts.SetNumberEnabled(ctx, b.account.ID, b.number.ID, false)
		require.NoError(t, err)
		require.True(t, jobs.IsPermanent(b.svc.Work(ctx, job)))
		got := b.status(t, m.ID)
		require.Equal(t, domain.Failed, got.Status)
		require.Equal(t, "number_not_permitted", got.FailureCode)
	})
}

func TestSendsAProviderCannotDeliverAreRefusedUpFront(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.svc.Receive(ctx, messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: "+14155550111", To: b.number.Number,
		Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.NoError(t, err)
	_, err = b.svc.SendIndividual(ctx, messaging.SendInput{AccountID: b.account.ID, Service: "whatsapp", From: b.number.Number, To: "+14155550111",
		Content: domain.Content{Kind: domain.KindLocation, Latitude: 1, Longitude: 2}})
	require.Equal(t, "not_supported_by_provider", failure.As(err).Code)
	_, err = b.svc.ManageGroup(ctx, messaging.GroupCommand{AccountID: b.account.ID, Action: "create", AgentNumber: b.number.Number,
		Title: "T", Participants: []string{"+14155550111"}, ParticipantsGiven: true})
	require.Equal(t, "not_supported_by_provider", failure.As(err).Code, "a provider without the group port cannot create groups")
}

func TestInboundIsStoredOnceAndOpensTheConversation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	in := messaging.InboundInput{Service: "whatsapp", From: "+14155550111", To: b.number.Number, SenderName: "Ann",
		Content: domain.Content{Kind: domain.KindText, Text: "hi"}, ProviderMessageID: "wamid.in.1"}
	first, err := b.svc.Receive(ctx, in)
	require.NoError(t, err)
	again, err := b.svc.Receive(ctx, in)
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID, "a repeated provider report is stored once")
	msgs, err := b.svc.Recent(ctx, b.account.ID, first.ThreadID)
	require.NoError(t, err)
	require.Len(t, msgs, 1)

	in.AccountID = "acc_someoneelse"
	in.ProviderMessageID = "wamid.in.2"
	_, err = b.svc.Receive(ctx, in)
	require.Error(t, err, "a number of another account is not found through this account")
}
