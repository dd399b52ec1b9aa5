package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/switchboard-dev/switchboard/domain/email"
)

// Deferred inserts.
//
// The idea of buffered enqueues (jobbuffer.go), for the other rows a
// transaction creates and does not read back: inside a transaction, an
// insert of a brand-new row whose id the caller made (an email, say) keeps
// the row with the transaction, and just before the commit each table's
// kept rows are written by one multi-row INSERT. A shared batch of 64 sends
// then costs one INSERT per table instead of 64 round trips, each parsed and
// planned. A read of such a table inside the same transaction writes the
// kept rows first (flushRows), so a transaction always sees its own rows.
// A row that cannot be written (a duplicate id) fails the INSERT and so the
// commit; in a shared batch every unit then runs alone (shared.go), so the
// error still reaches the caller whose row it was.

// deferredTable is one table's kept rows.
type deferredTable interface {
	// take returns the INSERT of the kept rows, nil when there are none,
	// and forgets them.
	take(db bun.IDB) *pendingWrite
}

// deferredRows keeps rows of one model type.
type deferredRows[T any] struct {
	// explain turns the INSERT's error into the callers' (translate).
	explain func(error) error
	rows    []T
}

func (d *deferredRows[T]) take(db bun.IDB) *pendingWrite {
	if len(d.rows) == 0 {
		return nil
	}
	rows, explain := d.rows, d.explain
	d.rows = nil
	return &pendingWrite{
		// Nothing is read back: without Returning("NULL"), bun adds
		// RETURNING for columns left to their default (a nil time),
		// making the INSERT a query.
		query: db.NewInsert().Model(&rows).Returning("NULL"),
		wrap: func(err error) error {
			return fmt.Errorf("insert %d rows: %w", len(rows), explain(err))
		},
	}
}

// pendingWrite is one statement writing what a transaction kept.
type pendingWrite struct {
	query keptQuery
	// wrap explains the statement's error.
	wrap func(error) error
}

// keptQuery is a statement that writes what a transaction kept: rendered
// into a batch's one query (lazytx.go) or run.
type keptQuery interface {
	bun.Query
	Exec(ctx context.Context, dest ...any) (sql.Result, error)
}

// runWrites runs writes one by one.
func runWrites(ctx context.Context, writes []*pendingWrite) error {
	for _, w := range writes {
		if _, err := w.query.Exec(ctx); err != nil {
			return w.wrap(err)
		}
	}
	return nil
}

// insertDeferred inserts row, a model of table, at the commit of r's
// transaction, or at once outside a transaction.
func insertDeferred[T any](ctx context.Context, r *Repos, table, noun string, row T) error {
	return insertDeferredExplained(ctx, r, table, row, func(err error) error { return translate(err, noun) })
}

// insertDeferredExplained is insertDeferred with explain turning the
// INSERT's error into the caller's.
func insertDeferredExplained[T any](ctx context.Context, r *Repos, table string, row T, explain func(error) error) error {
	if r.tx == nil {
		_, err := r.write.NewInsert().Model(&row).Returning("NULL").Exec(ctx)
		if err != nil {
			return explain(err)
		}
		return nil
	}
	if r.tx.rows == nil {
		r.tx.rows = map[string]deferredTable{}
	}
	t, ok := r.tx.rows[table]
	if !ok {
		t = &deferredRows[T]{explain: explain, rows: make([]T, 0, max(1, r.tx.units))}
		r.tx.rows[table] = t
		r.tx.tables = append(r.tx.tables, table)
	}
	d, ok := t.(*deferredRows[T])
	if !ok {
		return fmt.Errorf("deferred insert into %s: rows of two types", table)
	}
	d.rows = append(d.rows, row)
	return nil
}

// flushRows writes the rows kept by r's transaction, table by table in the
// order the tables were first written, and the thread activity it kept.
func (r *Repos) flushRows(ctx context.Context) error {
	return runWrites(ctx, r.takeRowWrites())
}

// takeRowWrites returns the statements that write the rows and thread
// activity r's transaction kept, and forgets them.
func (r *Repos) takeRowWrites() []*pendingWrite {
	if r.tx == nil {
		return nil
	}
	var writes []*pendingWrite
	for _, table := range r.tx.tables {
		if w := r.tx.rows[table].take(r.write); w != nil {
			writes = append(writes, w)
		}
	}
	writes = append(writes, r.takeTouchWrites()...)
	writes = append(writes, r.takeStatusWrites()...)
	return append(writes, r.takeDeliveryWrites()...)
}

// touchThread keeps a thread's newest activity time for the commit.
func (t *txState) touchThread(threadID string, at time.Time) {
	if t.touches == nil {
		t.touches = map[string]time.Time{}
	}
	if prev, ok := t.touches[threadID]; !ok || at.After(prev) {
		t.touches[threadID] = at
	}
}

// flushTouches writes the kept thread activity: one statement on Postgres.
func (r *Repos) flushTouches(ctx context.Context) error {
	return runWrites(ctx, r.takeTouchWrites())
}

// takeTouchWrites returns the statements that write the kept thread
// activity, and forgets it.
func (r *Repos) takeTouchWrites() []*pendingWrite {
	if r.tx == nil {
		return nil
	}
	return takeKeyedUpdates(r, r.tx.touches, "thread",
		func(id string, at time.Time) keptQuery { return touchUpdate(r.write, id, at) },
		func(ids []string, ats []time.Time) keptQuery {
			return r.write.NewRaw(`UPDATE threads AS t SET last_message_at = u.at, updated_at = u.at
		FROM unnest(?::text[], ?::timestamptz[]) AS u(id, at) WHERE t.id = u.id`,
				pgdialect.Array(ids), pgdialect.Array(ats))
		})
}

// touchUpdate is the UPDATE of one thread's activity.
func touchUpdate(db bun.IDB, threadID string, at time.Time) *bun.UpdateQuery {
	return db.NewUpdate().Model((*threadRow)(nil)).Set("last_message_at = ?", at).Set("updated_at = ?", at).Where("id = ?", threadID)
}

// takeKeyedUpdates returns the statements that write kept, changes of rows
// by id, and forgets them: on Postgres one statement for all (together),
// elsewhere one per row (single). The rows go in id order, so that
// concurrent batches changing the same rows lock them in the same order.
func takeKeyedUpdates[V any](r *Repos, kept map[string]V, noun string,
	single func(id string, v V) keptQuery, together func(ids []string, vs []V) keptQuery,
) []*pendingWrite {
	if len(kept) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(kept))
	vs := make([]V, len(ids))
	for i, id := range ids {
		vs[i] = kept[id]
	}
	clear(kept)
	wrap := func(err error) error { return translate(err, noun) }
	if r.dialect != Postgres {
		writes := make([]*pendingWrite, len(ids))
		for i, id := range ids {
			writes[i] = &pendingWrite{wrap: wrap, query: single(id, vs[i])}
		}
		return writes
	}
	return []*pendingWrite{{wrap: wrap, query: together(ids, vs)}}
}

// Deferred status changes.
//
// A message's status change inside a transaction is kept like a new row:
// the delivery workers' shared batches then write all their status changes
// with one UPDATE at the commit, instead of a round trip each, and a batch
// that only changed statuses and appended events runs as one query
// (lazytx.go). A later change of the same message replaces the kept one.
// The changes are written after the kept rows (a message inserted and
// changed in one transaction exists by then), and a read inside the
// transaction writes them first, as it writes kept rows.

// statusChange is what UpdateMessage writes.
type statusChange struct {
	status, failureCode, failureText string
	// providerID is empty for none (NULL).
	providerID string
	updatedAt  time.Time
}

// update is the UPDATE of one message.
func (c statusChange) update(db bun.IDB, id string) *bun.UpdateQuery {
	return db.NewUpdate().Model((*messageRow)(nil)).
		Set("status = ?", c.status).Set("failure_code = ?", c.failureCode).Set("failure_text = ?", c.failureText).
		Set("provider_message_id = ?", nullable(c.providerID)).Set("updated_at = ?", c.updatedAt).
		Where("id = ?", id)
}

// keepByID keeps v, the newest change of row id, in *kept, made for the
// transaction's units on first use.
func keepByID[V any](kept *map[string]V, units int, id string, v V) {
	if *kept == nil {
		*kept = make(map[string]V, max(1, units))
	}
	(*kept)[id] = v
}

// takeStatusWrites returns the statements that write the status changes
// r's transaction kept, and forgets them.
func (r *Repos) takeStatusWrites() []*pendingWrite {
	return takeKeyedUpdates(r, r.tx.statuses, "message",
		func(id string, c statusChange) keptQuery { return c.update(r.write, id) },
		func(ids []string, changes []statusChange) keptQuery {
			var status, code, text, provider []string
			var at []time.Time
			for _, c := range changes {
				status, code, text = append(status, c.status), append(code, c.failureCode), append(text, c.failureText)
				provider, at = append(provider, c.providerID), append(at, c.updatedAt)
			}
			return r.write.NewRaw(`UPDATE messages AS m SET status = u.status,
		failure_code = u.failure_code, failure_text = u.failure_text,
		provider_message_id = NULLIF(u.provider_message_id, ''), updated_at = u.updated_at
		FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::timestamptz[])
			AS u(id, status, failure_code, failure_text, provider_message_id, updated_at)
		WHERE m.id = u.id`,
				pgdialect.Array(ids), pgdialect.Array(status), pgdialect.Array(code),
				pgdialect.Array(text), pgdialect.Array(provider), pgdialect.Array(at))
		})
}

// emailDelivery is what UpdateEmailDelivery writes: kept in a transaction
// like a message's status change, and written only to a queued email.
type emailDelivery struct {
	status, reply, failureCode string
	attempts                   int
	sentAt                     *time.Time
	updatedAt                  time.Time
}

// update is the UPDATE of one email.
func (d emailDelivery) update(db bun.IDB, id string) *bun.UpdateQuery {
	return db.NewUpdate().Model((*emailRow)(nil)).
		Set("status = ?", d.status).Set("reply = ?", d.reply).Set("failure_code = ?", d.failureCode).
		Set("attempts = ?", d.attempts).Set("sent_at = ?", d.sentAt).Set("updated_at = ?", d.updatedAt).
		Where("id = ?", id).Where("status = ?", string(email.Queued))
}

// takeDeliveryWrites returns the statements that write the delivery
// outcomes r's transaction kept, and forgets them.
func (r *Repos) takeDeliveryWrites() []*pendingWrite {
	return takeKeyedUpdates(r, r.tx.deliveries, "email",
		func(id string, d emailDelivery) keptQuery { return d.update(r.write, id) },
		func(ids []string, ds []emailDelivery) keptQuery {
			var status, reply, code, sentAt []string
			var attempts []int
			var updatedAt []time.Time
			for _, d := range ds {
				status, reply, code = append(status, d.status), append(reply, d.reply), append(code, d.failureCode)
				attempts, updatedAt = append(attempts, d.attempts), append(updatedAt, d.updatedAt)
				at := "" // NULL
				if d.sentAt != nil {
					at = d.sentAt.UTC().Format(time.RFC3339Nano)
				}
				sentAt = append(sentAt, at)
			}
			return r.write.NewRaw(`UPDATE emails AS e SET status = u.status, reply = u.reply,
		failure_code = u.failure_code, attempts = u.attempts,
		sent_at = NULLIF(u.sent_at, '')::timestamptz, updated_at = u.updated_at
		FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::int[], ?::text[], ?::timestamptz[])
			AS u(id, status, reply, failure_code, attempts, sent_at, updated_at)
		WHERE e.id = u.id AND e.status = ?`,
				pgdialect.Array(ids), pgdialect.Array(status), pgdialect.Array(reply), pgdialect.Array(code),
				pgdialect.Array(attempts), pgdialect.Array(sentAt), pgdialect.Array(updatedAt), string(email.Queued))
		})
}

// flushPending writes everything r's transaction kept for its commit: rows
// and thread activity, then jobs.
func (r *Repos) flushPending(ctx context.Context) error {
	return runWrites(ctx, r.takePendingWrites())
}

// takePendingWrites returns the statements flushPending runs, and forgets
// what they write.
func (r *Repos) takePendingWrites() []*pendingWrite {
	return append(r.takeRowWrites(), r.takeJobWrites()...)
}
