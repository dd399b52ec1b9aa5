package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/application/retention"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// RetentionStore is the storage of the history pruner (retention.Store,
// retention.Lock).
type RetentionStore struct{ *Conn }

var (
	_ retention.Store = RetentionStore{}
	_ retention.Lock  = RetentionStore{}
)

// RetentionStore is db's RetentionStore.
func (db *DB) RetentionStore() RetentionStore { return RetentionStore{db.base} }

// pruneLockID is the Postgres advisory lock key held while a process
// prunes (an arbitrary constant: "swbprun" in ASCII).
const pruneLockID = 0x737762_7072756e

// Exclusively runs fn while this process holds the pruning lock: a
// Postgres advisory lock on a connection of its own, or an flock beside
// the SQLite file. When another process (or another DB of this one)
// holds it, fn is not run.
func (r RetentionStore) Exclusively(ctx context.Context, fn func(ctx context.Context) error) (bool, error) {
	if r.dialect == SQLite {
		f, err := os.OpenFile(r.db.sqlitePath+".prune-lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return false, fmt.Errorf("open the pruning lock: %w", err)
		}
		defer f.Close()
		if locked, err := tryLock(f); !locked {
			if err != nil {
				err = fmt.Errorf("take the pruning lock: %w", err)
			}
			return false, err
		}
		defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
		return true, fn(ctx)
	}
	// The advisory lock belongs to a session: it is taken and released on
	// one pinned connection, which a dropped connection releases too.
	conn, err := r.db.write.Conn(ctx)
	if err != nil {
		return false, translate(err, "pruning lock")
	}
	defer conn.Close()
	var locked bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", pruneLockID).Scan(&locked); err != nil {
		return false, translate(err, "pruning lock")
	}
	if !locked {
		return false, nil
	}
	defer func() {
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(unlockCtx, "SELECT pg_advisory_unlock(?)", pruneLockID)
	}()
	return true, fn(ctx)
}

// AccountRetentions lists every account with its own history retention.
func (r RetentionStore) AccountRetentions(ctx context.Context) ([]retention.AccountRetention, error) {
	var rows []struct {
		ID       string `bun:"id"`
		Days     int    `bun:"history_retention_days"`
		Messages int    `bun:"message_retention_days"`
	}
	if err := r.read.NewRaw("SELECT id, history_retention_days, message_retention_days FROM accounts ORDER BY id").Scan(ctx, &rows); err != nil {
		return nil, translate(err, "account")
	}
	out := make([]retention.AccountRetention, len(rows))
	for i, row := range rows {
		out[i] = retention.AccountRetention{AccountID: row.ID, Days: row.Days, MessageDays: row.Messages}
	}
	return out, nil
}

// PruneHistory deletes one batch of an account's old history of one kind
// (retention.Store states the rules), in one transaction.
func (r RetentionStore) PruneHistory(ctx context.Context, q retention.Query) (retention.Step, error) {
	var step retention.Step
	err := r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		var err error
		tx := RetentionStore{c}
		switch q.Kind {
		case retention.WebhookDeliveries:
			step, err = tx.pruneDeliveries(ctx, q)
		case retention.Events:
			step, err = tx.pruneEvents(ctx, q)
		case retention.CronExecutions:
			step, err = tx.pruneCronExecutions(ctx, q)
		case retention.SandboxEmails:
			step, err = tx.pruneSandboxEmails(ctx, q)
		case retention.Messages:
			step, err = tx.pruneMessages(ctx, q)
		case retention.Emails:
			step, err = tx.pruneEmails(ctx, q)
		default:
			err = fmt.Errorf("unknown kind of history %q", q.Kind)
		}
		return err
	})
	if err != nil {
		return retention.Step{}, translate(err, string(q.Kind))
	}
	return step, nil
}

// window reads the next rows of the account's walk of a table kept in
// seq order, from after on, and returns the positions of those recorded
// (column at) before cutoff, where the walk resumes, and whether it is
// done: it is once a row recorded at or after the cutoff, or the table's
// end, is reached.
func (r RetentionStore) window(ctx context.Context, table, at string, cutoff any, q retention.Query) (old []int64, step retention.Step, err error) {
	var rows []struct {
		Seq int64 `bun:"seq"`
		Old int   `bun:"old"`
	}
	query := "SELECT seq, CASE WHEN " + at + " < ? THEN 1 ELSE 0 END AS old FROM " + table + " WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?"
	if err := r.write.NewRaw(query, cutoff, q.AccountID, q.After, q.Limit).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, retention.Step{}, err
	}
	step.Done = len(rows) < q.Limit
	for _, row := range rows {
		if row.Old == 1 {
			old = append(old, row.Seq)
		} else {
			step.Done = true
		}
		step.Next = row.Seq
	}
	return old, step, nil
}

// pruneDeliveries deletes old deliveries that are no longer pending, with
// their attempts.
func (r RetentionStore) pruneDeliveries(ctx context.Context, q retention.Query) (retention.Step, error) {
	old, step, err := r.window(ctx, "webhook_deliveries", "created_at", q.Before, q)
	if err != nil || len(old) == 0 {
		return step, err
	}
	var ids []string
	if err := r.write.NewRaw("DELETE FROM webhook_deliveries WHERE seq IN (?) AND created_at < ? AND status <> ? RETURNING id",
		bun.List(old), q.Before, string(webhook.Pending)).Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return step, err
	}
	if len(ids) > 0 {
		if _, err := r.write.NewRaw("DELETE FROM webhook_attempts WHERE delivery_id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
			return step, err
		}
	}
	step.Deleted = len(ids)
	return step, nil
}

// pruneEvents deletes old events that no delivery refers to any more,
// the newest event of the log aside.
func (r RetentionStore) pruneEvents(ctx context.Context, q retention.Query) (retention.Step, error) {
	old, step, err := r.window(ctx, "events", "created_at", q.Before, q)
	if err != nil || len(old) == 0 {
		return step, err
	}
	res, err := r.write.NewRaw(`DELETE FROM events WHERE seq IN (?) AND created_at < ?
		AND seq < (SELECT MAX(seq) FROM events)
		AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)`,
		bun.List(old), q.Before).Exec(ctx)
	if err != nil {
		return step, err
	}
	n, err := res.RowsAffected()
	step.Deleted = int(n)
	return step, err
}

// pruneCronExecutions deletes old executions that ended (success or
// failed), oldest first.
func (r RetentionStore) pruneCronExecutions(ctx context.Context, q retention.Query) (retention.Step, error) {
	res, err := r.write.NewRaw(`DELETE FROM cron_executions WHERE id IN (
			SELECT id FROM cron_executions WHERE account_id = ? AND started_at < ? AND status IN (?)
			ORDER BY started_at LIMIT ?)
		AND status IN (?)`,
		q.AccountID, micros(q.Before), bun.List(finished), q.Limit, bun.List(finished)).Exec(ctx)
	if err != nil {
		return retention.Step{}, err
	}
	n, err := res.RowsAffected()
	return retention.Step{Deleted: int(n), Done: int(n) < q.Limit}, err
}

// pruneSandboxEmails deletes the old emails of the account's sandbox
// mailbox and takes them off its counts. On Postgres the totals row is
// locked first, as every keep does, so the two never wait for each other
// in opposite orders.
func (r RetentionStore) pruneSandboxEmails(ctx context.Context, q retention.Query) (retention.Step, error) {
	old, step, err := r.window(ctx, "sandbox_emails", "date", micros(q.Before), q)
	if err != nil || len(old) == 0 {
		return step, err
	}
	if r.dialect == Postgres {
		if _, err := r.write.NewRaw("SELECT 1 FROM sandbox_mailbox_totals WHERE id = 1 FOR UPDATE").Exec(ctx); err != nil {
			return step, err
		}
	}
	var sizes []int64
	if err := r.write.NewRaw("DELETE FROM sandbox_emails WHERE seq IN (?) AND date < ? RETURNING size",
		bun.List(old), micros(q.Before)).Scan(ctx, &sizes); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return step, err
	}
	if len(sizes) == 0 {
		return step, nil
	}
	removed := mailboxUsage{Emails: int64(len(sizes))}
	for _, n := range sizes {
		removed.Bytes += n
	}
	step.Deleted = len(sizes)
	return step, MailboxStore(r).takeOff(ctx, q.AccountID, removed)
}

// messageThreadWindow is how many threads one batch of the messages' walk
// looks in.
const messageThreadWindow = 100

// pruneMessages deletes old messages that are no longer queued from the
// next threads of the account's walk (by thread id, through the
// messages_thread_recent index, so that no index on messages is needed
// for it), with their reactions; the replies quoting them lose the
// quote. A window of threads that had a full batch is walked again.
func (r RetentionStore) pruneMessages(ctx context.Context, q retention.Query) (retention.Step, error) {
	var threads []string
	if err := r.write.NewRaw("SELECT id FROM threads WHERE account_id = ? AND id > ? ORDER BY id LIMIT ?",
		q.AccountID, q.AfterKey, messageThreadWindow).Scan(ctx, &threads); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return retention.Step{}, err
	}
	if len(threads) == 0 {
		return retention.Step{Done: true}, nil
	}
	var ids []string
	if err := r.write.NewRaw(`DELETE FROM messages WHERE id IN (
			SELECT id FROM messages WHERE thread_id IN (?) AND created_at < ? AND status <> ? LIMIT ?)
		AND created_at < ? AND status <> ? RETURNING id`,
		bun.List(threads), q.Before, string(messaging.Queued), q.Limit, q.Before, string(messaging.Queued)).Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return retention.Step{}, err
	}
	step := retention.Step{Deleted: len(ids), NextKey: threads[len(threads)-1]}
	if len(ids) >= q.Limit {
		step.NextKey = q.AfterKey
	} else {
		step.Done = len(threads) < messageThreadWindow
	}
	if len(ids) == 0 {
		return step, nil
	}
	if _, err := r.write.NewRaw("DELETE FROM message_reactions WHERE message_id IN (?)", bun.List(ids)).Exec(ctx); err != nil {
		return step, err
	}
	_, err := r.write.NewRaw("UPDATE messages SET quoted_text = '' WHERE thread_id IN (?) AND reply_to_message_id IN (?) AND quoted_text <> ''",
		bun.List(threads), bun.List(ids)).Exec(ctx)
	return step, err
}

// pruneEmails deletes the account's old emails that are no longer queued,
// oldest first, with their attachments.
func (r RetentionStore) pruneEmails(ctx context.Context, q retention.Query) (retention.Step, error) {
	var ids []string
	if err := r.write.NewRaw(`DELETE FROM emails WHERE id IN (
			SELECT id FROM emails WHERE account_id = ? AND created_at < ? AND status <> ? ORDER BY created_at, id LIMIT ?)
		AND status <> ? RETURNING id`,
		q.AccountID, q.Before, string(email.Queued), q.Limit, string(email.Queued)).Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return retention.Step{}, err
	}
	step := retention.Step{Deleted: len(ids), Done: len(ids) < q.Limit}
	if len(ids) == 0 {
		return step, nil
	}
	_, err := r.write.NewRaw("DELETE FROM email_attachments WHERE email_id IN (?)", bun.List(ids)).Exec(ctx)
	return step, err
}
