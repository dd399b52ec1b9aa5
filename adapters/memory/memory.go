// Package memory is an in-memory fake of the application's storage: the
// repository ports of every use case package, the idempotency key store
// and the write pipeline's committer, over one set of tables, so that
// application tests run without a database. It keeps the SQL store's
// (adapters/store) contract, checked by the same suites
// (adapters/storetest): the same errors (NotFound for missing rows and for
// other accounts' rows alike, Conflict for taken unique values), the same
// orders, times kept to the microsecond in UTC, foreign keys enforced.
//
// Transactions are copy-on-write. Writers take turns, as on SQLite: a
// transaction (or a single write outside one) works on its own copy of the
// tables, which replaces the committed tables when it succeeds and is
// dropped when it fails or panics. Reads outside a transaction see the
// committed tables and never wait for a writer, as reads on another
// connection do; so a use case (or a reaction) may read through Repos
// inside a transaction, but a write outside the transaction it runs in
// waits for it forever, as it would on SQLite's single writer connection.
package memory

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/sessions"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// DB is an in-memory database. Its zero value is not usable; call New.
type DB struct {
	now       func() time.Time
	onEnqueue func(js []jobs.Job)
	// reactions add to every batch what other features do about its
	// events (Options.Reactions).
	reactions writes.Reactions

	// writer lets one transaction write at a time.
	writer sync.Mutex
	// committed is replaced, never changed, by a commit.
	committed atomic.Pointer[tables]
	wake      wakeHub
}

// Options tune New.
type Options struct {
	// Now stamps what the database stamps itself (answers' and jobs'
	// creation times); time.Now when nil.
	Now func() time.Time
	// OnEnqueue, when set, is handed the jobs each commit enqueued (ids
	// given), after the commit and outside any lock, so that a job queue
	// can run them; rolled-back jobs never reach it. DB.Jobs lists every
	// job enqueued either way.
	OnEnqueue func(js []jobs.Job)
	// Reactions, when set, add to every batch with events what other
	// features do about them before it is written, as store.Options'
	// Reactions do; they read the committed tables.
	Reactions writes.Reactions
}

// New returns an empty database.
func New(opts Options) *DB {
	db := &DB{now: opts.Now, onEnqueue: opts.OnEnqueue, reactions: opts.Reactions}
	if db.now == nil {
		db.now = time.Now
	}
	db.committed.Store(newTables())
	return db
}

// Repos returns repositories that run each call on its own: a read sees
// the committed tables, a write commits at once.
func (db *DB) Repos() *Repos { return &Repos{db: db} }

// Transact runs fn in one transaction, committed when fn returns nil and
// ctx has not ended, and dropped otherwise (a panic drops it too, then
// propagates). Transactions run one after another; fn must not start
// another one. The transaction's repositories fail with sql.ErrTxDone once
// it has ended.
func (db *DB) Transact(ctx context.Context, fn func(ctx context.Context, r *Repos) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.commit(func(t *tables) error {
		tx := &txn{tables: t}
		defer tx.done.Store(true)
		if err := fn(ctx, &Repos{db: db, tx: tx}); err != nil {
			return err
		}
		// As a database/sql transaction, one whose context ended is
		// rolled back.
		return ctx.Err()
	})
}

// Jobs lists every job that committed writes enqueued, in order.
func (db *DB) Jobs() []jobs.Job {
	t := db.snapshot()
	out := make([]jobs.Job, 0, len(t.jobs))
	for id := int64(1); id <= t.lastJob; id++ {
		if j, ok := t.jobs[id]; ok {
			out = append(out, cloneJob(j))
		}
	}
	return out
}

// snapshot is the committed tables, which nobody changes.
func (db *DB) snapshot() *tables { return db.committed.Load() }

// commit runs fn on a copy of the committed tables and publishes the copy
// when fn succeeds; then it hands on the new jobs and wakes the event
// log's readers.
func (db *DB) commit(fn func(t *tables) error) error {
	before, after, err := db.write(fn)
	if err != nil {
		return err
	}
	if after.lastEvent > before.lastEvent || after.lastJob > before.lastJob {
		db.wake.signal()
	}
	if db.onEnqueue != nil && after.lastJob > before.lastJob {
		var js []jobs.Job
		for id := before.lastJob + 1; id <= after.lastJob; id++ {
			js = append(js, cloneJob(after.jobs[id]))
		}
		db.onEnqueue(js)
	}
	return nil
}

// write is commit's part under the writer lock: it returns the tables
// before and after.
func (db *DB) write(fn func(t *tables) error) (before, after *tables, err error) {
	db.writer.Lock()
	defer db.writer.Unlock()
	before = db.snapshot()
	work := before.clone()
	if err := fn(work); err != nil {
		return nil, nil, err
	}
	db.committed.Store(work)
	return before, work, nil
}

// Repos implements the repository ports of every use case package over
// the database's tables: the committed ones outside a transaction, the
// transaction's own inside one.
type Repos struct {
	db *DB
	// tx is set on a transaction's repositories.
	tx *txn
}

// txn is a transaction's copy of the tables.
type txn struct {
	*tables
	// done is set when the transaction ends, before its tables are
	// published: later writes would change the committed tables.
	done atomic.Bool
}

// current returns the tables the repositories see: the committed ones or
// the transaction's.
func (r *Repos) current(ctx context.Context) (*tables, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.tx == nil {
		return r.db.snapshot(), nil
	}
	if r.tx.done.Load() {
		return nil, sql.ErrTxDone
	}
	return r.tx.tables, nil
}

// read runs fn on the tables the repositories see.
func (r *Repos) read(ctx context.Context, fn func(t *tables) error) error {
	t, err := r.current(ctx)
	if err != nil {
		return err
	}
	return fn(t)
}

// write runs fn as one statement: all of its changes or none. Outside a
// transaction it commits at once; inside one it changes a copy of the
// transaction's tables that replaces them when fn succeeds, so a failed
// write leaves the transaction as it was, usable.
func (r *Repos) write(ctx context.Context, fn func(t *tables) error) error {
	t, err := r.current(ctx)
	if err != nil {
		return err
	}
	if r.tx == nil {
		return r.db.commit(fn)
	}
	work := t.clone()
	if err := fn(work); err != nil {
		return err
	}
	*t = *work
	return nil
}

// bound adapts a DB to one consumer's store port: view narrows the
// repositories to the interface that consumer declares.
type bound[R any] struct {
	db   *DB
	view func(*Repos) R
}

// Repos returns the consumer's repositories outside a transaction.
func (b bound[R]) Repos() R { return b.view(b.db.Repos()) }

// Transact runs fn with the consumer's repositories inside one transaction.
func (b bound[R]) Transact(ctx context.Context, fn func(ctx context.Context, r R) error) error {
	return b.db.Transact(ctx, func(ctx context.Context, r *Repos) error { return fn(ctx, b.view(r)) })
}

// decidingStore is a bound store that also runs its consumer's decisions,
// reads narrows a transaction's repositories to the consumer's TxReads.
type decidingStore[R, T any] struct {
	bound[R]
	reads func(*Repos) T
}

// Decide runs decide in a transaction and writes the batch it returns
// there, with its reactions.
func (s decidingStore[R, T]) Decide(ctx context.Context, decide func(ctx context.Context, tx T) (writes.Batch, error)) error {
	return s.db.Transact(ctx, func(ctx context.Context, r *Repos) error {
		b, err := decide(ctx, s.reads(r))
		if err != nil {
			return err
		}
		return r.WriteBatch(ctx, b)
	})
}

// pair is a key of two columns.
type pair struct{ a, b string }

// tables are the rows. Rows are values, and the slices and pointers in
// them are never changed in place (a change replaces the row), so a
// shallow copy of the maps is a snapshot that later writes cannot touch.
type tables struct {
	accounts    map[string]account.Account
	credentials map[string]account.Credential
	numbers     map[string]account.Number
	domains     map[string]account.Domain
	addresses   map[string]account.EmailAddress

	threads map[string]threadRow
	// participants are each thread's members, in Participants' order.
	participants map[string][]messaging.Participant
	messages     map[string]messaging.Message
	// contacts are keyed by account, service and address.
	contacts map[[3]string]contactRow

	events     map[string]loggedEvent
	emails     map[string]email.Email
	endpoints  map[string]webhooks.Record
	deliveries map[string]webhook.Delivery
	attempts   map[int64]attemptRow

	// channelContacts, chats and updates are keyed by number id and chat
	// id (update key for updates).
	channelContacts map[pair]channels.Contact
	chats           map[pair]chatRow
	updates         map[pair]time.Time

	// keys and answers are keyed by account id and Idempotency-Key.
	keys    map[pair]keyRow
	answers map[pair]answerRow

	jobs map[int64]jobs.Job

	// sessions are keyed by token hash.
	sessions map[string]sessions.Session

	// The last value of each sequence (event seq, delivery seq, ...);
	// as SQLite's rowids, a rolled-back transaction does not use them up.
	lastEvent, lastDelivery, lastAttempt, lastJob int64
}

func newTables() *tables {
	return &tables{
		accounts: map[string]account.Account{}, credentials: map[string]account.Credential{},
		numbers: map[string]account.Number{}, domains: map[string]account.Domain{}, addresses: map[string]account.EmailAddress{},
		threads: map[string]threadRow{}, participants: map[string][]messaging.Participant{},
		messages: map[string]messaging.Message{}, contacts: map[[3]string]contactRow{},
		events: map[string]loggedEvent{}, emails: map[string]email.Email{}, endpoints: map[string]webhooks.Record{},
		deliveries: map[string]webhook.Delivery{}, attempts: map[int64]attemptRow{},
		channelContacts: map[pair]channels.Contact{}, chats: map[pair]chatRow{}, updates: map[pair]time.Time{},
		keys: map[pair]keyRow{}, answers: map[pair]answerRow{}, jobs: map[int64]jobs.Job{},
		sessions: map[string]sessions.Session{},
	}
}

// clone copies the tables (see tables on why shallow copies suffice).
func (t *tables) clone() *tables {
	c := *t
	c.accounts, c.credentials, c.numbers = maps.Clone(t.accounts), maps.Clone(t.credentials), maps.Clone(t.numbers)
	c.domains, c.addresses = maps.Clone(t.domains), maps.Clone(t.addresses)
	c.threads, c.participants, c.messages, c.contacts = maps.Clone(t.threads), maps.Clone(t.participants), maps.Clone(t.messages), maps.Clone(t.contacts)
	c.events, c.emails, c.endpoints = maps.Clone(t.events), maps.Clone(t.emails), maps.Clone(t.endpoints)
	c.deliveries, c.attempts = maps.Clone(t.deliveries), maps.Clone(t.attempts)
	c.channelContacts, c.chats, c.updates = maps.Clone(t.channelContacts), maps.Clone(t.chats), maps.Clone(t.updates)
	c.keys, c.answers, c.jobs = maps.Clone(t.keys), maps.Clone(t.answers), maps.Clone(t.jobs)
	c.sessions = maps.Clone(t.sessions)
	return &c
}

// needAccount is the foreign key to accounts.
func (t *tables) needAccount(id string) error {
	if _, ok := t.accounts[id]; !ok {
		return foreignKey("account", id)
	}
	return nil
}

// foreignKey is the error of a row whose parent does not exist: an
// infrastructure error, as the database's constraint violation is.
func foreignKey(parent, id string) error {
	return fmt.Errorf("foreign key constraint failed: no %s %q", parent, id)
}

// taken is the Conflict of an insert of a taken unique value.
func taken(what string) error {
	return &failure.Error{Kind: failure.KindConflict, Code: "already_exists", Message: what + " already exists"}
}

// The copies below are how rows go in and out: times as the databases
// keep them (UTC, to the microsecond), slices and pointers never shared
// with a caller, empty lists as nil (as the SQL store reads them).

func utc(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}

func listOrNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return append([]T(nil), s...)
}

// text is a NOT NULL text column's bytes: never nil.
func text(b []byte) []byte { return append([]byte{}, b...) }

func cloneAccount(a account.Account) account.Account {
	a.CreatedAt, a.UpdatedAt = utc(a.CreatedAt), utc(a.UpdatedAt)
	return a
}

func cloneCredential(c account.Credential) account.Credential {
	c.KeyHash, c.SecretHash = bytes.Clone(c.KeyHash), bytes.Clone(c.SecretHash)
	c.CreatedAt, c.RevokedAt = utc(c.CreatedAt), utcPtr(c.RevokedAt)
	return c
}

func cloneNumber(n account.Number) account.Number {
	n.SealedSettings, n.CreatedAt = bytes.Clone(n.SealedSettings), utc(n.CreatedAt)
	return n
}

func cloneThread(th messaging.Thread) messaging.Thread {
	th.LastInboundAt, th.CreatedAt, th.UpdatedAt = utcPtr(th.LastInboundAt), utc(th.CreatedAt), utc(th.UpdatedAt)
	return th
}

func cloneMessage(m messaging.Message) messaging.Message {
	m.CreatedAt, m.UpdatedAt = utc(m.CreatedAt), utc(m.UpdatedAt)
	return m
}

func cloneEvent(e event.Event) event.Event {
	e.Payload, e.CreatedAt = text(e.Payload), utc(e.CreatedAt)
	return e
}

func cloneEmail(e email.Email) email.Email {
	e.Cc, e.Bcc, e.ReplyTo, e.Headers = listOrNil(e.Cc), listOrNil(e.Bcc), listOrNil(e.ReplyTo), listOrNil(e.Headers)
	e.CreatedAt, e.UpdatedAt, e.SentAt = utc(e.CreatedAt), utc(e.UpdatedAt), utcPtr(e.SentAt)
	return e
}

func cloneJob(j jobs.Job) jobs.Job {
	j.Payload = text(j.Payload)
	return j
}

// cloneRecord is an endpoint as stored: its plain secrets are never kept.
func cloneRecord(r webhooks.Record) webhooks.Record {
	e := &r.Endpoint
	e.Events, e.Secret, e.PreviousSecret = listOrNil(e.Events), "", ""
	e.PreviousUntil, e.DisabledAt, e.FailingSince = utc(e.PreviousUntil), utcPtr(e.DisabledAt), utcPtr(e.FailingSince)
	e.CreatedAt, e.UpdatedAt = utc(e.CreatedAt), utc(e.UpdatedAt)
	r.SealedSecret, r.SealedPrevious = bytes.Clone(r.SealedSecret), bytes.Clone(r.SealedPrevious)
	return r
}

// cloneDelivery is a delivery as stored, without its event's payload and
// its attempts (read with it from their tables).
func cloneDelivery(d webhook.Delivery) webhook.Delivery {
	d.Payload, d.Log = nil, nil
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = utc(d.NextAttemptAt), utc(d.CreatedAt), utc(d.UpdatedAt)
	return d
}

// window is rows[offset:offset+limit] within bounds; a negative limit
// keeps every row from offset on.
func window[T any](rows []T, offset, limit int) []T {
	offset = min(max(offset, 0), len(rows))
	rows = rows[offset:]
	if limit >= 0 && limit < len(rows) {
		rows = rows[:limit]
	}
	return rows
}

// unbounded is bun's Limit: zero or less means no limit.
func unbounded(limit int) int {
	if limit <= 0 {
		return -1
	}
	return limit
}
