// Package writes is the contract of the write pipeline. A use case first
// decides: it validates its input, checks every rule and reads what it
// needs. What it decided to write (new threads, groups, their provider
// chats and messages, events, status changes, users' activity, new emails
// and their outcomes, webhook deliveries, their attempts and states, jobs
// to enqueue, new cron jobs, the answer to an Idempotency-Key) it hands
// as one Batch value to a Committer, which writes the Batch atomically:
// all of it or nothing. A use case that must read inside the transaction
// that writes (a thread to find or create, a group to lock, the cron jobs
// to count) decides through its store's Decide, which gives it the
// transaction's reads only and writes the Batch it returns in that
// transaction.
//
// A Committer may write the batches of concurrent callers in one database
// transaction (group commit: one commit for many sends). It works on the
// values alone, so nothing of a use case runs again, and since every
// business check happened before, one caller's batch cannot fail for a
// business reason and take its neighbours' work with it; a batch the
// database refuses (a taken Idempotency-Key) is written again alone, and
// only its own caller gets the error.
package writes

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// Batch is what one decision writes. The zero Batch writes nothing.
type Batch struct {
	// Threads are new threads with their participants. A new individual
	// thread of an agent number and a user who have one already fails the
	// batch with ErrThreadExists.
	Threads []NewThread
	// Groups are new group threads with their state and members.
	Groups []messaging.GroupState
	// GroupStates replace the state and members of groups that exist. A
	// member who stays keeps the name and join time stored with it; a new
	// member joins at the group's UpdatedAt.
	GroupStates []messaging.GroupState
	// GroupChats link provider group chats to their group threads (which
	// exist or are new in the batch). A chat of an agent number that is
	// linked already fails the batch with a Conflict.
	GroupChats []GroupChat
	// Messages are new messages; their threads exist or are new in the
	// batch.
	Messages []messaging.Message
	// ThreadActivity moves threads' last activity forward (a message
	// sent in them).
	ThreadActivity []ThreadActivity
	// Inbound records users who wrote: their contacts and their threads'
	// activity.
	Inbound []InboundActivity
	// Windows move the customer service windows of threads that exist
	// (or are new in the batch) forward: each closes at the later of its
	// stored closing time and the one given; never earlier.
	Windows []ThreadWindow
	// Contacts create or update contacts (people of an account), link
	// threads to them, and record what a provider chat showed about its
	// user (ChatContact).
	Contacts []ContactWrite
	// ContactMerges merge contacts into others: the threads and messages
	// of From move to Into, and From is deleted. Into's new values are
	// a ContactWrite of the same batch.
	ContactMerges []ContactMerge
	// Statuses change messages' statuses.
	Statuses []MessageStatus
	// MessageReactions set or take back reactions on messages that exist:
	// each (message, reactor) keeps its newest reaction; an empty emoji
	// takes it back.
	MessageReactions []messaging.Reaction
	// MessageChanges record users' edits and deletions of messages that
	// exist: each message takes its new content, previous text and edit
	// and deletion times; of two changes of one message in a batch the
	// last wins.
	MessageChanges []MessageChange
	// Events are new entries of accounts' event logs.
	Events []event.Event
	// Deliveries are new webhook deliveries of events (of Events, or
	// recorded before).
	Deliveries []webhook.Delivery
	// DeliveryStates are the new states of webhook deliveries that
	// exist: their status, attempts, last status code and error, next
	// attempt and updated time. Deliveries that do not exist are left
	// out.
	DeliveryStates []webhook.Delivery
	// Attempts are appended to the logs of webhook deliveries that exist
	// (or are new in the batch).
	Attempts []Attempt
	// EndpointHealth records the health of webhook endpoints that exist:
	// whether they are enabled, why and since when they are disabled,
	// since when they fail, and their updated time. Endpoints that do
	// not exist are left out.
	EndpointHealth []webhook.Endpoint
	// Emails are new emails; EmailOutcomes record the delivery of emails
	// still queued (one no longer queued is left as it is).
	Emails        []email.Email
	EmailOutcomes []email.Email
	// EmailBounces mark sent emails bounced: an email queued or sent
	// takes status bounced, error code bounced and the report's reasons
	// as its reply; one of another status is left as it is.
	EmailBounces []EmailBounce
	// EmailAttachments are new attachments of emails (of Emails, or
	// recorded before); Spooled are messages the SMTP listener accepted,
	// kept whole until parsed. A taken id fails the batch with a
	// Conflict.
	EmailAttachments []email.Attachment
	Spooled          []email.Spooled
	// Jobs are new jobs. A batch enqueues only new work: its jobs have no
	// UniqueKey.
	Jobs []jobs.EnqueueParams
	// TemplateSets replace the message templates of agent numbers: each
	// number keeps exactly the templates of its set.
	TemplateSets []TemplateSet
	// CronJobs are new cron jobs. A taken id fails the batch with a
	// Conflict.
	CronJobs []cron.Job
	// Answers record the responses to Idempotency-Keys.
	Answers []Answer
}

// ThreadActivity is a message sent in a thread at At.
type ThreadActivity struct {
	ThreadID string
	At       time.Time
}

// ThreadWindow is the closing time of a thread's customer service window
// that a user's message opened (see messaging.Thread.WindowClosesAt).
type ThreadWindow struct {
	ThreadID string
	ClosesAt time.Time
}

// TemplateSet is the whole set of message templates of the agent number
// NumberID of AccountID, as its provider had them at SyncedAt.
type TemplateSet struct {
	AccountID string
	NumberID  string
	Templates []messaging.Template
	SyncedAt  time.Time
}

// GroupChat is the provider group chat ChatID of the agent number
// NumberID, kept as the group thread ThreadID since At.
type GroupChat struct {
	NumberID string
	ChatID   string
	ThreadID string
	At       time.Time
}

// NewThread is a thread and its participants, who join at its creation.
type NewThread struct {
	Thread       messaging.Thread
	Participants []messaging.Participant
}

// ErrThreadExists is the failure of a batch with a new individual thread
// whose agent number and user have one already (created by a concurrent
// batch). Deciding again finds that thread.
var ErrThreadExists = &failure.Error{Kind: failure.KindConflict, Code: "thread_exists", Message: "the thread exists already"}

// InboundActivity is a message a user sent in a thread at At. It records
// the user as a contact of the account on the service (with Name, unless
// Name is empty) and moves the thread's last activity and last inbound
// message to At.
type InboundActivity struct {
	AccountID string
	Service   account.Service
	Address   string
	Name      string
	ThreadID  string
	At        time.Time
}

// ContactWrite is one write about a person. Contact, when set, is
// stored whole (created, or replacing the stored values); Threads are
// linked to it; Chat, when set, records what a provider chat of an agent
// number showed about its user.
type ContactWrite struct {
	Contact *messaging.Contact
	Threads []string
	Chat    *ChatContact
}

// ChatContact is what the provider chat ChatID of the agent number
// NumberID showed about its user (a Telegram user id with the username
// and phone number they made known) at At. Empty username, phone and
// name keep what was known.
type ChatContact struct {
	NumberID string
	ChatID   string
	// Username is lower-case, without the @.
	Username string
	Phone    string
	Name     string
	At       time.Time
}

// ContactMerge moves the threads and messages of the account's contact
// From to its contact Into and deletes From.
type ContactMerge struct {
	AccountID string
	Into      string
	From      string
}

// Attempt is one attempt of the webhook delivery DeliveryID.
type Attempt struct {
	DeliveryID string
	Attempt    webhook.Attempt
}

// MessageStatus is a message's new status, its failure (empty when none)
// and the provider's id for it (empty: unchanged).
type MessageStatus struct {
	MessageID         string
	Status            messaging.Status
	FailureCode       string
	FailureText       string
	ProviderMessageID string
	UpdatedAt         time.Time
}

// MessageChange is a message's content after a user's edit or deletion
// (a deleted message's is empty), its text before the last edit, when it
// was last edited and when it was deleted (nil: not), at UpdatedAt.
type MessageChange struct {
	MessageID    string
	Content      messaging.Content
	PreviousText string
	EditedAt     *time.Time
	DeletedAt    *time.Time
	UpdatedAt    time.Time
}

// EmailBounce is a delivery report about the sent email EmailID: the
// reasons its recipients failed (Reply), received at UpdatedAt.
type EmailBounce struct {
	EmailID   string
	Reply     string
	UpdatedAt time.Time
}

// Answer is the response to an account's Idempotency-Key.
type Answer struct {
	AccountID string
	Key       string
	Response  idempotency.Response
}

// Add appends o's writes to b's.
func (b *Batch) Add(o Batch) {
	b.Threads = append(b.Threads, o.Threads...)
	b.Groups = append(b.Groups, o.Groups...)
	b.GroupStates = append(b.GroupStates, o.GroupStates...)
	b.GroupChats = append(b.GroupChats, o.GroupChats...)
	b.Messages = append(b.Messages, o.Messages...)
	b.ThreadActivity = append(b.ThreadActivity, o.ThreadActivity...)
	b.Inbound = append(b.Inbound, o.Inbound...)
	b.Windows = append(b.Windows, o.Windows...)
	b.Contacts = append(b.Contacts, o.Contacts...)
	b.ContactMerges = append(b.ContactMerges, o.ContactMerges...)
	b.Statuses = append(b.Statuses, o.Statuses...)
	b.MessageReactions = append(b.MessageReactions, o.MessageReactions...)
	b.MessageChanges = append(b.MessageChanges, o.MessageChanges...)
	b.Events = append(b.Events, o.Events...)
	b.Deliveries = append(b.Deliveries, o.Deliveries...)
	b.DeliveryStates = append(b.DeliveryStates, o.DeliveryStates...)
	b.Attempts = append(b.Attempts, o.Attempts...)
	b.EndpointHealth = append(b.EndpointHealth, o.EndpointHealth...)
	b.Emails = append(b.Emails, o.Emails...)
	b.EmailOutcomes = append(b.EmailOutcomes, o.EmailOutcomes...)
	b.EmailBounces = append(b.EmailBounces, o.EmailBounces...)
	b.EmailAttachments = append(b.EmailAttachments, o.EmailAttachments...)
	b.Spooled = append(b.Spooled, o.Spooled...)
	b.Jobs = append(b.Jobs, o.Jobs...)
	b.TemplateSets = append(b.TemplateSets, o.TemplateSets...)
	b.CronJobs = append(b.CronJobs, o.CronJobs...)
	b.Answers = append(b.Answers, o.Answers...)
}

// Merge is the writes of bs together, in order, as Add would make them,
// each list allocated once at its full length.
func Merge(bs []Batch) Batch {
	return Batch{
		Threads:          concat(bs, func(b *Batch) []NewThread { return b.Threads }),
		Groups:           concat(bs, func(b *Batch) []messaging.GroupState { return b.Groups }),
		GroupStates:      concat(bs, func(b *Batch) []messaging.GroupState { return b.GroupStates }),
		GroupChats:       concat(bs, func(b *Batch) []GroupChat { return b.GroupChats }),
		Messages:         concat(bs, func(b *Batch) []messaging.Message { return b.Messages }),
		ThreadActivity:   concat(bs, func(b *Batch) []ThreadActivity { return b.ThreadActivity }),
		Inbound:          concat(bs, func(b *Batch) []InboundActivity { return b.Inbound }),
		Windows:          concat(bs, func(b *Batch) []ThreadWindow { return b.Windows }),
		Contacts:         concat(bs, func(b *Batch) []ContactWrite { return b.Contacts }),
		ContactMerges:    concat(bs, func(b *Batch) []ContactMerge { return b.ContactMerges }),
		Statuses:         concat(bs, func(b *Batch) []MessageStatus { return b.Statuses }),
		MessageReactions: concat(bs, func(b *Batch) []messaging.Reaction { return b.MessageReactions }),
		MessageChanges:   concat(bs, func(b *Batch) []MessageChange { return b.MessageChanges }),
		Events:           concat(bs, func(b *Batch) []event.Event { return b.Events }),
		Deliveries:       concat(bs, func(b *Batch) []webhook.Delivery { return b.Deliveries }),
		DeliveryStates:   concat(bs, func(b *Batch) []webhook.Delivery { return b.DeliveryStates }),
		Attempts:         concat(bs, func(b *Batch) []Attempt { return b.Attempts }),
		EndpointHealth:   concat(bs, func(b *Batch) []webhook.Endpoint { return b.EndpointHealth }),
		Emails:           concat(bs, func(b *Batch) []email.Email { return b.Emails }),
		EmailOutcomes:    concat(bs, func(b *Batch) []email.Email { return b.EmailOutcomes }),
		EmailBounces:     concat(bs, func(b *Batch) []EmailBounce { return b.EmailBounces }),
		EmailAttachments: concat(bs, func(b *Batch) []email.Attachment { return b.EmailAttachments }),
		Spooled:          concat(bs, func(b *Batch) []email.Spooled { return b.Spooled }),
		Jobs:             concat(bs, func(b *Batch) []jobs.EnqueueParams { return b.Jobs }),
		TemplateSets:     concat(bs, func(b *Batch) []TemplateSet { return b.TemplateSets }),
		CronJobs:         concat(bs, func(b *Batch) []cron.Job { return b.CronJobs }),
		Answers:          concat(bs, func(b *Batch) []Answer { return b.Answers }),
	}
}

// concat is the lists of one field of bs, in order; nil when all are empty.
func concat[T any](bs []Batch, field func(*Batch) []T) []T {
	n := 0
	for i := range bs {
		n += len(field(&bs[i]))
	}
	if n == 0 {
		return nil
	}
	out := make([]T, 0, n)
	for i := range bs {
		out = append(out, field(&bs[i])...)
	}
	return out
}

// Committer writes batches.
type Committer interface {
	// Commit writes b atomically. It returns
	// idempotency.ErrAnsweredElsewhere when one of b's Answers is for a
	// key that has a response already, ErrThreadExists (see Batch.Threads),
	// a failure of kind Conflict when a
	// new row's id is taken, and one of kind Unavailable when the
	// database is away or did not say whether it committed (also when
	// ctx ends first); nothing is written on any error but the last,
	// whose outcome is unknown.
	Commit(ctx context.Context, b Batch) error
}

// Reactions add to a batch, before it is written, what other features
// do about its events: the webhook feature adds a delivery and its job
// for each event an account's endpoint subscribes to and the batch has
// no delivery of (webhooks.FanOut). A Committer, and a store's Decide, run them
// on every batch with events, so no event can miss them; a batch merged
// from concurrent callers' runs them once.
type Reactions interface {
	React(ctx context.Context, b *Batch) error
}

// Answering is the answer that c records for result: none when c is nil
// (a request without an Idempotency-Key).
func Answering[T any](c *idempotency.Completion[T], result T) []Answer {
	if c == nil {
		return nil
	}
	return []Answer{{AccountID: c.AccountID, Key: c.Key, Response: c.Render(result)}}
}
