package messaging_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// indicatorProvider is a provider double with indicators; it records the
// calls it gets and answers with fail when set.
type indicatorProvider struct {
	fakeProvider
	caps messaging.Indicators

	mu    sync.Mutex
	calls []string // "read:<latest message id>", "typing:<latest message id>"
	fail  error
}

func (p *indicatorProvider) Indicators() messaging.Indicators { return p.caps }

func (p *indicatorProvider) record(kind string, in messaging.Indication) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.calls = append(p.calls, kind+":"+in.Latest.ID)
	return nil
}

func (p *indicatorProvider) MarkRead(_ context.Context, in messaging.Indication) error {
	return p.record("read", in)
}

func (p *indicatorProvider) Typing(_ context.Context, in messaging.Indication) error {
	return p.record("typing", in)
}

func (p *indicatorProvider) recorded() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

type indicatorBundle struct {
	db       *store.DB
	accounts *accounts.Service
	provider *indicatorProvider
	account  account.Account
	number   account.Number
	// replica builds another service over the same database, as another
	// replica would run.
	replica func() *messaging.Service
	svc     *messaging.Service
}

// setupIndicators opens a migrated SQLite store with an account whose
// sandbox number's provider is an indicatorProvider of caps.
func setupIndicators(t *testing.T, caps messaging.Indicators) *indicatorBundle {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbtest.URL(t, store.SQLite), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	keys, err := keyring.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, _, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	n, err := acc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	p := &indicatorProvider{caps: caps}
	replica := func() *messaging.Service {
		return messaging.NewService(messaging.Deps{
			Committer: db, Store: db.MessagingStore(), Opener: acc,
			Providers: messaging.ProviderSet{account.ProviderSandbox: p},
			Throttle:  ratelimit.NewSpacing(db.RateBuckets()),
		})
	}
	return &indicatorBundle{db: db, accounts: acc, provider: p, account: a, number: n, replica: replica, svc: replica()}
}

// inbound stores a message from user in the thread of the bundle's number.
func (b *indicatorBundle) inbound(t *testing.T, user, text string) domain.Message {
	t.Helper()
	m, err := b.svc.Receive(context.Background(), messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: user, To: b.number.Number,
		Content: domain.Content{Kind: domain.KindText, Text: text}})
	require.NoError(t, err)
	return m
}

func (b *indicatorBundle) status(t *testing.T, id string) domain.Status {
	t.Helper()
	d, err := b.svc.Message(context.Background(), b.account.ID, id)
	require.NoError(t, err)
	return d.Message.Status
}

var whatsappLike = messaging.Indicators{ReadReceipts: true, TypingWindow: 25 * time.Second, TypingMarksRead: true}

func TestMarkReadMovesTheThreadsUnreadInboundMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupIndicators(t, whatsappLike)
	first := b.inbound(t, "+14155550111", "hello")
	_, err := b.svc.SendIndividual(ctx, messaging.SendInput{AccountID: b.account.ID, Service: "whatsapp", From: b.number.Number, To: "+14155550111",
		Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.NoError(t, err)
	second := b.inbound(t, "+14155550111", "are you there?")

	res, err := b.svc.MarkRead(ctx, b.account.ID, second.ThreadID)
	require.NoError(t, err)
	require.Equal(t, messaging.ReadResult{ThreadID: second.ThreadID, Service: account.WhatsApp, ReadReceipts: true, MessageID: second.ID, MarkedRead: 2}, res)
	require.Equal(t, []string{"read:" + second.ID}, b.provider.recorded(), "the receipt names the latest inbound message")
	require.Equal(t, domain.Read, b.status(t, first.ID))
	require.Equal(t, domain.Read, b.status(t, second.ID))

	third := b.inbound(t, "+14155550111", "one more")
	res, err = b.svc.MarkRead(ctx, b.account.ID, third.ThreadID)
	require.NoError(t, err)
	require.Equal(t, 1, res.MarkedRead, "only what was still received moves")
	require.Equal(t, domain.Read, b.status(t, third.ID))
}

func TestTypingCallsTheProviderOncePerWindowAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupIndicators(t, whatsappLike)
	m := b.inbound(t, "+14155550111", "hello")

	res, err := b.svc.Typing(ctx, b.account.ID, m.ThreadID)
	require.NoError(t, err)
	require.True(t, res.Sent)
	require.Equal(t, 1, res.MarkedRead, "a typing call that marks read moves the message")
	require.Equal(t, domain.Read, b.status(t, m.ID))

	again, err := b.replica().Typing(ctx, b.account.ID, m.ThreadID)
	require.NoError(t, err)
	require.False(t, again.Sent, "another replica inside the window sends nothing")
	require.Positive(t, again.RetryAfter)
	require.LessOrEqual(t, again.RetryAfter, 25*time.Second)
	require.Equal(t, []string{"typing:" + m.ID}, b.provider.recorded(), "one provider call")
}

func TestTypingAfterAProviderErrorMayGoAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupIndicators(t, whatsappLike)
	m := b.inbound(t, "+14155550111", "hello")

	b.provider.fail = &messaging.ProviderError{Code: "provider_unavailable", Message: "down", RetryAfter: 2 * time.Second}
	_, err := b.svc.Typing(ctx, b.account.ID, m.ThreadID)
	fe := failure.As(err)
	require.Equal(t, failure.KindUnavailable, fe.Kind)
	require.Equal(t, "provider_refused", fe.Code)
	require.Equal(t, 2*time.Second, fe.RetryAfter)
	require.Equal(t, domain.Received, b.status(t, m.ID), "nothing moved")

	b.provider.fail = nil
	res, err := b.svc.Typing(ctx, b.account.ID, m.ThreadID)
	require.NoError(t, err)
	require.True(t, res.Sent, "the failed call did not spend the window")
}

func TestIndicationsAreRefusedBeforeTheProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a thread whose user never wrote", func(t *testing.T) {
		t.Parallel()
		b := setupIndicators(t, messaging.Indicators{ReadReceipts: true, Groups: true, TypingWindow: 5 * time.Second})
		g, _, err := b.svc.CreateGroup(ctx, messaging.GroupInput{AccountID: b.account.ID, Service: "whatsapp", AgentNumber: b.number.Number,
			Title: "Team", Participants: []string{"+14155550111"}})
		require.NoError(t, err)
		_, err = b.svc.Typing(ctx, b.account.ID, g.ID)
		require.Equal(t, "no_inbound_message", failure.As(err).Code)
		require.Equal(t, failure.KindInvalid, failure.As(err).Kind)
		_, err = b.svc.MarkRead(ctx, b.account.ID, g.ID)
		require.Equal(t, "no_inbound_message", failure.As(err).Code)
		require.Empty(t, b.provider.recorded())
	})

	t.Run("a group thread of a provider without group indicators", func(t *testing.T) {
		t.Parallel()
		b := setupIndicators(t, whatsappLike)
		g, _, err := b.svc.CreateGroup(ctx, messaging.GroupInput{AccountID: b.account.ID, Service: "whatsapp", AgentNumber: b.number.Number,
			Title: "Team", Participants: []string{"+14155550111"}})
		require.NoError(t, err)
		_, err = b.svc.Receive(ctx, messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: "+14155550111", To: b.number.Number,
			ThreadID: g.ID, Content: domain.Content{Kind: domain.KindText, Text: "hi all"}})
		require.NoError(t, err)
		_, err = b.svc.Typing(ctx, b.account.ID, g.ID)
		fe := failure.As(err)
		require.Equal(t, failure.KindInvalid, fe.Kind)
		require.Equal(t, "not_supported_by_provider", fe.Code)
		require.Empty(t, b.provider.recorded())
	})

	t.Run("another account's thread and an unknown one", func(t *testing.T) {
		t.Parallel()
		b := setupIndicators(t, whatsappLike)
		m := b.inbound(t, "+14155550111", "hello")
		other, _, err := b.accounts.CreateAccount(ctx, "Other")
		require.NoError(t, err)
		_, err = b.svc.MarkRead(ctx, other.ID, m.ThreadID)
		require.True(t, failure.Is(err, failure.KindNotFound))
		_, err = b.svc.Typing(ctx, other.ID, m.ThreadID)
		require.True(t, failure.Is(err, failure.KindNotFound))
		_, err = b.svc.Typing(ctx, b.account.ID, "thr_doesnotexist")
		require.True(t, failure.Is(err, failure.KindNotFound))
		require.Empty(t, b.provider.recorded())
	})

	t.Run("a channel without read receipts", func(t *testing.T) {
		t.Parallel()
		b := setupIndicators(t, messaging.Indicators{Groups: true, TypingWindow: 5 * time.Second})
		m := b.inbound(t, "+14155550111", "hello")
		res, err := b.svc.MarkRead(ctx, b.account.ID, m.ThreadID)
		require.NoError(t, err)
		require.False(t, res.ReadReceipts)
		require.Zero(t, res.MarkedRead)
		require.Empty(t, b.provider.recorded(), "nothing is sent")
		require.Equal(t, domain.Received, b.status(t, m.ID), "nothing is faked")
	})
}

func TestMarkReadPagesThroughTheThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupIndicators(t, whatsappLike)
	var last domain.Message
	for i := range messaging.DefaultPageSize + 5 {
		last = b.inbound(t, "+14155550111", "message "+string(rune('a'+i)))
	}
	res, err := b.svc.MarkRead(ctx, b.account.ID, last.ThreadID)
	require.NoError(t, err)
	require.Equal(t, messaging.DefaultPageSize+5, res.MarkedRead, "every unread message, past the first page")
	require.Equal(t, last.ID, res.MessageID)
}
