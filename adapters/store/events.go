package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
)

var (
	_ appmessaging.EventLog     = EventLog{}
	_ appmessaging.LiveMessages = MessagingStore{}
)

// EventLog reads the events every account's commits appended, in the
// order of their position (seq), for the live feeds.
type EventLog struct{ db *DB }

// EventLog returns the event log.
func (db *DB) EventLog() EventLog { return EventLog{db} }

// loggedEventRow is an events row with its position.
type loggedEventRow struct {
	bun.BaseModel `bun:"table:events"`
	Seq           int64          `bun:"seq"`
	ID            string         `bun:"id"`
	AccountID     string         `bun:"account_id"`
	Type          string         `bun:"type"`
	ThreadID      sql.NullString `bun:"thread_id"`
	Payload       string         `bun:"payload"`
	CreatedAt     time.Time      `bun:"created_at"`
}

// EventsAfter reads, in seq order, up to limit events after a position or
// at the given missing positions.
func (l EventLog) EventsAfter(ctx context.Context, after int64, also []int64, limit int) ([]appmessaging.LoggedEvent, error) {
	db := l.db
	q := db.read.NewSelect().Model((*loggedEventRow)(nil))
	if len(also) > 0 {
		q = q.Where("seq > ? OR seq IN (?)", after, bun.List(also))
	} else {
		q = q.Where("seq > ?", after)
	}
	var rows []loggedEventRow
	if err := q.Order("seq").Limit(limit).Scan(ctx, &rows); err != nil {
		return nil, translate(err, "event")
	}
	out := make([]appmessaging.LoggedEvent, len(rows))
	for i, r := range rows {
		out[i] = appmessaging.LoggedEvent{Seq: r.Seq, Event: event.Event{
			ID: r.ID, AccountID: r.AccountID, Type: event.Type(r.Type), ThreadID: r.ThreadID.String,
			Payload: []byte(r.Payload), CreatedAt: r.CreatedAt.UTC(),
		}}
	}
	return out, nil
}

// LastEventSeq is the highest seq in the log.
func (l EventLog) LastEventSeq(ctx context.Context) (int64, error) {
	db := l.db
	var seq sql.NullInt64
	if err := db.read.NewRaw("SELECT MAX(seq) FROM events").Scan(ctx, &seq); err != nil {
		return 0, translate(err, "event")
	}
	return seq.Int64, nil
}

// EventWakeups shares the store's commit wake-up with the job runners: a
// transaction that appends an event signals it after its commit, in this
// process directly and in other processes through LISTEN/NOTIFY on
// Postgres (SQLite processes sharing a file rely on the reader's poll).
func (l EventLog) EventWakeups() (<-chan struct{}, func()) { return l.db.JobWakeups() }

// eventAppended makes the commit of the current transaction (or, outside
// one, the event itself) wake the event log's readers.
func (r *Conn) eventAppended() { r.jobsEnqueued() }
