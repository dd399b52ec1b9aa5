// Package writes is the contract of the write pipeline. A use case first
// decides: it validates its input, checks every rule and reads what it
// needs. What it decided to write (new messages and events, status
// changes, new emails, webhook deliveries, jobs to enqueue, the answer to
// an Idempotency-Key) it hands as one Batch value to a Committer, which
// writes the Batch atomically: all of it or nothing.
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

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// Batch is what one decision writes. The zero Batch writes nothing.
type Batch struct {
	// Messages are new messages; their threads exist.
	Messages []messaging.Message
	// ThreadActivity moves threads' last activity forward (a message
	// sent in them).
	ThreadActivity []ThreadActivity
	// Statuses change messages' statuses.
	Statuses []MessageStatus
	// Events are new entries of accounts' event logs.
	Events []event.Event
	// Deliveries are new webhook deliveries of Events.
	Deliveries []webhook.Delivery
	// Emails are new emails; EmailOutcomes record the delivery of emails
	// still queued (one no longer queued is left as it is).
	Emails        []email.Email
	EmailOutcomes []email.Email
	// Jobs are new jobs. A batch enqueues only new work: its jobs have no
	// UniqueKey.
	Jobs []jobs.EnqueueParams
	// Answers record the responses to Idempotency-Keys.
	Answers []Answer
}

// ThreadActivity is a message sent in a thread at At.
type ThreadActivity struct {
	ThreadID string
	At       time.Time
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

// Answer is the response to an account's Idempotency-Key.
type Answer struct {
	AccountID string
	Key       string
	Response  idempotency.Response
}

// Add appends o's writes to b's.
func (b *Batch) Add(o Batch) {
	b.Messages = append(b.Messages, o.Messages...)
	b.ThreadActivity = append(b.ThreadActivity, o.ThreadActivity...)
	b.Statuses = append(b.Statuses, o.Statuses...)
	b.Events = append(b.Events, o.Events...)
	b.Deliveries = append(b.Deliveries, o.Deliveries...)
	b.Emails = append(b.Emails, o.Emails...)
	b.EmailOutcomes = append(b.EmailOutcomes, o.EmailOutcomes...)
	b.Jobs = append(b.Jobs, o.Jobs...)
	b.Answers = append(b.Answers, o.Answers...)
}

// Committer writes batches.
type Committer interface {
	// Commit writes b atomically. It returns
	// idempotency.ErrAnsweredElsewhere when one of b's Answers is for a
	// key that has a response already, a failure of kind Conflict when a
	// new row's id is taken, and one of kind Unavailable when the
	// database is away or did not say whether it committed (also when
	// ctx ends first); nothing is written on any error but the last,
	// whose outcome is unknown.
	Commit(ctx context.Context, b Batch) error
}

// Reactions add to a batch, before it is written, what other features
// do about its events: the webhook feature adds a delivery and its job
// for each event an account's endpoint subscribes to
// (webhooks.Service.React). A Committer, and a transaction's WriteBatch,
// run them on every batch with events, so no event can miss them; a
// batch merged from concurrent callers' runs them once.
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
