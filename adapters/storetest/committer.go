package storetest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/erasure"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// JobClaimer claims due jobs, as the job runner does; the committer
// contract reads the jobs that batches enqueued through it.
type JobClaimer interface {
	ClaimJobs(ctx context.Context, worker string, leases []jobs.Lease, limit int, now time.Time, filter jobs.ClaimFilter) ([]jobs.Job, error)
}

// CommitterFixture is a committer on an empty database, the account and
// messaging ports that create the rows its batches refer to, and the ports
// that read back what it wrote.
type CommitterFixture struct {
	Committer writes.Committer
	Accounts  accounts.Store
	Channels  channels.Store
	// Cron reads back cron jobs; the case of Batch.CronJobs is skipped
	// without it.
	Cron      appcron.Store
	Messaging appmessaging.Store
	Webhooks  webhooks.Store
	Email     appemail.Store
	Keys      idempotency.Store
	Jobs      JobClaimer
	// Erasure tells which erasures were recorded; the case of
	// Batch.Erasures is skipped without it.
	Erasure apperasure.Store
}

// commitKind is the kind of the jobs the committer contract enqueues.
const commitKind = "commit.test"

// commitBundle is a committer fixture with an account and an individual
// thread of it to write into.
type commitBundle struct {
	CommitterFixture
	account string
	thread  messaging.Thread
	now     time.Time
}

func newCommitBundle(t *testing.T, open func(t *testing.T) CommitterFixture) commitBundle {
	t.Helper()
	ctx := context.Background()
	f := open(t)
	// The real clock: the store stamps answers and jobs with its own.
	now := time.Now().UTC().Truncate(time.Microsecond)
	acc := account.Account{ID: "acc_rows", Name: "rows", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.Accounts.Repos().InsertAccount(ctx, acc))
	th := messaging.Thread{ID: "thr_commit", AccountID: acc.ID, Service: account.WhatsApp, Type: messaging.Individual,
		AgentNumber: "+15550001000", Contact: "+15550002000", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: th}}}))
	return commitBundle{CommitterFixture: f, account: acc.ID, thread: th, now: now}
}

// send is what a send decides: the message, the thread's activity, the
// event, a delivery of it, the job, and an answer.
func (b commitBundle) send(id string) writes.Batch {
	at := b.now.Add(time.Second)
	m := messaging.Message{ID: id, AccountID: b.account, ThreadID: b.thread.ID, Service: account.WhatsApp, Direction: messaging.OutboundAPI,
		From: b.thread.AgentNumber, To: b.thread.Contact, Content: messaging.Content{Kind: messaging.KindText, Text: "it's \"quoted\" ? $1"},
		Status: messaging.Queued, CreatedAt: at, UpdatedAt: at}
	e := event.Event{ID: "evt_" + id, AccountID: b.account, Type: event.MessageSent, ThreadID: b.thread.ID, Payload: []byte(`{"id":"` + id + `"}`), CreatedAt: at}
	d := webhook.Delivery{ID: "whk_" + id, AccountID: b.account, EventID: e.ID, EventType: e.Type, ThreadID: b.thread.ID,
		Status: webhook.Pending, NextAttemptAt: at, CreatedAt: at, UpdatedAt: at}
	return writes.Batch{
		Messages:       []messaging.Message{m},
		ThreadActivity: []writes.ThreadActivity{{ThreadID: b.thread.ID, At: at}},
		Events:         []event.Event{e},
		Deliveries:     []webhook.Delivery{d},
		Jobs:           []jobs.EnqueueParams{{Kind: commitKind, Payload: []byte(id), AccountID: b.account, PaceKey: "p", EndpointKey: "e"}},
		Answers:        []writes.Answer{{AccountID: b.account, Key: "key-" + id, Response: idempotency.Response{Status: 200, Body: []byte(id)}}},
	}
}

// jobs claims every job the batches enqueued; call it once per test.
func (b commitBundle) jobs(t *testing.T) []jobs.Job {
	t.Helper()
	later := b.now.Add(time.Hour)
	claimed, err := b.Jobs.ClaimJobs(context.Background(), "commit-contract", []jobs.Lease{{Kind: commitKind, Until: later.Add(time.Minute)}}, 1000, later, jobs.ClaimFilter{})
	require.NoError(t, err)
	return claimed
}

// Committer runs the contract of writes.Committer against the fixture
// that open returns; open must give each call its own empty, migrated
// database. Every batch is written all or nothing, and what it wrote reads
// back through the ports of the rows.
func Committer(t *testing.T, open func(t *testing.T) CommitterFixture) {
	ctx := context.Background()

	t.Run("WritesEverythingItHolds", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		b := f.send("msg_all")
		_, err := f.Keys.ReserveKey(ctx, f.account, "key-msg_all", "fp", f.now, time.Minute)
		require.NoError(t, err)
		require.NoError(t, f.Committer.Commit(ctx, b))
		r := f.Messaging.Repos()
		m, err := r.Message(ctx, f.account, "msg_all")
		require.NoError(t, err)
		require.Equal(t, b.Messages[0], m, "the text reads back as written, placeholders and quotes included")
		th, err := r.Thread(ctx, f.account, f.thread.ID)
		require.NoError(t, err)
		require.True(t, th.UpdatedAt.Equal(b.ThreadActivity[0].At), "the thread's activity moved")
		events, err := f.Webhooks.Repos().EventsAfter(ctx, f.account, "", 10)
		require.NoError(t, err)
		require.Len(t, events, 1)
		require.Equal(t, b.Events[0].ID, events[0].ID)
		require.Equal(t, b.Events[0].Payload, events[0].Payload)
		d, err := f.Webhooks.Repos().WebhookDelivery(ctx, f.account, "whk_msg_all")
		require.NoError(t, err)
		require.Equal(t, webhook.Pending, d.Status)
		require.Equal(t, b.Events[0].ID, d.EventID)
		claimed := f.jobs(t)
		require.Len(t, claimed, 1)
		j := claimed[0]
		require.Equal(t, []any{commitKind, []byte("msg_all"), f.account, "p", "e"}, []any{j.Kind, j.Payload, j.AccountID, j.PaceKey, j.EndpointKey},
			"the job reads back as enqueued")
		res, err := f.Keys.ReserveKey(ctx, f.account, "key-msg_all", "fp", f.now.Add(time.Second), time.Minute)
		require.NoError(t, err)
		require.Equal(t, idempotency.Replay, res.Outcome)
		require.Equal(t, []byte("msg_all"), res.Response.Body)
	})

	t.Run("WritesThreadsGroupsAndInboundActivity", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		at := f.now.Add(time.Minute)
		agent, user := f.thread.AgentNumber, "+15550003000"
		th := messaging.Thread{ID: "thr_new", AccountID: f.account, Service: account.WhatsApp, Type: messaging.Individual,
			AgentNumber: agent, Contact: user, Name: "Ann", CreatedAt: at, UpdatedAt: at}
		group := messaging.GroupState{
			Thread: messaging.Thread{ID: "thr_group", AccountID: f.account, Service: account.WhatsApp, Type: messaging.Group,
				AgentNumber: agent, Name: "Team", CreatedAt: at, UpdatedAt: at},
			Description: "it's ours", InviteCode: "inv-commit",
			Members: []messaging.Participant{{Address: agent, IsAgent: true, Admin: true}, {Address: user, Name: "Ann"}},
		}
		in := chatMessage(th, messaging.Inbound, "hello", at)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{
			Threads:  []writes.NewThread{{Thread: th, Participants: []messaging.Participant{{Address: agent, IsAgent: true}, {Address: user, Name: "Ann"}}}},
			Groups:   []messaging.GroupState{group},
			Messages: []messaging.Message{in},
			Inbound:  []writes.InboundActivity{{AccountID: f.account, Service: account.WhatsApp, Address: user, Name: "Ann", ThreadID: th.ID, At: at}},
		}))
		r := f.Messaging.Repos()
		got, err := r.IndividualThread(ctx, f.account, account.WhatsApp, agent, user)
		require.NoError(t, err)
		th.LastInboundAt = &at
		require.Equal(t, th, got, "the new thread, with the user's activity")
		parts, err := r.Participants(ctx, th.ID)
		require.NoError(t, err)
		require.Equal(t, []messaging.Participant{{Address: agent, IsAgent: true}, {Address: user, Name: "Ann"}}, parts)
		gotGroup, err := r.Group(ctx, f.account, group.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, group, gotGroup, "the new group, with its members")

		// The group's new state: one member leaves, one joins, the agent
		// is no longer an admin.
		group.Thread.Name, group.Thread.UpdatedAt, group.InviteCode, group.Locked = "Team 2", at.Add(time.Minute), "", true
		group.Members = []messaging.Participant{{Address: agent, IsAgent: true}, {Address: "+15550004000", Name: "Bo"}}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{GroupStates: []messaging.GroupState{group}}))
		gotGroup, err = r.Group(ctx, f.account, group.Thread.ID)
		require.NoError(t, err)
		require.Equal(t, group, gotGroup)

		// A second individual thread of the pair is refused, with nothing
		// of its batch.
		dup := th
		dup.ID, dup.LastInboundAt = "thr_dup", nil
		err = f.Committer.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: dup}}, Messages: []messaging.Message{chatMessage(dup, messaging.Inbound, "again", at)}})
		require.ErrorIs(t, err, writes.ErrThreadExists)
		_, err = r.Thread(ctx, f.account, dup.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
	})

	t.Run("MovesWindowsForwardOnly", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		window := func() *time.Time {
			got, err := f.Messaging.Repos().Thread(ctx, f.account, f.thread.ID)
			require.NoError(t, err)
			return got.WindowClosesAt
		}
		require.Nil(t, window(), "a thread has no window until a batch opens one")
		closes := f.now.Add(24 * time.Hour)
		earlier, later := closes.Add(-time.Hour), closes.Add(time.Hour)
		// Of two windows of a thread in one batch the later counts.
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Windows: []writes.ThreadWindow{
			{ThreadID: f.thread.ID, ClosesAt: closes}, {ThreadID: f.thread.ID, ClosesAt: earlier}}}))
		require.True(t, window().Equal(closes), "got %v", window())
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Windows: []writes.ThreadWindow{{ThreadID: f.thread.ID, ClosesAt: earlier}}}))
		require.True(t, window().Equal(closes), "a window never closes earlier: got %v", window())
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Windows: []writes.ThreadWindow{{ThreadID: f.thread.ID, ClosesAt: later.Add(time.Microsecond)}}}))
		require.True(t, window().Equal(later.Add(time.Microsecond)), "a later message moves it on: got %v", window())
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Windows: []writes.ThreadWindow{{ThreadID: f.thread.ID, ClosesAt: later}}}))
		require.True(t, window().Equal(later.Add(time.Microsecond)), "a microsecond earlier is earlier: got %v", window())
	})

	t.Run("ReplacesTemplateSets", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		at := f.now.Add(time.Minute)
		number := func(id, e164 string) account.Number {
			n := account.Number{ID: id, AccountID: f.account, Number: e164, Service: account.WhatsApp,
				Provider: account.ProviderWhatsAppCloud, SealedSettings: []byte{1}, Enabled: true, CreatedAt: at}
			require.NoError(t, f.Accounts.Repos().InsertNumber(ctx, n))
			return n
		}
		one, two := number("num_tpl1", "+15550007001"), number("num_tpl2", "+15550007002")
		template := func(name, language, status string) messaging.Template {
			return messaging.Template{ProviderID: "tpl-" + name, Name: name, Language: language, Status: status, Category: "UTILITY",
				ParameterFormat: messaging.ParametersPositional, Components: []messaging.TemplateComponent{
					{Type: "BODY", Text: "Hi {{1}}, it's \"quoted\" ? $1"},
					{Type: "BUTTONS", Buttons: []messaging.TemplateButton{{Type: "URL", Text: "Open", URL: "https://example.com/{{1}}"}}},
				}}
		}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{TemplateSets: []writes.TemplateSet{
			{AccountID: f.account, NumberID: one.ID, SyncedAt: at, Templates: []messaging.Template{
				template("order_update", "en_US", messaging.TemplateApproved), template("order_update", "es", "PAUSED")}},
			{AccountID: f.account, NumberID: two.ID, SyncedAt: at, Templates: []messaging.Template{template("welcome", "en", messaging.TemplateApproved)}},
		}}))
		r := f.Messaging.Repos()
		got, err := r.Templates(ctx, appmessaging.TemplateQuery{AccountID: f.account, NumberID: one.ID})
		require.NoError(t, err)
		want := template("order_update", "en_US", messaging.TemplateApproved)
		want.AccountID, want.NumberID, want.Number, want.SyncedAt = f.account, one.ID, one.Number, at
		require.Len(t, got, 2)
		require.Equal(t, want, got[0], "a template reads back whole")
		require.Equal(t, "es", got[1].Language)

		// A later set replaces the number's whole set; the other number's
		// stays.
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{TemplateSets: []writes.TemplateSet{
			{AccountID: f.account, NumberID: one.ID, SyncedAt: at.Add(time.Minute), Templates: []messaging.Template{template("shipping", "en_US", messaging.TemplateApproved)}},
		}}))
		got, err = r.Templates(ctx, appmessaging.TemplateQuery{AccountID: f.account})
		require.NoError(t, err)
		require.Len(t, got, 2)
		require.Equal(t, []string{"shipping", "welcome"}, []string{got[0].Name, got[1].Name})
		got, err = r.Templates(ctx, appmessaging.TemplateQuery{AccountID: f.account, Name: "welcome", Language: "en", Status: messaging.TemplateApproved})
		require.NoError(t, err)
		require.Len(t, got, 1)
		got, err = r.Templates(ctx, appmessaging.TemplateQuery{AccountID: "acc_other"})
		require.NoError(t, err)
		require.Empty(t, got, "another account has none of them")

		// A template message keeps what it sent.
		m := chatMessage(f.thread, messaging.OutboundAPI, "Hi Ann", at)
		m.Content.Kind = messaging.KindTemplate
		m.Content.Template = &messaging.TemplateSend{Name: "shipping", Language: "en_US", Components: []messaging.TemplateSendComponent{
			{Type: "button", SubType: "url", Index: 1, Parameters: []messaging.TemplateParameter{{Type: "text", Text: "abc"}}},
			{Type: "body", Parameters: []messaging.TemplateParameter{{Type: "currency", Currency: &messaging.TemplateCurrency{FallbackValue: "$1", Code: "USD", Amount1000: 1000}}}},
		}}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Messages: []messaging.Message{m}}))
		read, err := r.Message(ctx, f.account, m.ID)
		require.NoError(t, err)
		require.Equal(t, m.Content, read.Content)
	})

	t.Run("LinksGroupChats", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		at := f.now.Add(time.Minute)
		bot := account.Number{ID: "num_bot", AccountID: f.account, Number: "+15550009000", Service: account.Telegram,
			Provider: account.ProviderTelegram, SealedSettings: []byte{1}, Enabled: true, CreatedAt: at}
		require.NoError(t, f.Accounts.Repos().InsertNumber(ctx, bot))
		group := func(id string) messaging.GroupState {
			return messaging.GroupState{
				Thread: messaging.Thread{ID: id, AccountID: f.account, Service: account.Telegram, Type: messaging.Group,
					AgentNumber: bot.Number, Name: "Team", CreatedAt: at, UpdatedAt: at},
				Members: []messaging.Participant{{Address: bot.Number, IsAgent: true, Admin: true}},
			}
		}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{
			Groups:     []messaging.GroupState{group("thr_chat")},
			GroupChats: []writes.GroupChat{{NumberID: bot.ID, ChatID: "-100123", ThreadID: "thr_chat", At: at}},
		}))
		r := f.Channels.Repos()
		id, err := r.GroupChatThread(ctx, bot.ID, "-100123")
		require.NoError(t, err)
		require.Equal(t, "thr_chat", id, "the chat is linked to the group made in the same batch")
		chat, err := r.ThreadGroupChat(ctx, bot.ID, "thr_chat")
		require.NoError(t, err)
		require.Equal(t, "-100123", chat)

		// A chat linked already is a Conflict, with nothing of its batch.
		err = f.Committer.Commit(ctx, writes.Batch{
			Groups:     []messaging.GroupState{group("thr_again")},
			GroupChats: []writes.GroupChat{{NumberID: bot.ID, ChatID: "-100123", ThreadID: "thr_again", At: at}},
		})
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
		_, err = f.Messaging.Repos().Group(ctx, f.account, "thr_again")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
		id, err = r.GroupChatThread(ctx, bot.ID, "-100123")
		require.NoError(t, err)
		require.Equal(t, "thr_chat", id)
	})

	t.Run("DeliveryStatesMoveDeliveriesThatExist", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		require.NoError(t, f.Committer.Commit(ctx, f.send("msg_hook")))
		d, err := f.Webhooks.Repos().WebhookDelivery(ctx, f.account, "whk_msg_hook")
		require.NoError(t, err)
		at := f.now.Add(time.Minute)
		d.Status, d.Attempts, d.LastStatusCode, d.LastError, d.NextAttemptAt, d.UpdatedAt = webhook.Failed, 3, 500, "it's down", at.Add(time.Hour), at
		missing := d
		missing.ID = "whk_missing"
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{DeliveryStates: []webhook.Delivery{missing, d}}))
		got, err := f.Webhooks.Repos().WebhookDelivery(ctx, f.account, d.ID)
		require.NoError(t, err)
		require.Equal(t, d, got)
		_, err = f.Webhooks.Repos().WebhookDelivery(ctx, f.account, missing.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "a delivery that does not exist is left out: %v", err)
	})

	t.Run("AttemptsAndEndpointHealth", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		require.NoError(t, f.Committer.Commit(ctx, f.send("msg_try")))
		ep := webhook.Endpoint{AccountID: f.account, URL: "https://hooks.example.com/in", Enabled: true, CreatedAt: f.now, UpdatedAt: f.now}
		saveEndpoint(t, f.Webhooks, webhooks.Record{Endpoint: ep, SealedSecret: []byte{1, 2}})
		at := f.now.Add(time.Minute)
		attempt := webhook.Attempt{At: at, StatusCode: 503, Latency: 1500 * time.Microsecond, Error: "status 503", Response: "it's busy"}
		failing := ep
		failing.Enabled, failing.DisabledReason, failing.DisabledAt, failing.FailingSince, failing.UpdatedAt = false, webhook.ReasonFailing, &at, &f.now, at
		elsewhere := failing
		elsewhere.AccountID = "acc_without_endpoint"
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{
			Attempts:       []writes.Attempt{{DeliveryID: "whk_msg_try", Attempt: attempt}},
			EndpointHealth: []webhook.Endpoint{failing, elsewhere},
		}))
		ds, _, err := f.Webhooks.Repos().WebhookDeliveries(ctx, webhooks.DeliveryQuery{AccountID: f.account, Limit: 10})
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, []webhook.Attempt{attempt}, ds[0].Log, "the attempt is in the delivery's log")
		rec, err := f.Webhooks.Repos().WebhookEndpoint(ctx, f.account)
		require.NoError(t, err)
		require.Equal(t, failing, rec.Endpoint, "the endpoint's health, the rest as it was")
		require.Equal(t, []byte{1, 2}, rec.SealedSecret)
	})

	t.Run("InsertsCronJobsWithTheirAnswers", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		if f.Cron == nil {
			t.Skip("no cron store")
		}
		j := newCronJob(f.account, f.now.Add(time.Hour))
		answer := writes.Answer{AccountID: f.account, Key: "key-cron", Response: idempotency.Response{Status: 201, Body: []byte(j.ID)}}
		_, err := f.Keys.ReserveKey(ctx, f.account, "key-cron", "fp", f.now, time.Minute)
		require.NoError(t, err)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{CronJobs: []cron.Job{j}, Answers: []writes.Answer{answer}}))
		got, err := f.Cron.Repos().Job(ctx, f.account, j.ID)
		require.NoError(t, err)
		require.Equal(t, j, got, "the job reads back as written")
		res, err := f.Keys.ReserveKey(ctx, f.account, "key-cron", "fp", f.now.Add(time.Second), time.Minute)
		require.NoError(t, err)
		require.Equal(t, idempotency.Replay, res.Outcome)
		require.Equal(t, []byte(j.ID), res.Response.Body, "the answer committed with its job")

		// A second job under the same key writes nothing; a taken id is a
		// Conflict.
		other := newCronJob(f.account, f.now.Add(time.Hour))
		require.ErrorIs(t, f.Committer.Commit(ctx, writes.Batch{CronJobs: []cron.Job{other}, Answers: []writes.Answer{answer}}), idempotency.ErrAnsweredElsewhere)
		_, err = f.Cron.Repos().Job(ctx, f.account, other.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "the refused batch's job is not there: %v", err)
		err = f.Committer.Commit(ctx, writes.Batch{CronJobs: []cron.Job{j}})
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
	})

	t.Run("ATakenAnswerWritesNothing", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		first := f.send("msg_first")
		require.NoError(t, f.Committer.Commit(ctx, first))
		again := f.send("msg_again")
		again.Answers = first.Answers
		require.ErrorIs(t, f.Committer.Commit(ctx, again), idempotency.ErrAnsweredElsewhere)
		_, err := f.Messaging.Repos().Message(ctx, f.account, "msg_again")
		require.True(t, failure.Is(err, failure.KindNotFound), "the refused batch's message is not there: %v", err)
		_, err = f.Webhooks.Repos().WebhookDelivery(ctx, f.account, "whk_msg_again")
		require.True(t, failure.Is(err, failure.KindNotFound), "nor its delivery: %v", err)
		claimed := f.jobs(t)
		require.Len(t, claimed, 1, "nor its job")
		require.Equal(t, []byte("msg_first"), claimed[0].Payload)
	})

	t.Run("ErasuresDeleteWhatTheyNameAndRecordThemselves", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		if f.Erasure == nil {
			t.Skip("no erasure store")
		}
		_, err := f.Keys.ReserveKey(ctx, f.account, "key-msg_gone", "fp", f.now, time.Minute)
		require.NoError(t, err)
		require.NoError(t, f.Committer.Commit(ctx, f.send("msg_gone")))
		require.NoError(t, f.Committer.Commit(ctx, f.send("msg_kept")))
		rec := erasure.Record{ID: "era_contract", AccountID: f.account, RequestedBy: "cli", Kind: erasure.Phone, IdentifierHash: "h1",
			Counts: map[string]int{"messages": 1}, At: f.now}
		target := erasure.Target{AccountID: f.account, MessageIDs: []string{"msg_gone"}, EventIDs: []string{"evt_msg_gone"},
			DeliveryIDs: []string{"whk_msg_gone"}, IdempotencyKeys: []string{"key-msg_gone"}}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Erasures: []writes.Erasure{{Record: rec, Target: target}}}))
		_, err = f.Messaging.Repos().Message(ctx, f.account, "msg_gone")
		require.True(t, failure.Is(err, failure.KindNotFound), "the named message is gone: %v", err)
		_, err = f.Webhooks.Repos().WebhookDelivery(ctx, f.account, "whk_msg_gone")
		require.True(t, failure.Is(err, failure.KindNotFound), "its delivery too: %v", err)
		_, err = f.Messaging.Repos().Message(ctx, f.account, "msg_kept")
		require.NoError(t, err, "another message stays")
		_, err = f.Webhooks.Repos().WebhookDelivery(ctx, f.account, "whk_msg_kept")
		require.NoError(t, err, "with its delivery")
		res, err := f.Keys.ReserveKey(ctx, f.account, "key-msg_gone", "fp", f.now.Add(time.Second), time.Minute)
		require.NoError(t, err)
		require.Equal(t, idempotency.Replay, res.Outcome, "the key stays answered: it does not run again")
		require.Equal(t, http.StatusGone, res.Response.Status)
		require.NotContains(t, string(res.Response.Body), "msg_gone", "the answer no longer names what went")
		// Another account's rows are out of reach of its target.
		other := writes.Erasure{Record: erasure.Record{ID: "era_other", AccountID: "acc_other", Kind: erasure.Phone, IdentifierHash: "h2", At: f.now},
			Target: erasure.Target{AccountID: "acc_other", MessageIDs: []string{"msg_kept"}, DeliveryIDs: []string{"whk_msg_kept"}}}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Erasures: []writes.Erasure{other}}))
		_, err = f.Messaging.Repos().Message(ctx, f.account, "msg_kept")
		require.NoError(t, err, "an erasure deletes in its own account only")
		var erased, unknown bool
		require.NoError(t, f.Erasure.Decide(ctx, func(ctx context.Context, tx apperasure.TxReads) (writes.Batch, error) {
			var err error
			if erased, err = tx.Erased(ctx, f.account, "h1"); err != nil {
				return writes.Batch{}, err
			}
			unknown, err = tx.Erased(ctx, f.account, "h2")
			return writes.Batch{}, err
		}))
		require.True(t, erased, "the record is kept")
		require.False(t, unknown, "another account's record is its own")
	})

	t.Run("ErasureRecordsListNewestFirst", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		if f.Erasure == nil {
			t.Skip("no erasure store")
		}
		record := func(id, account string, at time.Time, counts map[string]int) erasure.Record {
			return erasure.Record{ID: id, AccountID: account, RequestedBy: "key:key_1", Kind: erasure.Phone, IdentifierHash: "h-" + id, Counts: counts, At: at}
		}
		recs := []erasure.Record{
			record("era_1", f.account, f.now, map[string]int{"messages": 2, "people": 1}),
			record("era_2", f.account, f.now.Add(time.Second), map[string]int{}),
			record("era_3", f.account, f.now.Add(time.Second), map[string]int{"events": 4}),
			record("era_4", "acc_other", f.now.Add(time.Hour), map[string]int{}),
		}
		for _, r := range recs {
			require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Erasures: []writes.Erasure{{Record: r, Target: erasure.Target{AccountID: r.AccountID}}}}))
		}
		list, err := f.Erasure.Records(ctx, apperasure.Query{AccountID: f.account, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []erasure.Record{recs[2], recs[1], recs[0]}, list, "newest first, then by id; the account's own")
		page, err := f.Erasure.Records(ctx, apperasure.Query{AccountID: f.account, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []erasure.Record{recs[2], recs[1]}, page)
		page, err = f.Erasure.Records(ctx, apperasure.Query{AccountID: f.account, After: &apperasure.Position{At: recs[1].At, ID: recs[1].ID}, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, []erasure.Record{recs[0]}, page, "after a record: the older ones")
		page, err = f.Erasure.Records(ctx, apperasure.Query{AccountID: "acc_none", Limit: 2})
		require.NoError(t, err)
		require.Empty(t, page)
	})

	t.Run("ATakenIDIsAConflict", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		require.NoError(t, f.Committer.Commit(ctx, f.send("msg_dup")))
		b := f.send("msg_dup")
		b.Answers = nil
		err := f.Committer.Commit(ctx, b)
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
	})

	t.Run("StatusMovesKeepTheProviderIDWhenNoneIsGiven", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		require.NoError(t, f.Committer.Commit(ctx, f.send("msg_status")))
		at := f.now.Add(2 * time.Second)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Statuses: []writes.MessageStatus{
			{MessageID: "msg_status", Status: messaging.Sent, ProviderMessageID: "wamid.1", UpdatedAt: at},
		}}))
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Statuses: []writes.MessageStatus{
			{MessageID: "msg_status", Status: messaging.Failed, FailureCode: "x", FailureText: "why", UpdatedAt: at.Add(time.Second)},
		}}))
		m, err := f.Messaging.Repos().Message(ctx, f.account, "msg_status")
		require.NoError(t, err)
		require.Equal(t, messaging.Failed, m.Status)
		require.Equal(t, "wamid.1", m.ProviderMessageID)
		require.Equal(t, "x", m.FailureCode)
		require.Equal(t, "why", m.FailureText)
		require.True(t, m.UpdatedAt.Equal(at.Add(time.Second)), "got %v", m.UpdatedAt)
	})

	t.Run("MessageChangesCommitWithTheirEventOrNotAtAll", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		require.NoError(t, f.Committer.Commit(ctx, f.send("msg_changed")))
		at := f.now.Add(2 * time.Second)
		change := writes.MessageChange{MessageID: "msg_changed", Content: messaging.Content{Kind: messaging.KindText, Text: "it's $2 ? edited"},
			PreviousText: "it's \"quoted\" ? $1", EditedAt: &at, UpdatedAt: at}
		// Refused with a taken message id: the change is not written.
		refused := f.send("msg_changed")
		refused.Answers, refused.MessageChanges = nil, []writes.MessageChange{change}
		require.True(t, failure.Is(f.Committer.Commit(ctx, refused), failure.KindConflict))
		m, err := f.Messaging.Repos().Message(ctx, f.account, "msg_changed")
		require.NoError(t, err)
		require.Nil(t, m.EditedAt, "nothing of the refused batch")
		e := event.Event{ID: "evt_edit", AccountID: f.account, Type: event.MessageEdited, ThreadID: f.thread.ID, Payload: []byte(`{}`), CreatedAt: at}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{MessageChanges: []writes.MessageChange{change}, Events: []event.Event{e}}))
		m, err = f.Messaging.Repos().Message(ctx, f.account, "msg_changed")
		require.NoError(t, err)
		require.Equal(t, change.Content, m.Content)
		require.Equal(t, change.PreviousText, m.PreviousText)
		require.True(t, m.EditedAt != nil && m.EditedAt.Equal(at), "got %v", m.EditedAt)
		require.Nil(t, m.DeletedAt)
		events, err := f.Webhooks.Repos().EventsAfter(ctx, f.account, "", 10)
		require.NoError(t, err)
		require.Equal(t, "evt_edit", events[len(events)-1].ID)
	})

	t.Run("EmailOutcomesReachQueuedEmailsOnly", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		e := email.Email{ID: "eml_commit", AccountID: f.account, From: "a@b.example", To: "c@d.example", Subject: "s", Body: "b",
			MessageID: "<eml_commit@b.example>", Direction: email.Outbound, Status: email.Queued, CreatedAt: f.now, UpdatedAt: f.now}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Emails: []email.Email{e}}))
		sent := e
		at := f.now.Add(time.Second)
		sent.Status, sent.Reply, sent.SentAt, sent.Attempts, sent.UpdatedAt = email.Sent, "250 ok", &at, 1, at
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{EmailOutcomes: []email.Email{sent}}))
		failed := e
		failed.Status, failed.FailureCode, failed.UpdatedAt = email.Failed, "late", at.Add(time.Second)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{EmailOutcomes: []email.Email{failed}}))
		got, err := f.Email.Repos().Email(ctx, f.account, "eml_commit")
		require.NoError(t, err)
		require.Equal(t, email.Sent, got.Status, "an email no longer queued is left as it is")
		require.Equal(t, "250 ok", got.Reply)
		require.NotNil(t, got.SentAt)
		require.True(t, got.SentAt.Equal(at))
		require.Equal(t, sent, got)
	})

	t.Run("EmailBouncesReachQueuedAndSentEmailsOnly", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		at := f.now.Add(time.Second)
		var ids []string
		for _, st := range []email.Status{email.Queued, email.Sent, email.Failed} {
			e := email.Email{ID: "eml_bounce" + string(st), AccountID: f.account, From: "a@b.example", To: "c@d.example", Subject: "s", Body: "b",
				MessageID: "<" + string(st) + "@b.example>", Direction: email.Outbound, Status: st, Reply: "250 ok", CreatedAt: f.now, UpdatedAt: f.now}
			require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Emails: []email.Email{e}}))
			ids = append(ids, e.ID)
		}
		var bounces []writes.EmailBounce
		for _, id := range ids {
			bounces = append(bounces, writes.EmailBounce{EmailID: id, Reply: "c@d.example: 550 5.1.1 User unknown", UpdatedAt: at})
		}
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{EmailBounces: bounces}))
		for i, want := range []email.Status{email.Bounced, email.Bounced, email.Failed} {
			got, err := f.Email.Repos().Email(ctx, f.account, ids[i])
			require.NoError(t, err)
			require.Equal(t, want, got.Status, ids[i])
			if want == email.Bounced {
				require.Equal(t, "bounced", got.FailureCode)
				require.Equal(t, "c@d.example: 550 5.1.1 User unknown", got.Reply)
				require.True(t, got.UpdatedAt.Equal(at))
			} else {
				require.Equal(t, "250 ok", got.Reply, "a failed email is left as it is")
			}
		}
	})

	t.Run("ConcurrentCommitsAllLand", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		const n = 40
		for i := range n {
			_, err := f.Keys.ReserveKey(ctx, f.account, fmt.Sprint("key-msg_c", i), "fp", f.now, time.Minute)
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() { errs[i] = f.Committer.Commit(ctx, f.send(fmt.Sprint("msg_c", i))) })
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "batch %d", i)
		}
		require.Len(t, f.jobs(t), n)
		events, err := f.Webhooks.Repos().EventsAfter(ctx, f.account, "", 100)
		require.NoError(t, err)
		require.Len(t, events, n)
		for i := range n {
			res, err := f.Keys.ReserveKey(ctx, f.account, fmt.Sprint("key-msg_c", i), "fp", f.now.Add(time.Second), time.Minute)
			require.NoError(t, err)
			require.Equal(t, idempotency.Reservation{Outcome: idempotency.Replay, Response: idempotency.Response{Status: 200, Body: []byte(fmt.Sprint("msg_c", i))}},
				res, "each batch's own answer")
		}
	})

	t.Run("AnEndedCallerWritesNothing", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		ended, cancel := context.WithCancel(ctx)
		cancel()
		require.Error(t, f.Committer.Commit(ended, f.send("msg_ended")))
		require.Empty(t, f.jobs(t))
		_, err := f.Messaging.Repos().Message(ctx, f.account, "msg_ended")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)
	})

	t.Run("TheEmptyBatchWritesNothing", func(t *testing.T) {
		t.Parallel()
		f := newCommitBundle(t, open)
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{}))
		events, err := f.Webhooks.Repos().EventsAfter(ctx, f.account, "", 10)
		require.NoError(t, err)
		require.Empty(t, events)
		require.Empty(t, f.jobs(t))
	})
}
