package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// MessagingFixture is a messaging store on an empty database, with the
// ports that put there the rows it reads: accounts and their agent
// numbers, and the committer that writes messages as sends do.
type MessagingFixture struct {
	Store     appmessaging.Store
	Accounts  accounts.Store
	Committer writes.Committer
	// Pages are the batched reads (the GraphQL API's) over the same
	// database, whose pages of messages must be ThreadMessages' pages.
	Pages appmessaging.PageRepos
}

// owner creates an account and returns its id.
func (f MessagingFixture) owner(t *testing.T) string {
	t.Helper()
	a := newAccount("messaging")
	require.NoError(t, f.Accounts.Repos().InsertAccount(context.Background(), a))
	return a.ID
}

// agent creates an agent number of the account.
func (f MessagingFixture) agent(t *testing.T, accountID string, service account.Service, number string, provider account.Provider) account.Number {
	t.Helper()
	n := account.Number{ID: ident.New(ident.Number), AccountID: accountID, Number: number, Service: service, Provider: provider,
		SealedSettings: []byte{1, 2, 0, 255}, Enabled: true, CreatedAt: at}
	require.NoError(t, f.Accounts.Repos().InsertNumber(context.Background(), n))
	return n
}

// thread stores th with its participants.
func (f MessagingFixture) thread(t *testing.T, th messaging.Thread, participants ...messaging.Participant) messaging.Thread {
	t.Helper()
	require.NoError(t, f.Committer.Commit(context.Background(), writes.Batch{Threads: []writes.NewThread{{Thread: th, Participants: participants}}}))
	return th
}

// decideAlone is the decision of one inbound message from user to agent
// (what receiving a user's message writes): it finds or makes their
// thread, and returns the batch of the message with the user's activity.
func decideAlone(ctx context.Context, tx appmessaging.TxReads, accountID, agent, user string, sent time.Time) (writes.Batch, messaging.Thread, error) {
	var b writes.Batch
	th, err := tx.IndividualThread(ctx, accountID, account.WhatsApp, agent, user)
	if failure.Is(err, failure.KindNotFound) {
		th, err = individualThread(accountID, account.WhatsApp, agent, user, sent), nil
		b.Threads = []writes.NewThread{{Thread: th, Participants: []messaging.Participant{{Address: agent, IsAgent: true}, {Address: user}}}}
	}
	if err != nil {
		return writes.Batch{}, messaging.Thread{}, err
	}
	b.Messages = []messaging.Message{chatMessage(th, messaging.Inbound, "hi", sent)}
	b.Inbound = []writes.InboundActivity{{AccountID: accountID, Service: account.WhatsApp, Address: user, ThreadID: th.ID, At: sent}}
	return b, th, nil
}

// commit writes messages as a send or an inbound message does.
func (f MessagingFixture) commit(t *testing.T, ms ...messaging.Message) {
	t.Helper()
	require.NoError(t, f.Committer.Commit(context.Background(), writes.Batch{Messages: ms}))
}

func individualThread(accountID string, service account.Service, agent, contact string, created time.Time) messaging.Thread {
	return messaging.Thread{ID: ident.New(ident.Thread), AccountID: accountID, Service: service, Type: messaging.Individual,
		AgentNumber: agent, Contact: contact, Name: "Ann", CreatedAt: created, UpdatedAt: created}
}

func groupThread(accountID string, service account.Service, agent string, created time.Time) messaging.Thread {
	return messaging.Thread{ID: ident.New(ident.Thread), AccountID: accountID, Service: service, Type: messaging.Group,
		AgentNumber: agent, Name: "Team", CreatedAt: created, UpdatedAt: created}
}

// chatMessage is a text message in th: from the user when inbound, from
// the agent number otherwise.
func chatMessage(th messaging.Thread, dir messaging.Direction, text string, created time.Time) messaging.Message {
	m := messaging.Message{ID: ident.New(ident.Message), AccountID: th.AccountID, ThreadID: th.ID, Service: th.Service, Direction: dir,
		From: th.AgentNumber, To: th.Contact, Content: messaging.Content{Kind: messaging.KindText, Text: text},
		Status: messaging.Queued, CreatedAt: created, UpdatedAt: created}
	if dir == messaging.Inbound {
		m.From, m.To, m.Status = th.Contact, th.AgentNumber, messaging.Received
	}
	return m
}

func messageIDs(ms []messaging.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func summaryIDs(ss []appmessaging.ThreadSummary) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Thread.ID
	}
	return out
}

func notFound(t *testing.T, err error, what string) {
	t.Helper()
	require.True(t, failure.Is(err, failure.KindNotFound), "%s: want NotFound, got %v", what, err)
}

// Messaging runs the contract of messaging.Store against the fixture that
// open returns; open must give each call its own empty, migrated database.
func Messaging(t *testing.T, open func(t *testing.T) MessagingFixture) {
	ctx := context.Background()

	t.Run("NumbersByAddressAndID", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		wa := f.agent(t, a, account.WhatsApp, "+14155550100", account.ProviderSandbox)
		tg := f.agent(t, b, account.Telegram, "+14155550100", account.ProviderTelegram)
		r := f.Store.Repos()

		got, err := r.NumberByAddress(ctx, account.WhatsApp, "+14155550100")
		require.NoError(t, err)
		require.Equal(t, wa, got)
		got, err = r.NumberByAddress(ctx, account.Telegram, "+14155550100")
		require.NoError(t, err)
		require.Equal(t, tg, got, "one address on two services is two numbers, whichever account owns each")
		_, err = r.NumberByAddress(ctx, account.WhatsApp, "+14155550199")
		notFound(t, err, "an address no number has")

		got, err = r.NumberByID(ctx, tg.ID)
		require.NoError(t, err)
		require.Equal(t, tg, got)
		_, err = r.NumberByID(ctx, "num_missing")
		notFound(t, err, "a missing number")

		disabled, err := f.Accounts.Repos().SetNumberEnabled(ctx, a, wa.ID, false)
		require.NoError(t, err)
		got, err = r.NumberByAddress(ctx, account.WhatsApp, "+14155550100")
		require.NoError(t, err)
		require.Equal(t, disabled, got, "a disabled number is still found, as it is")
		require.False(t, got.Enabled)
	})

	t.Run("IndividualThreadIsOnePerAgentNumberAndUser", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		agent, user := "+14155550100", "+4917012345678"
		th := f.thread(t, individualThread(a, account.WhatsApp, agent, user, at),
			messaging.Participant{Address: agent, IsAgent: true}, messaging.Participant{Address: user, Name: "Ann"})
		r := f.Store.Repos()

		got, err := r.IndividualThread(ctx, a, account.WhatsApp, agent, user)
		require.NoError(t, err)
		require.Equal(t, th, got)
		got, err = r.Thread(ctx, a, th.ID)
		require.NoError(t, err)
		require.Equal(t, th, got)
		for name, q := range map[string][4]string{
			"another account":   {b, string(account.WhatsApp), agent, user},
			"another service":   {a, string(account.Telegram), agent, user},
			"another agent":     {a, string(account.WhatsApp), "+14155550101", user},
			"another user":      {a, string(account.WhatsApp), agent, "+4917000000000"},
			"the roles swapped": {a, string(account.WhatsApp), user, agent},
		} {
			_, err := r.IndividualThread(ctx, q[0], account.Service(q[1]), q[2], q[3])
			notFound(t, err, name)
		}

		dup := individualThread(a, account.WhatsApp, agent, user, at.Add(time.Minute))
		err = f.Committer.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: dup, Participants: []messaging.Participant{{Address: "+4917099999999"}}}}})
		require.ErrorIs(t, err, writes.ErrThreadExists, "a second individual thread of the pair")
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
		_, err = r.Thread(ctx, a, dup.ID)
		notFound(t, err, "the refused thread")
		parts, err := r.Participants(ctx, th.ID)
		require.NoError(t, err)
		require.Equal(t, []messaging.Participant{{Address: agent, IsAgent: true}, {Address: user, Name: "Ann"}}, parts)
		none, err := r.Participants(ctx, dup.ID)
		require.NoError(t, err)
		require.Empty(t, none, "the refused thread's participants were not stored")

		// The same pair on another account, and group threads of the
		// agent number, are other threads.
		f.thread(t, individualThread(b, account.WhatsApp, agent, user, at))
		f.thread(t, groupThread(a, account.WhatsApp, agent, at))
		f.thread(t, groupThread(a, account.WhatsApp, agent, at))

		// A decision reads the thread in its transaction and writes its
		// batch there.
		later := at.Add(2 * time.Minute)
		err = f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
			b, got, err := decideAlone(ctx, tx, a, agent, user, later)
			require.NoError(t, err)
			require.Equal(t, th, got)
			require.Empty(t, b.Threads)
			return b, nil
		})
		require.NoError(t, err)
		got, err = r.Thread(ctx, a, th.ID)
		require.NoError(t, err)
		require.NotNil(t, got.LastInboundAt)
		require.True(t, got.LastInboundAt.Equal(later), "the transaction committed: %v", got.LastInboundAt)
	})

	t.Run("AnotherAccountsRowsAreNotFound", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		agent := "+14155550100"
		th := f.thread(t, groupThread(a, account.Telegram, agent, at),
			messaging.Participant{Address: agent, IsAgent: true, Admin: true}, messaging.Participant{Address: "+4917012345678", Name: `Zoë "Z" O'Neil`})
		sent := at.Add(time.Second)
		// Every column of a message, in one each of the kinds that use them.
		located := chatMessage(th, messaging.OutboundAPI, "", sent)
		located.Content = messaging.Content{Kind: messaging.KindLocation, Latitude: 52.520008, Longitude: -13.404954, PlaceName: "Tor", Address: "Pariser Platz 1"}
		located.Status, located.FailureCode, located.FailureText, located.ProviderMessageID = messaging.Failed, "recipient_unreachable", "gone", "tg-1"
		located.UpdatedAt = sent.Add(time.Second)
		pictured := chatMessage(th, messaging.Inbound, "", sent)
		pictured.From, pictured.SenderName = "+4917012345678", "Zoë"
		pictured.Content = messaging.Content{Kind: messaging.KindImage, MediaURL: "https://files.example.com/a.png?x=1&y=2", Caption: "it's ? $1"}
		voiced := chatMessage(th, messaging.Inbound, "", sent.Add(time.Millisecond))
		voiced.From = "+4917012345678"
		voiced.Content = messaging.Content{Kind: messaging.KindAudio, MediaRef: "AwACAgIAAxkBAAIBZ2", MimeType: "audio/ogg",
			FileName: "note.ogg", Size: 16 << 20, Variant: messaging.VariantVoice}
		f.commit(t, located, pictured, voiced)
		r := f.Store.Repos()

		for _, m := range []messaging.Message{located, pictured, voiced} {
			got, err := r.Message(ctx, a, m.ID)
			require.NoError(t, err)
			require.Equal(t, m, got)
			got, err = r.MessageByID(ctx, m.ID)
			require.NoError(t, err)
			require.Equal(t, m, got, "read without the account, for delivery")
			d, err := r.MessageDetails(ctx, a, m.ID)
			require.NoError(t, err)
			require.Equal(t, appmessaging.MessageDetails{Message: m, Thread: th, Participants: []messaging.Participant{
				{Address: agent, IsAgent: true, Admin: true}, {Address: "+4917012345678", Name: `Zoë "Z" O'Neil`},
			}}, d)
		}

		_, err := r.Thread(ctx, b, th.ID)
		notFound(t, err, "another account's thread")
		_, err = r.Thread(ctx, a, "thr_missing")
		notFound(t, err, "a missing thread")
		_, err = r.Message(ctx, b, located.ID)
		notFound(t, err, "another account's message")
		_, err = r.Message(ctx, a, "msg_missing")
		notFound(t, err, "a missing message")
		_, err = r.MessageByID(ctx, "msg_missing")
		notFound(t, err, "a missing message by id")
		_, err = r.MessageDetails(ctx, b, located.ID)
		notFound(t, err, "another account's message details")
		_, err = r.MessageDetails(ctx, a, "msg_missing")
		notFound(t, err, "missing message details")
	})

	t.Run("ParticipantsAgentFirstThenByAddress", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		agent := "+15550003333"
		th := f.thread(t, groupThread(a, account.WhatsApp, agent, at),
			messaging.Participant{Address: "+15550009999", Name: `Zoë "Z" O'Neil`, Admin: true},
			messaging.Participant{Address: agent, IsAgent: true},
			messaging.Participant{Address: "+15550001234", Name: "Al"})
		bare := f.thread(t, individualThread(a, account.WhatsApp, agent, "+15550004444", at))
		m := chatMessage(th, messaging.OutboundAPI, "hi all", at)
		f.commit(t, m)
		r := f.Store.Repos()

		want := []messaging.Participant{
			{Address: agent, IsAgent: true},
			{Address: "+15550001234", Name: "Al"},
			{Address: "+15550009999", Name: `Zoë "Z" O'Neil`, Admin: true},
		}
		parts, err := r.Participants(ctx, th.ID)
		require.NoError(t, err)
		require.Equal(t, want, parts)
		d, err := r.MessageDetails(ctx, a, m.ID)
		require.NoError(t, err)
		require.Equal(t, want, d.Participants, "the same participants, in the same order, as Participants reads")
		parts, err = r.Participants(ctx, bare.ID)
		require.NoError(t, err)
		require.Empty(t, parts, "a thread without participants")
		parts, err = r.Participants(ctx, "thr_missing")
		require.NoError(t, err)
		require.Empty(t, parts, "a thread that does not exist has none")
	})

	t.Run("ThreadActivityAndInboundActivity", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		r := f.Store.Repos()
		read := func() messaging.Thread {
			t.Helper()
			got, err := r.Thread(ctx, a, th.ID)
			require.NoError(t, err)
			return got
		}

		want := th
		want.UpdatedAt = at.Add(time.Minute)
		outbound := func(at time.Time) writes.Batch {
			return writes.Batch{ThreadActivity: []writes.ThreadActivity{{ThreadID: th.ID, At: at}}}
		}
		require.NoError(t, f.Committer.Commit(ctx, outbound(at.Add(time.Minute))))
		require.Equal(t, want, read(), "an outbound message moves the activity only")

		inbound := at.Add(2 * time.Minute)
		want.UpdatedAt, want.LastInboundAt = inbound, &inbound
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Inbound: []writes.InboundActivity{
			{AccountID: a, Service: account.WhatsApp, Address: th.Contact, Name: "Ann", ThreadID: th.ID, At: inbound.Add(-time.Second)},
			{AccountID: a, Service: account.WhatsApp, Address: th.Contact, ThreadID: th.ID, At: inbound},
		}}))
		require.Equal(t, want, read(), "an inbound one records that the user wrote, the newest of a batch winning")

		want.UpdatedAt = at.Add(3 * time.Minute)
		require.NoError(t, f.Committer.Commit(ctx, outbound(at.Add(3*time.Minute))))
		require.Equal(t, want, read(), "the user's last message stays recorded")

		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{
			ThreadActivity: []writes.ThreadActivity{{ThreadID: "thr_missing", At: at}},
			Inbound:        []writes.InboundActivity{{AccountID: a, Service: account.WhatsApp, Address: th.Contact, ThreadID: "thr_missing", At: at}},
		}), "threads that do not exist are left out")
		require.Equal(t, want, read())
	})

	t.Run("ThreadsListMostRecentlyActiveFirst", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b, idle := f.owner(t), f.owner(t), f.owner(t)
		agent, ann, bob, cy := "+14155550100", "+4917000000001", "+4917000000002", "+4917000000009"
		t1 := f.thread(t, individualThread(a, account.WhatsApp, agent, ann, at.Add(1*time.Second)),
			messaging.Participant{Address: agent, IsAgent: true}, messaging.Participant{Address: ann, Name: "Ann"})
		t2 := f.thread(t, individualThread(a, account.WhatsApp, agent, bob, at.Add(2*time.Second)))
		t3 := f.thread(t, groupThread(a, account.WhatsApp, agent, at.Add(3*time.Second)),
			messaging.Participant{Address: agent, IsAgent: true, Admin: true}, messaging.Participant{Address: ann}, messaging.Participant{Address: cy})
		t4 := f.thread(t, individualThread(a, account.Telegram, "+14155550111", "+4917000000003", at.Add(4*time.Second)))
		tb := f.thread(t, individualThread(b, account.WhatsApp, agent, ann, at.Add(5*time.Second)))

		// t1's newest message is committed after an older one; t2 has an
		// inbound touch; t3 and t4 only their creation.
		newest := chatMessage(t1, messaging.Inbound, "newest", at.Add(10*time.Second))
		older := chatMessage(t1, messaging.OutboundAPI, "older", at.Add(9*time.Second))
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Messages: []messaging.Message{newest},
			ThreadActivity: []writes.ThreadActivity{{ThreadID: t1.ID, At: newest.CreatedAt}}}))
		f.commit(t, older)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Inbound: []writes.InboundActivity{
			{AccountID: a, Service: account.WhatsApp, Address: bob, ThreadID: t2.ID, At: at.Add(8 * time.Second)}}}))
		r := f.Store.Repos()

		list, total, err := r.Threads(ctx, appmessaging.ThreadQuery{AccountID: a, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 4, total)
		require.Equal(t, []string{t1.ID, t2.ID, t4.ID, t3.ID}, summaryIDs(list), "most recently active first; a thread without messages by its creation")
		t1.UpdatedAt = newest.CreatedAt
		require.Equal(t, appmessaging.ThreadSummary{Thread: t1,
			Participants: []messaging.Participant{{Address: agent, IsAgent: true}, {Address: ann, Name: "Ann"}}, LastMessage: &newest}, list[0])
		touched := at.Add(8 * time.Second)
		t2.UpdatedAt, t2.LastInboundAt = touched, &touched
		require.Equal(t, appmessaging.ThreadSummary{Thread: t2, Participants: []messaging.Participant{}}, normalize(list[1]))
		require.Nil(t, list[2].LastMessage, "a thread without messages")
		require.Equal(t, t3, list[3].Thread)
		require.Equal(t, []messaging.Participant{{Address: agent, IsAgent: true, Admin: true}, {Address: ann}, {Address: cy}}, list[3].Participants)

		page, total, err := r.Threads(ctx, appmessaging.ThreadQuery{AccountID: a, Limit: 2, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, 4, total, "the total counts every page")
		require.Equal(t, []string{t2.ID, t4.ID}, summaryIDs(page))

		for _, c := range []struct {
			phone string
			want  []string
			why   string
		}{
			{ann, []string{t1.ID, t3.ID}, "the user of one thread and a member of a group"},
			{agent, []string{t1.ID, t2.ID, t3.ID}, "the agent number of three"},
			{cy, []string{t3.ID}, "a member of a group only"},
			{"+4917000000003", []string{t4.ID}, "the user of a thread on another service"},
			{"+4917000000099", []string{}, "nobody's"},
		} {
			list, total, err := r.Threads(ctx, appmessaging.ThreadQuery{AccountID: a, Phone: c.phone, Limit: 10})
			require.NoError(t, err)
			require.Equal(t, c.want, summaryIDs(list), c.why)
			require.Equal(t, len(c.want), total, c.why)
		}

		list, total, err = r.Threads(ctx, appmessaging.ThreadQuery{AccountID: b, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, []string{tb.ID}, summaryIDs(list), "each account sees its own threads")
		list, total, err = r.Threads(ctx, appmessaging.ThreadQuery{AccountID: idle, Limit: 10})
		require.NoError(t, err)
		require.Zero(t, total)
		require.Empty(t, list)
	})

	t.Run("ThreadListingsFollowTheActivityExactly", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		// Creation and last message, seconds after at: most activities
		// move by less than a minute, so an index of a floor of the
		// activity (Postgres) lists them in another order than theirs.
		threads := []struct{ created, touched int }{{0, 50}, {10, 20}, {30, 100}, {40, -1}, {5, 55}, {45, 46}, {44, -1}, {1, 59}}
		ids := make([]string, len(threads))
		for i, th := range threads {
			created := at.Add(time.Duration(th.created) * time.Second)
			ids[i] = f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", fmt.Sprintf("+49170000001%02d", i), created)).ID
			if th.touched >= 0 {
				require.NoError(t, f.Committer.Commit(ctx, writes.Batch{ThreadActivity: []writes.ThreadActivity{
					{ThreadID: ids[i], At: at.Add(time.Duration(th.touched) * time.Second)}}}))
			}
		}
		want := []string{ids[2], ids[7], ids[4], ids[0], ids[5], ids[6], ids[3], ids[1]}
		r := f.Store.Repos()
		for _, size := range []int{1, 2, 3, 8} {
			var got []string
			for offset := 0; offset < len(want); offset += size {
				page, total, err := r.Threads(ctx, appmessaging.ThreadQuery{AccountID: a, Limit: size, Offset: offset})
				require.NoError(t, err)
				require.Equal(t, len(want), total)
				got = append(got, summaryIDs(page)...)
			}
			require.Equal(t, want, got, "pages of %d by offset", size)
			if f.Pages == nil {
				continue
			}
			got = got[:0]
			var after *appmessaging.ThreadCursor
			for {
				page, err := f.Pages.ThreadPage(ctx, appmessaging.ThreadPageQuery{AccountID: a, After: after, Limit: size})
				require.NoError(t, err)
				for _, p := range page {
					got = append(got, p.Thread.ID)
				}
				if len(page) < size {
					break
				}
				after = &page[len(page)-1].Cursor
			}
			require.Equal(t, want, got, "pages of %d by cursor", size)
		}
	})

	t.Run("MessageByProviderID", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		other := f.thread(t, individualThread(b, account.WhatsApp, "+14155550199", "+4917012345678", at))
		in := chatMessage(th, messaging.Inbound, "hello", at)
		in.ProviderMessageID = "wamid.in1"
		out := chatMessage(th, messaging.OutboundAPI, "hi", at.Add(time.Second))
		theirs := chatMessage(other, messaging.Inbound, "hey", at)
		theirs.ProviderMessageID = "wamid.b1"
		f.commit(t, in, out, theirs)
		r := f.Store.Repos()

		got, err := r.MessageByProviderID(ctx, account.WhatsApp, "wamid.in1")
		require.NoError(t, err)
		require.Equal(t, in, got)
		got, err = r.MessageByProviderID(ctx, account.WhatsApp, "wamid.b1")
		require.NoError(t, err)
		require.Equal(t, theirs, got, "whichever account's message it is")
		_, err = r.MessageByProviderID(ctx, account.Telegram, "wamid.in1")
		notFound(t, err, "the id on another service")
		_, err = r.MessageByProviderID(ctx, account.WhatsApp, "wamid.out1")
		notFound(t, err, "an id no message has yet")

		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Statuses: []writes.MessageStatus{
			{MessageID: out.ID, Status: messaging.Sent, ProviderMessageID: "wamid.out1", UpdatedAt: at.Add(2 * time.Second)},
		}}))
		got, err = r.MessageByProviderID(ctx, account.WhatsApp, "wamid.out1")
		require.NoError(t, err)
		out.Status, out.ProviderMessageID, out.UpdatedAt = messaging.Sent, "wamid.out1", at.Add(2*time.Second)
		require.Equal(t, out, got, "found by the id the provider gave when it accepted the message")

		// A provider's report of an inbound message is stored once: the
		// channel use cases take this conflict for a repeated report.
		again := chatMessage(th, messaging.Inbound, "hello", at.Add(time.Minute))
		again.ProviderMessageID = "wamid.in1"
		err = f.Committer.Commit(ctx, writes.Batch{Messages: []messaging.Message{again}})
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
		require.Equal(t, "already_exists", failure.As(err).Code)
		_, err = r.Message(ctx, a, again.ID)
		notFound(t, err, "the repeated report")
	})

	t.Run("ReactionsKeepTheNewestOfEachReactor", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		out := chatMessage(th, messaging.OutboundAPI, "hi", at)
		f.commit(t, out)
		react := func(reactor, emoji string, when time.Duration) messaging.Reaction {
			return messaging.Reaction{MessageID: out.ID, AccountID: a, ThreadID: th.ID, Reactor: reactor, Emoji: emoji,
				FromAgent: reactor == th.AgentNumber, At: at.Add(when)}
		}
		// Two reactions of one user in one batch (merged callers): the
		// last one stands; the agent's is its own.
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{MessageReactions: []messaging.Reaction{
			react(th.Contact, "👍", time.Second), react(th.Contact, "🔥", 2*time.Second), react(th.AgentNumber, "❤️", time.Second),
		}}))
		r := f.Store.Repos()
		got, err := r.Reactions(ctx, a, []string{out.ID})
		require.NoError(t, err)
		require.Equal(t, map[string][]messaging.Reaction{out.ID: {react(th.AgentNumber, "❤️", time.Second), react(th.Contact, "🔥", 2*time.Second)}}, got)
		// An older report arriving late changes nothing.
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{MessageReactions: []messaging.Reaction{react(th.Contact, "😢", 0)}}))
		got, err = r.Reactions(ctx, a, []string{out.ID})
		require.NoError(t, err)
		require.Equal(t, "🔥", got[out.ID][1].Emoji)
		// Taken back: listed no more.
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{MessageReactions: []messaging.Reaction{react(th.Contact, "", 3*time.Second)}}))
		got, err = r.Reactions(ctx, a, []string{out.ID})
		require.NoError(t, err)
		require.Equal(t, map[string][]messaging.Reaction{out.ID: {react(th.AgentNumber, "❤️", time.Second)}}, got)
		got, err = r.Reactions(ctx, b, []string{out.ID})
		require.NoError(t, err)
		require.Empty(t, got, "another account's message has none")
	})

	t.Run("EditsAndDeletionsChangeTheMessage", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		text := chatMessage(th, messaging.Inbound, "see you at 5", at)
		photo := chatMessage(th, messaging.Inbound, "", at.Add(time.Second))
		photo.Content = messaging.Content{Kind: messaging.KindImage, MediaRef: "media-1", MimeType: "image/jpeg", FileName: "a.jpg",
			Size: 1234, Caption: "the view"}
		other := chatMessage(th, messaging.Inbound, "untouched", at.Add(2*time.Second))
		f.commit(t, text, photo, other)
		r := f.Store.Repos()

		// Two edits of one message in one batch (merged callers): the last
		// one stands.
		first, second := at.Add(time.Minute), at.Add(2*time.Minute)
		edit := func(m messaging.Message, to string, when time.Time) writes.MessageChange {
			return writes.MessageChange{MessageID: m.ID, Content: m.Content.WithEditedText(to), PreviousText: m.Content.EditableText(),
				EditedAt: &when, UpdatedAt: when}
		}
		gone := at.Add(3 * time.Minute)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{MessageChanges: []writes.MessageChange{
			edit(text, "see you at 6", first), edit(text, "see you at 7", second),
			{MessageID: photo.ID, Content: messaging.Content{Kind: messaging.KindText}, DeletedAt: &gone, UpdatedAt: gone},
		}}))
		got, err := r.Message(ctx, a, text.ID)
		require.NoError(t, err)
		want := text
		want.Content.Text, want.PreviousText, want.EditedAt, want.UpdatedAt = "see you at 7", "see you at 5", &second, second
		require.Equal(t, want, got)
		got, err = r.Message(ctx, a, photo.ID)
		require.NoError(t, err)
		want = photo
		want.Content, want.DeletedAt, want.UpdatedAt = messaging.Content{Kind: messaging.KindText}, &gone, gone
		require.Equal(t, want, got, "a deleted message keeps no content")
		require.True(t, got.Deleted())
		recent, err := r.RecentMessages(ctx, a, th.ID, 10)
		require.NoError(t, err)
		require.Equal(t, []messaging.Message{other, want, func() messaging.Message { m, _ := r.Message(ctx, a, text.ID); return m }()}, recent)

		// A caption is what an edit of media changes.
		media := chatMessage(th, messaging.Inbound, "", at.Add(4*time.Second))
		media.Content = messaging.Content{Kind: messaging.KindVideo, MediaRef: "media-2", Caption: "old"}
		f.commit(t, media)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{MessageChanges: []writes.MessageChange{edit(media, "new", first)}}))
		got, err = r.Message(ctx, a, media.ID)
		require.NoError(t, err)
		require.Equal(t, messaging.Content{Kind: messaging.KindVideo, MediaRef: "media-2", Caption: "new"}, got.Content)
		require.Equal(t, "old", got.PreviousText)

		// A deleted press keeps no button either.
		press := chatMessage(th, messaging.Inbound, "", at.Add(5*time.Second))
		press.Content = messaging.Content{Kind: messaging.KindButtonReply, ButtonID: "slot-pm", Text: "Afternoon"}
		f.commit(t, press)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{MessageChanges: []writes.MessageChange{
			{MessageID: press.ID, Content: messaging.Content{Kind: messaging.KindText}, DeletedAt: &gone, UpdatedAt: gone}}}))
		got, err = r.Message(ctx, a, press.ID)
		require.NoError(t, err)
		require.Equal(t, messaging.Content{Kind: messaging.KindText}, got.Content, "a deleted press keeps no button id")

		_, err = r.MessageForUpdate(ctx, b, text.ID)
		notFound(t, err, "another account's message")
	})

	t.Run("MessageForUpdateOrdersChangesOfOneMessage", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		m := chatMessage(th, messaging.Inbound, "v0", at)
		f.commit(t, m)
		// Two decisions each append to the text they read: the second
		// waits for the first and reads its change, so neither is lost.
		appendText := func(suffix string, locked chan<- struct{}, hold time.Duration) error {
			return f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
				cur, err := tx.MessageForUpdate(ctx, a, m.ID)
				if err != nil {
					return writes.Batch{}, err
				}
				if locked != nil {
					close(locked)
				}
				time.Sleep(hold)
				when := at.Add(time.Minute)
				return writes.Batch{MessageChanges: []writes.MessageChange{{MessageID: m.ID,
					Content: cur.Content.WithEditedText(cur.Content.Text + suffix), PreviousText: cur.Content.Text, EditedAt: &when, UpdatedAt: when}}}, nil
			})
		}
		locked := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- appendText("+a", locked, 300*time.Millisecond) }()
		<-locked
		require.NoError(t, appendText("+b", nil, 0))
		require.NoError(t, <-done)
		got, err := f.Store.Repos().Message(ctx, a, m.ID)
		require.NoError(t, err)
		require.Equal(t, "v0+a+b", got.Content.Text)
		require.Equal(t, "v0+a", got.PreviousText)
		_, err = f.Store.Repos().MessageForUpdate(ctx, a, ident.New(ident.Message))
		notFound(t, err, "a message that does not exist")
	})

	t.Run("RepliesKeepWhatTheyQuote", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		q := chatMessage(th, messaging.Inbound, "which one?", at)
		known := chatMessage(th, messaging.OutboundAPI, "this one", at.Add(time.Second))
		known.ReplyTo = messaging.Reply{MessageID: q.ID, ProviderMessageID: "wamid.q", Text: "which one?"}
		unknown := chatMessage(th, messaging.Inbound, "and that?", at.Add(2*time.Second))
		unknown.ReplyTo = messaging.Reply{ProviderMessageID: "wamid.gone"}
		f.commit(t, q, known, unknown)
		r := f.Store.Repos()
		for _, m := range []messaging.Message{q, known, unknown} {
			got, err := r.Message(ctx, a, m.ID)
			require.NoError(t, err)
			require.Equal(t, m, got)
		}
	})

	t.Run("ButtonsStayWithTheirMessages", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		th := f.thread(t, individualThread(a, account.Telegram, "+14155550100", "987654321", at))
		offer := chatMessage(th, messaging.OutboundAPI, "Deliver tomorrow?", at)
		offer.Content.Buttons = []messaging.Button{{ID: "yes", Title: "Yes \"please\" 🇩🇪"}, {ID: "it's $1 ?", Title: "No"}}
		offer.ProviderMessageID = "num_tg:987654321:7"
		press := chatMessage(th, messaging.Inbound, "", at.Add(time.Second))
		press.Content = messaging.Content{Kind: messaging.KindButtonReply, ButtonID: "it's $1 ?", Text: "No"}
		press.ReplyTo = messaging.Reply{MessageID: offer.ID, ProviderMessageID: offer.ProviderMessageID, Text: "Deliver tomorrow?"}
		press.ProviderMessageID = "num_tg:callback:4382"
		plain := chatMessage(th, messaging.OutboundAPI, "no buttons", at.Add(2*time.Second))
		f.commit(t, offer, press, plain)
		r := f.Store.Repos()
		for _, m := range []messaging.Message{offer, press, plain} {
			got, err := r.Message(ctx, a, m.ID)
			require.NoError(t, err)
			require.Equal(t, m, got)
		}
		require.Nil(t, plain.Content.Buttons)
		byProvider, err := r.MessageByProviderID(ctx, account.Telegram, press.ProviderMessageID)
		require.NoError(t, err)
		require.Equal(t, press, byProvider)
		recent, err := r.RecentMessages(ctx, a, th.ID, 5)
		require.NoError(t, err)
		require.Equal(t, []messaging.Message{plain, press, offer}, recent)
		page, err := r.ThreadMessages(ctx, a, th.ID, nil, 5)
		require.NoError(t, err)
		require.ElementsMatch(t, []messaging.Message{plain, press, offer}, page)
	})

	t.Run("RecentMessagesNewestFirstForTheAccount", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		next := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345679", at))
		ms := make([]messaging.Message, 5)
		for i := range ms {
			dir := messaging.OutboundAPI
			if i%2 == 1 {
				dir = messaging.Inbound
			}
			ms[i] = chatMessage(th, dir, "m", at.Add(time.Duration(i)*time.Second))
		}
		for _, i := range []int{2, 0, 4, 1, 3} {
			f.commit(t, ms[i])
		}
		elsewhere := chatMessage(next, messaging.Inbound, "elsewhere", at.Add(time.Hour))
		f.commit(t, elsewhere)
		r := f.Store.Repos()

		recent, err := r.RecentMessages(ctx, a, th.ID, 3)
		require.NoError(t, err)
		require.Equal(t, []messaging.Message{ms[4], ms[3], ms[2]}, recent, "the newest, newest first")
		recent, err = r.RecentMessages(ctx, a, th.ID, 10)
		require.NoError(t, err)
		require.Equal(t, []string{ms[4].ID, ms[3].ID, ms[2].ID, ms[1].ID, ms[0].ID}, messageIDs(recent))
		recent, err = r.RecentMessages(ctx, a, next.ID, 10)
		require.NoError(t, err)
		require.Equal(t, []messaging.Message{elsewhere}, recent, "one thread's messages only")
		recent, err = r.RecentMessages(ctx, b, th.ID, 10)
		require.NoError(t, err)
		require.Empty(t, recent, "another account's thread has no messages for it")
		recent, err = r.RecentMessages(ctx, a, "thr_missing", 10)
		require.NoError(t, err)
		require.Empty(t, recent)
	})

	t.Run("ThreadMessagesPageNewestFirstFromACursor", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		other := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345679", at))
		// Pairs made in the same microsecond: their ids order them.
		offsets := []time.Duration{0, time.Second, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 4 * time.Second}
		ms := make([]messaging.Message, len(offsets))
		for i, d := range offsets {
			dir := messaging.OutboundAPI
			if i%2 == 1 {
				dir = messaging.Inbound
			}
			ms[i] = chatMessage(th, dir, fmt.Sprint("m", i), at.Add(d))
		}
		for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
			f.commit(t, ms[i])
		}
		elsewhere := chatMessage(other, messaging.Inbound, "elsewhere", at.Add(time.Second))
		f.commit(t, elsewhere)
		want := slices.Clone(ms)
		slices.SortFunc(want, func(x, y messaging.Message) int {
			if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(y.ID, x.ID)
		})
		r := f.Store.Repos()

		all, err := r.ThreadMessages(ctx, a, th.ID, nil, 100)
		require.NoError(t, err)
		require.Equal(t, want, all, "newest first, then by id; the thread's messages only")

		var walked []messaging.Message
		var before *appmessaging.MessageCursor
		for range len(ms) {
			page, err := r.ThreadMessages(ctx, a, th.ID, before, 3)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 3, "at most limit")
			if f.Pages != nil {
				batched, err := f.Pages.MessagePages(ctx, a, []string{other.ID, th.ID}, before, 3)
				require.NoError(t, err)
				require.Equal(t, nonNil(page), nonNil(batched[th.ID]), "the batched read pages alike")
			}
			if len(page) == 0 {
				break
			}
			walked = append(walked, page...)
			c := appmessaging.MessageCursorOf(page[len(page)-1])
			before = &c
		}
		require.Equal(t, want, walked, "pages of 3 from each last message: each message once, in order")

		none, err := r.ThreadMessages(ctx, a, th.ID, nil, 0)
		require.NoError(t, err)
		require.Empty(t, none, "limit 0")
		newest, err := r.ThreadMessages(ctx, a, th.ID, nil, 1)
		require.NoError(t, err)
		require.Equal(t, want[:1], newest)
		oldest := appmessaging.MessageCursorOf(want[len(want)-1])
		none, err = r.ThreadMessages(ctx, a, th.ID, &oldest, 10)
		require.NoError(t, err)
		require.Empty(t, none, "nothing is older than the oldest")

		none, err = r.ThreadMessages(ctx, b, th.ID, nil, 10)
		require.NoError(t, err)
		require.Empty(t, none, "another account's thread has no messages for it")
		mid := appmessaging.MessageCursorOf(want[2])
		none, err = r.ThreadMessages(ctx, b, th.ID, &mid, 10)
		require.NoError(t, err)
		require.Empty(t, none, "nor from a position in it")
		none, err = r.ThreadMessages(ctx, a, "thr_missing", nil, 10)
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("ThreadMessagesPagesEveryMessageOnceWhileMessagesArrive", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at))
		history := make([]messaging.Message, 45)
		for i := range history {
			history[i] = chatMessage(th, messaging.Inbound, fmt.Sprint("old ", i), at.Add(time.Duration(i)*time.Second))
		}
		f.commit(t, history...)
		r := f.Store.Repos()

		first, err := r.ThreadMessages(ctx, a, th.ID, nil, 10)
		require.NoError(t, err)
		// Newer messages arrive all through the walk, each with a later
		// time than any before it, as sends and inbound messages get.
		var arrived atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m := chatMessage(th, messaging.Inbound, fmt.Sprint("new ", i), at.Add(time.Hour+time.Duration(i)*time.Millisecond))
				if err := f.Committer.Commit(ctx, writes.Batch{Messages: []messaging.Message{m}}); err != nil {
					t.Errorf("new message %d: %v", i, err)
					return
				}
				arrived.Add(1)
			}
		})
		walked := slices.Clone(first)
		for page := first; len(page) == 10; {
			// Wait for an arrival between pages, so that every page is
			// read after a newer message was stored.
			seen := arrived.Load()
			for arrived.Load() == seen && !t.Failed() {
				time.Sleep(time.Millisecond)
			}
			c := appmessaging.MessageCursorOf(page[len(page)-1])
			page, err = r.ThreadMessages(ctx, a, th.ID, &c, 10)
			require.NoError(t, err)
			walked = append(walked, page...)
		}
		close(stop)
		wg.Wait()
		require.Positive(t, arrived.Load())
		want := slices.Clone(history)
		slices.Reverse(want)
		require.Equal(t, messageIDs(want), messageIDs(walked), "the history, newest first, each message once")
	})

	t.Run("MessagesToDeliver", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		n := f.agent(t, a, account.Telegram, "+15550003333", account.ProviderSandbox)
		f.agent(t, a, account.WhatsApp, "+15550004444", account.ProviderSandbox)
		individual := f.thread(t, individualThread(a, account.Telegram, n.Number, "+15550004444", at))
		group := f.thread(t, groupThread(a, account.Telegram, n.Number, at),
			messaging.Participant{Address: n.Number, IsAgent: true}, messaging.Participant{Address: "+15550001234"})
		m1 := chatMessage(individual, messaging.OutboundAPI, "to one", at)
		m2 := chatMessage(group, messaging.OutboundAPI, "to all", at)
		// From an address that is an agent number on another service
		// only, and from one no number has.
		m3 := chatMessage(individual, messaging.OutboundAPI, "other service", at)
		m3.From = "+15550004444"
		m4 := chatMessage(individual, messaging.OutboundAPI, "nobody's", at)
		m4.From = "+15559999999"
		f.commit(t, m1, m2, m3, m4)
		r := f.Store.Repos()

		got, err := r.MessagesToDeliver(ctx, []string{m3.ID, "msg_missing", m1.ID, m2.ID, m4.ID})
		require.NoError(t, err)
		byID := map[string]appmessaging.Deliverable{}
		for _, d := range got {
			byID[d.Message.ID] = d
		}
		require.Len(t, got, 4, "the missing id is left out")
		require.Len(t, byID, 4, "each message once")
		require.Equal(t, appmessaging.Deliverable{Message: m1, ThreadType: messaging.Individual, Number: n, NumberFound: true}, byID[m1.ID],
			"the sending number, settings included")
		require.Equal(t, appmessaging.Deliverable{Message: m2, ThreadType: messaging.Group, Number: n, NumberFound: true}, byID[m2.ID])
		require.Equal(t, appmessaging.Deliverable{Message: m3, ThreadType: messaging.Individual}, byID[m3.ID], "no number has that address on the message's service")
		require.Equal(t, appmessaging.Deliverable{Message: m4, ThreadType: messaging.Individual}, byID[m4.ID], "no number has that address")

		none, err := r.MessagesToDeliver(ctx, []string{"msg_missing"})
		require.NoError(t, err)
		require.Empty(t, none)
		none, err = r.MessagesToDeliver(ctx, nil)
		require.NoError(t, err)
		require.Empty(t, none)

		// The number as it is at delivery, not when the message was written.
		disabled, err := f.Accounts.Repos().SetNumberEnabled(ctx, a, n.ID, false)
		require.NoError(t, err)
		got, err = r.MessagesToDeliver(ctx, []string{m1.ID})
		require.NoError(t, err)
		require.Equal(t, []appmessaging.Deliverable{{Message: m1, ThreadType: messaging.Individual, Number: disabled, NumberFound: true}}, got)
		require.False(t, got[0].Number.Enabled)
	})

	t.Run("InboundActivityIsRepeatable", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		user := "+4917012345678"
		th := f.thread(t, individualThread(a, account.WhatsApp, "+14155550100", user, at))
		// Nothing reads contacts back through this port: what the
		// contract holds is that recording a user again, with or without
		// a name, on another service or account, twice in one batch, or
		// in a decision, always succeeds.
		wrote := func(accountID string, service account.Service, name string, at time.Time) writes.InboundActivity {
			return writes.InboundActivity{AccountID: accountID, Service: service, Address: user, Name: name, ThreadID: th.ID, At: at}
		}
		for _, activity := range [][]writes.InboundActivity{
			{wrote(a, account.WhatsApp, "Ann", at)},
			{wrote(a, account.WhatsApp, "", at.Add(time.Minute))},
			{wrote(a, account.WhatsApp, "Ann B", at.Add(2*time.Minute))},
			{wrote(a, account.Telegram, "Ann", at)},
			{wrote(b, account.WhatsApp, "Ann", at)},
			{wrote(a, account.WhatsApp, "Ann C", at.Add(3*time.Minute)), wrote(a, account.WhatsApp, "", at.Add(4*time.Minute))},
		} {
			require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Inbound: activity}))
		}
		require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
			return writes.Batch{Inbound: []writes.InboundActivity{wrote(a, account.WhatsApp, "Ann D", at.Add(5*time.Minute))}}, nil
		}))
	})

	t.Run("Groups", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		agent := "+14155550100"
		g := messaging.GroupState{
			Thread: groupThread(a, account.WhatsApp, agent, at), Description: "The team's room", PictureURL: "https://files.example.com/team.png",
			InviteCode: "inv-1", Announcement: true, InviteLink: "https://chat.whatsapp.com/Inv1", Creating: true,
			Members: []messaging.Participant{
				{Address: agent, IsAgent: true, Admin: true},
				{Address: "+4917000000001", Name: "Ann", Admin: true},
				{Address: "+4917000000002", Name: "Bob"},
			},
		}
		r := f.Store.Repos()
		groups := func(gs ...messaging.GroupState) writes.Batch { return writes.Batch{Groups: gs} }
		require.NoError(t, f.Committer.Commit(ctx, groups(g)))

		got, err := r.Group(ctx, a, g.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, g, got)
		got, err = r.GroupByInviteCode(ctx, a, "inv-1")
		require.NoError(t, err)
		require.Equal(t, g, got)
		th, err := r.Thread(ctx, a, g.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, g.Thread, th, "a group is a thread")
		parts, err := r.Participants(ctx, g.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, g.Members, parts, "its members are its participants")

		_, err = r.Group(ctx, b, g.Thread.ID)
		notFound(t, err, "another account's group")
		_, err = r.GroupByInviteCode(ctx, b, "inv-1")
		notFound(t, err, "another account's invite code")
		_, err = r.GroupByInviteCode(ctx, a, "inv-x")
		notFound(t, err, "an unknown invite code")
		_, err = r.Group(ctx, a, "thr_missing")
		notFound(t, err, "a missing group")
		ind := f.thread(t, individualThread(a, account.WhatsApp, agent, "+4917000000001", at))
		_, err = r.Group(ctx, a, ind.ID)
		notFound(t, err, "an individual thread")
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{GroupStates: []messaging.GroupState{{Thread: ind}}}))
		th, err = r.IndividualThread(ctx, a, account.WhatsApp, agent, "+4917000000001")
		require.NoError(t, err)
		require.Equal(t, ind, th, "the state of a group is not written on an individual thread")

		// A taken invite code refuses the batch, and nothing of it stays.
		taken := messaging.GroupState{Thread: groupThread(a, account.WhatsApp, agent, at), InviteCode: "inv-1",
			Members: []messaging.Participant{{Address: agent, IsAgent: true, Admin: true}}}
		err = f.Committer.Commit(ctx, groups(taken))
		require.True(t, failure.Is(err, failure.KindConflict), "a taken invite code: %v", err)
		_, err = r.Thread(ctx, a, taken.Thread.ID)
		notFound(t, err, "the refused group")
		require.NoError(t, f.Committer.Commit(ctx, groups(messaging.GroupState{Thread: groupThread(a, account.WhatsApp, agent, at)},
			messaging.GroupState{Thread: groupThread(a, account.WhatsApp, agent, at)})), "groups without invite codes")

		// Saving replaces the state and the members: one leaves, one
		// joins, one is demoted.
		g.Thread.Name, g.Thread.UpdatedAt = "Team 2", at.Add(time.Hour)
		g.Description, g.PictureURL, g.InviteCode, g.Announcement, g.Locked = "", "https://files.example.com/t2.png", "inv-2", false, true
		g.InviteLink, g.Creating = "https://chat.whatsapp.com/Inv2", false
		g.Members = []messaging.Participant{
			{Address: agent, IsAgent: true, Admin: true},
			{Address: "+4917000000001", Name: "Ann"},
			{Address: "+4917000000003", Name: "Cy", Admin: true},
		}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{GroupStates: []messaging.GroupState{g}}))
		got, err = r.Group(ctx, a, g.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, g, got)
		_, err = r.GroupByInviteCode(ctx, a, "inv-1")
		notFound(t, err, "the replaced invite code")
		got, err = r.GroupByInviteCode(ctx, a, "inv-2")
		require.NoError(t, err)
		require.Equal(t, g, got)
		parts, err = r.Participants(ctx, g.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, g.Members, parts)

		// Read and saved in one decision, as the group use cases do.
		require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
			cur, err := tx.Group(ctx, a, g.Thread.ID)
			if err != nil {
				return writes.Batch{}, err
			}
			cur.InviteCode, cur.Members = "", cur.Members[:1]
			return writes.Batch{GroupStates: []messaging.GroupState{cur}}, nil
		}))
		got, err = r.Group(ctx, a, g.Thread.ID)
		require.NoError(t, err)
		g.InviteCode, g.Members = "", g.Members[:1]
		require.Equal(t, g, got, "the invite code revoked, the agent alone")
		_, err = r.GroupByInviteCode(ctx, a, "inv-2")
		notFound(t, err, "a revoked invite code")
	})

	t.Run("DecideWritesItsBatchInItsTransaction", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		agent := "+14155550100"
		th := f.thread(t, individualThread(a, account.WhatsApp, agent, "+4917012345678", at))
		r := f.Store.Repos()
		boom := errors.New("boom")
		decided := false
		err := f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
			decided = true
			return writes.Batch{Messages: []messaging.Message{chatMessage(th, messaging.OutboundAPI, "maybe", at)}}, boom
		})
		require.ErrorIs(t, err, boom)
		require.True(t, decided)
		recent, err := r.RecentMessages(ctx, a, th.ID, 10)
		require.NoError(t, err)
		require.Empty(t, recent, "a failed decision writes nothing")

		// Committed together: a thread made by the decision, and the
		// batch's message in it.
		var made messaging.Thread
		require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
			b, th, err := decideAlone(ctx, tx, a, agent, "+4917012345679", at.Add(time.Minute))
			made = th
			return b, err
		}))
		got, err := r.Thread(ctx, a, made.ID)
		require.NoError(t, err)
		require.True(t, got.UpdatedAt.Equal(at.Add(time.Minute)), "got %v", got.UpdatedAt)
		recent, err = r.RecentMessages(ctx, a, made.ID, 10)
		require.NoError(t, err)
		require.Len(t, recent, 1)

		// A refused batch writes nothing of the decision.
		third := chatMessage(th, messaging.OutboundAPI, "third", at.Add(2*time.Minute))
		err = f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
			return writes.Batch{Messages: []messaging.Message{third, recent[0]}}, nil
		})
		require.True(t, failure.Is(err, failure.KindConflict), "a taken message id: %v", err)
		_, err = r.Message(ctx, a, third.ID)
		notFound(t, err, "the refused batch's other message")

		// The answers a batch holds are the same answers in a decision
		// and through the committer.
		answer := idempotency.Response{Status: 202, Body: []byte(`{"id":"msg_1"}`)}
		keyed := writes.Batch{Messages: []messaging.Message{third}, Answers: []writes.Answer{{AccountID: a, Key: "k1", Response: answer}}}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Answers: keyed.Answers}))
		require.ErrorIs(t, f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) { return keyed, nil }),
			idempotency.ErrAnsweredElsewhere)
		_, err = r.Message(ctx, a, third.ID)
		notFound(t, err, "no refused batch wrote its message")
		keyed.Answers[0].Key = "k2"
		require.NoError(t, f.Store.Decide(ctx, func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) { return keyed, nil }))
		require.ErrorIs(t, f.Committer.Commit(ctx, writes.Batch{Answers: keyed.Answers}),
			idempotency.ErrAnsweredElsewhere, "the committer sees a decision's answers")
	})

	t.Run("ConcurrentFirstMessagesShareOneThread", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		agent, user := "+14155550100", "+4917012345678"
		const n = 6
		threads := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				// What receiving a user's first message does: a thread
				// made by a concurrent decision fails the batch with
				// ErrThreadExists, and deciding again finds it.
				decide := func(ctx context.Context, tx appmessaging.TxReads) (writes.Batch, error) {
					b, th, err := decideAlone(ctx, tx, a, agent, user, at.Add(time.Duration(i)*time.Second))
					threads[i] = th.ID
					return b, err
				}
				errs[i] = f.Store.Decide(ctx, decide)
				if errors.Is(errs[i], writes.ErrThreadExists) {
					errs[i] = f.Store.Decide(ctx, decide)
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "message %d", i)
		}
		for i := range threads {
			require.Equal(t, threads[0], threads[i], "message %d went to the one thread", i)
		}
		r := f.Store.Repos()
		list, total, err := r.Threads(ctx, appmessaging.ThreadQuery{AccountID: a, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, 1, total)
		require.Equal(t, []string{threads[0]}, summaryIDs(list))
		recent, err := r.RecentMessages(ctx, a, threads[0], 2*n)
		require.NoError(t, err)
		require.Len(t, recent, n)
		parts, err := r.Participants(ctx, threads[0])
		require.NoError(t, err)
		require.Len(t, parts, 2)
	})
}

// normalize makes a summary's empty participants an empty slice, so that
// a store returning nil and one returning an empty slice compare alike.
func normalize(s appmessaging.ThreadSummary) appmessaging.ThreadSummary {
	if s.Participants == nil {
		s.Participants = []messaging.Participant{}
	}
	return s
}

// nonNil makes a missing page an empty slice's equal: a store may answer
// no page with nil.
func nonNil(ms []messaging.Message) []messaging.Message {
	if ms == nil {
		return []messaging.Message{}
	}
	return ms
}
