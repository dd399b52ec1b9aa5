package retention

import (
	"context"
	"time"
)

// Kind names one part of the history that the pruner deletes.
type Kind string

// The kinds of history.
const (
	// Events are the account's event log (what polling reads and
	// webhooks deliver).
	Events Kind = "events"
	// WebhookDeliveries are the deliveries to the account's endpoint,
	// each deleted with its attempts.
	WebhookDeliveries Kind = "webhook_deliveries"
	// CronExecutions are the runs of the account's cron jobs.
	CronExecutions Kind = "cron_executions"
	// SandboxEmails are the emails the sandbox mailbox kept instead of
	// sending them: the delivery records of email without a relay.
	SandboxEmails Kind = "sandbox_emails"

	// Messages are the account's messages, with their reactions and media
	// links, pruned only under a message retention: their threads stay.
	Messages Kind = "messages"
	// Emails are the account's emails, sent and received, with their
	// attachments, pruned only under a message retention.
	Emails Kind = "emails"
)

// Kinds lists every kind in the order a pass prunes them: deliveries
// before the events they send, so that an event whose deliveries are
// gone goes in the same pass.
var Kinds = []Kind{WebhookDeliveries, Events, CronExecutions, SandboxEmails}

// MessageKinds lists the kinds a message retention deletes, pruned after
// Kinds for the accounts that have one.
var MessageKinds = []Kind{Messages, Emails}

// AccountRetention is an account's own history retention in days (0
// follows the server's) and its message retention in days (0: none).
type AccountRetention struct {
	AccountID   string
	Days        int
	MessageDays int
}

// Query asks for one batch of an account's history of one kind.
type Query struct {
	Kind      Kind
	AccountID string
	// Before is the cutoff: rows recorded before it are old.
	Before time.Time
	// After is where the walk of the kind's rows resumes (Step.Next of
	// the batch before; 0 at the start).
	After int64
	// AfterKey is where a walk keyed by text resumes (Step.NextKey; ""
	// at the start): the messages' walk of the account's threads.
	AfterKey string
	// Limit bounds the rows the batch reads and deletes.
	Limit int
}

// Step is what one batch did.
type Step struct {
	// Deleted counts the rows deleted (a delivery's attempts aside).
	Deleted int
	// Next is where the walk resumes (Query.After of the next batch).
	Next int64
	// NextKey is where a walk keyed by text resumes (Query.AfterKey).
	NextKey string
	// Done says that nothing more of the kind is old for the account.
	Done bool
}

// Store is the storage the pruner deletes from.
//
// Errors: when the database is away, every method returns a failure of
// kind Unavailable; other errors are infrastructure failures.
type Store interface {
	// AccountRetentions lists every account with its own history
	// retention.
	AccountRetentions(ctx context.Context) ([]AccountRetention, error)
	// PruneHistory deletes, in one short transaction, up to q.Limit rows
	// of q.Kind of q.AccountID recorded before q.Before, walking the
	// rows in the order they were recorded from q.After on, and says
	// where the walk resumes and whether it is done. It never deletes
	// what is still needed, checked in the statement that deletes, so
	// that a concurrent change is seen: a webhook delivery still pending
	// (first attempt or retries to come), an event that a delivery still
	// refers to, a cron execution still running or retrying, nor the
	// newest event of the whole log (positions in the log never go
	// back). A delivery goes with its attempts; a sandbox email comes off
	// the mailbox's counts.
	PruneHistory(ctx context.Context, q Query) (Step, error)
}

// Lock keeps pruning to one process at a time among every replica of the
// database.
type Lock interface {
	// Exclusively runs fn while this process holds the pruning lock, and
	// reports whether it ran: when another process holds the lock, fn is
	// not run and ran is false.
	Exclusively(ctx context.Context, fn func(ctx context.Context) error) (ran bool, err error)
}
