package store

import (
	"context"
	"database/sql"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/schema"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// A batch on Postgres: each statement is fixed SQL text with $N
// placeholders, and the values of the batch's rows are handed to the
// driver as parameters, never written into the text. (pgdriver puts them
// in on the client, quoting each by its type, and sends the result with
// the simple protocol, which runs several statements in one round trip.)
// The texts hold no comments and no quoted text but fixed literals, since
// the driver looks for placeholders outside quotes only.

// boundStatement is one named statement of a batch with its parameters.
type boundStatement struct {
	name string
	text string
	// args are the values of the placeholders $1 to $len(args).
	args []any
}

// binder numbers placeholders and keeps the values bound to them.
type binder struct{ args []any }

// bind returns the placeholder of v's parameter.
func (p *binder) bind(v any) string {
	p.args = append(p.args, v)
	return "$" + strconv.Itoa(len(p.args))
}

// write writes the placeholder of v's parameter to q.
func (p *binder) write(q *strings.Builder, v any) {
	p.args = append(p.args, v)
	var digits [20]byte
	q.WriteByte('$')
	q.Write(strconv.AppendInt(digits[:0], int64(len(p.args)), 10))
}

// bindRaw is sql, whose ? are the placeholders of args in order, with
// each ? replaced by its parameter's $N.
func bindRaw(p *binder, sql string, args []any) string {
	parts := strings.Split(sql, "?")
	var q strings.Builder
	for i, part := range parts {
		q.WriteString(part)
		if i < len(args) {
			q.WriteString(p.bind(args[i]))
		}
	}
	return q.String()
}

// stringType is the type of a plain string column.
var stringType = reflect.TypeFor[string]()

// fieldArg is a column's value as a parameter. A plain string is converted
// as a string, not through reflect.Value.Interface, so that the empty
// strings most optional columns hold cost no allocation.
func fieldArg(v reflect.Value) any {
	if v.Type() == stringType {
		return v.String()
	}
	return v.Interface()
}

// pgStatements returns the Postgres statements that write b, in
// batchStatements' order, their placeholders numbered by the binder next
// gives each: one for all, to run them as one query, or a new one each, to
// run them one by one.
func pgStatements(tables rowTables, b writes.Batch, now time.Time, next func() *binder) []boundStatement {
	var out []boundStatement
	add := func(name string, build func(p *binder) string) {
		p := next()
		from := len(p.args)
		out = append(out, boundStatement{name: name, text: build(p), args: p.args[from:]})
	}
	if len(b.Threads) > 0 || len(b.Groups) > 0 {
		rows, members := threadRows(b.Threads, b.Groups)
		add("insert threads", func(p *binder) string { return boundInsert(tables, p, rows, "") })
		if len(members) > 0 {
			add("insert threads", func(p *binder) string { return boundInsert(tables, p, members, "") })
		}
	}
	for _, g := range latestByID(b.GroupStates, func(g messaging.GroupState) string { return g.Thread.ID }) {
		add("save group states", func(p *binder) string { return saveGroupColumnsBound(p, g) })
		add("save group states", func(p *binder) string { return removeGoneMembersBound(p, g) })
		if len(g.Members) > 0 {
			add("save group states", func(p *binder) string { return upsertMembersBound(p, g) })
		}
	}
	if len(b.GroupChats) > 0 {
		add("link group chats", func(p *binder) string { return boundInsert(tables, p, mapRows(b.GroupChats, groupChatToRow), "") })
	}
	if len(b.Messages) > 0 {
		add("insert messages", func(p *binder) string { return boundInsert(tables, p, mapRows(b.Messages, messageToRow), "") })
	}
	if len(b.ThreadActivity) > 0 {
		add("record thread activity", func(p *binder) string { return touchThreadsBound(p, b.ThreadActivity, false) })
	}
	if len(b.Inbound) > 0 {
		contacts, threads := inboundRows(b.Inbound)
		add("record inbound activity", func(p *binder) string { return boundInsert(tables, p, contacts, contactUpsert) })
		add("record inbound activity", func(p *binder) string { return touchThreadsBound(p, threads, true) })
	}
	if len(b.Windows) > 0 {
		add("move thread windows", func(p *binder) string { return moveWindowsBound(p, b.Windows) })
	}
	writeContactsBound(tables, add, b.Contacts, b.ContactMerges)
	if len(b.Statuses) > 0 {
		add("move message statuses", func(p *binder) string { return moveStatusesBound(p, b.Statuses) })
	}
	if len(b.MessageReactions) > 0 {
		add("set message reactions", func(p *binder) string {
			return boundInsert(tables, p, reactionRows(b.MessageReactions), reactionUpsert)
		})
	}
	if len(b.MessageChanges) > 0 {
		add("change messages", func(p *binder) string { return changeMessagesBound(p, b.MessageChanges) })
	}
	if len(b.Events) > 0 {
		add("insert events", func(p *binder) string { return boundInsert(tables, p, mapRows(b.Events, eventToRow), "") })
	}
	if len(b.Deliveries) > 0 {
		add("insert webhook deliveries", func(p *binder) string { return boundInsert(tables, p, mapRows(b.Deliveries, deliveryToRow), "") })
	}
	if len(b.DeliveryStates) > 0 {
		add("save webhook delivery states", func(p *binder) string { return saveDeliveryStatesBound(p, b.DeliveryStates) })
	}
	if len(b.Attempts) > 0 {
		add("log webhook attempts", func(p *binder) string { return boundInsert(tables, p, mapRows(b.Attempts, attemptToRow), "") })
	}
	if len(b.EndpointHealth) > 0 {
		add("record endpoint health", func(p *binder) string { return recordEndpointHealthBound(p, b.EndpointHealth) })
	}
	if len(b.Emails) > 0 {
		add("insert emails", func(p *binder) string { return boundInsert(tables, p, mapRows(b.Emails, emailToRow), "") })
	}
	if len(b.EmailOutcomes) > 0 {
		add("record email deliveries", func(p *binder) string { return recordEmailOutcomesBound(p, b.EmailOutcomes) })
	}
	if len(b.EmailBounces) > 0 {
		add("record email bounces", func(p *binder) string { return recordEmailBouncesBound(p, b.EmailBounces) })
	}
	if len(b.EmailAttachments) > 0 {
		add("insert email attachments", func(p *binder) string {
			return boundInsert(tables, p, mapRows(b.EmailAttachments, attachmentToRow), "")
		})
	}
	if len(b.Spooled) > 0 {
		add("spool received emails", func(p *binder) string { return boundInsert(tables, p, mapRows(b.Spooled, spooledToRow), "") })
	}
	writeTemplateSetsBound(tables, add, b.TemplateSets)
	if len(b.Jobs) > 0 {
		add("enqueue jobs", func(p *binder) string {
			return boundInsert(tables, p, mapRows(b.Jobs, func(j jobs.EnqueueParams) newJobRow { return newJob(j, now) }), "")
		})
	}
	if len(b.CronJobs) > 0 {
		add("insert cron jobs", func(p *binder) string { return boundInsert(tables, p, mapRows(b.CronJobs, cronJobToRow), "") })
	}
	if len(b.Answers) > 0 {
		add("record idempotent answers", func(p *binder) string {
			return boundInsert(tables, p, mapRows(b.Answers, func(a writes.Answer) idempotencyResponseRow { return answerRow(a, now) }), "")
		})
	}
	return out
}

// mapRows is items as rows of their table.
func mapRows[T, R any](items []T, row func(T) R) []R {
	rows := make([]R, len(items))
	for i, it := range items {
		rows[i] = row(it)
	}
	return rows
}

// boundInsert is the multi-row INSERT of rows into their model's table,
// every column of every row a parameter, followed by suffix.
func boundInsert[R any](tables rowTables, p *binder, rows []R, suffix string) string {
	t := tables.tables.Get(reflect.TypeFor[R]())
	fields := written(tables, t, rows)
	var q strings.Builder
	q.Grow(len(rows) * len(fields) * 6)
	p.args = slices.Grow(p.args, len(rows)*len(fields))
	q.WriteString("INSERT INTO ")
	q.WriteString(string(t.SQLName))
	q.WriteString(" (")
	for i, f := range fields {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(string(f.SQLName))
	}
	q.WriteString(") VALUES ")
	for i := range rows {
		if i > 0 {
			q.WriteString(", ")
		}
		row := reflect.ValueOf(&rows[i]).Elem()
		q.WriteByte('(')
		for j, f := range fields {
			if j > 0 {
				q.WriteString(", ")
			}
			p.write(&q, fieldArg(f.Value(row)))
		}
		q.WriteByte(')')
	}
	q.WriteString(suffix)
	return q.String()
}

// rowTables are the models of the batch tables with the schema's zero
// defaults.
type rowTables struct {
	tables *schema.Tables
	zero   zeroDefaults
}

// written is the fields of t an INSERT of rows writes: all but those left
// to a default that is their zero value in every row (zeroDefaults).
func written[R any](tables rowTables, t *schema.Table, rows []R) []*schema.Field {
	z := tables.zero[string(t.Name)]
	if len(z) == 0 {
		return t.Fields
	}
	fields := make([]*schema.Field, 0, len(t.Fields))
	for _, f := range t.Fields {
		if tables.zero.omits(string(t.Name), f.Name, f) && allZero(f, rows) {
			continue
		}
		fields = append(fields, f)
	}
	return fields
}

// allZero reports whether f is zero in every row.
func allZero[R any](f *schema.Field, rows []R) bool {
	for i := range rows {
		if !f.Value(reflect.ValueOf(&rows[i]).Elem()).IsZero() {
			return false
		}
	}
	return true
}

// updateFrom is the UPDATE set that takes its rows from a VALUES list:
// one parenthesized row per item, the placeholders of columns(item) each
// followed by its cast, named as alias says ("u(id, at) WHERE …").
func updateFrom[T any](p *binder, set string, items []T, casts []string, columns func(T) []any, alias string) string {
	var q strings.Builder
	q.WriteString(set)
	q.WriteString(" FROM (VALUES ")
	valuesList(&q, p, items, casts, columns)
	q.WriteString(") AS ")
	q.WriteString(alias)
	return q.String()
}

// valuesList writes one parenthesized row per item, the placeholders of
// columns(item), each followed by its cast.
func valuesList[T any](q *strings.Builder, p *binder, items []T, casts []string, columns func(T) []any) {
	for i, it := range items {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteByte('(')
		for j, v := range columns(it) {
			if j > 0 {
				q.WriteString(", ")
			}
			p.write(q, v)
			q.WriteString(casts[j])
		}
		q.WriteByte(')')
	}
}

// touchThreadsBound moves threads' last activity (and, for inbound
// messages, their last inbound message) to the newest of activity.
func touchThreadsBound(p *binder, activity []writes.ThreadActivity, inbound bool) string {
	set := "UPDATE threads AS t SET last_message_at = u.at, updated_at = u.at"
	if inbound {
		set += ", last_inbound_at = u.at"
	}
	return updateFrom(p, set, newestActivity(activity), []string{"::text", "::timestamptz"},
		func(a writes.ThreadActivity) []any { return []any{a.ThreadID, a.At} }, "u(id, at) WHERE t.id = u.id")
}

// moveWindowsBound moves threads' customer service windows forward, never
// back.
func moveWindowsBound(p *binder, ws []writes.ThreadWindow) string {
	return updateFrom(p, "UPDATE threads AS t SET window_closes_at = u.closes", latestWindows(ws), []string{"::text", "::timestamptz"},
		func(w writes.ThreadWindow) []any { return []any{w.ThreadID, w.ClosesAt.UTC()} },
		"u(id, closes) WHERE t.id = u.id AND (t.window_closes_at IS NULL OR t.window_closes_at < u.closes)")
}

// moveStatusesBound writes messages' new statuses.
func moveStatusesBound(p *binder, changes []writes.MessageStatus) string {
	return updateFrom(p, `UPDATE messages AS m SET status = u.status,
		failure_code = u.failure_code, failure_text = u.failure_text,
		provider_message_id = COALESCE(NULLIF(u.provider_message_id, ''), m.provider_message_id), updated_at = u.updated_at`,
		latestByID(changes, func(c writes.MessageStatus) string { return c.MessageID }),
		[]string{"::text", "::text", "::text", "::text", "::text", "::timestamptz"},
		func(c writes.MessageStatus) []any {
			return []any{c.MessageID, string(c.Status), c.FailureCode, c.FailureText, c.ProviderMessageID, c.UpdatedAt}
		},
		"u(id, status, failure_code, failure_text, provider_message_id, updated_at) WHERE m.id = u.id")
}

// saveDeliveryStatesBound writes webhook deliveries' new states.
func saveDeliveryStatesBound(p *binder, ds []webhook.Delivery) string {
	return updateFrom(p, `UPDATE webhook_deliveries AS d SET status = u.status, attempts = u.attempts,
		last_status_code = u.code, last_error = u.err, next_attempt_at = u.next, updated_at = u.updated`,
		latestByID(ds, func(d webhook.Delivery) string { return d.ID }),
		[]string{"::text", "::text", "::int", "::int", "::text", "::timestamptz", "::timestamptz"},
		func(d webhook.Delivery) []any {
			return []any{d.ID, string(d.Status), int64(d.Attempts), int64(d.LastStatusCode), d.LastError, d.NextAttemptAt, d.UpdatedAt}
		},
		"u(id, status, attempts, code, err, next, updated) WHERE d.id = u.id")
}

// recordEndpointHealthBound writes webhook endpoints' health.
func recordEndpointHealthBound(p *binder, es []webhook.Endpoint) string {
	return updateFrom(p, `UPDATE webhook_endpoints AS e SET enabled = u.enabled, disabled_reason = u.reason,
		disabled_at = u.disabled_at, failing_since = u.failing_since, updated_at = u.updated_at`,
		latestByID(es, func(e webhook.Endpoint) string { return e.AccountID }),
		[]string{"::text", "::boolean", "::text", "::timestamptz", "::timestamptz", "::timestamptz"},
		func(e webhook.Endpoint) []any {
			return []any{e.AccountID, e.Enabled, e.DisabledReason, nullableTime(e.DisabledAt), nullableTime(e.FailingSince), e.UpdatedAt}
		},
		"u(account_id, enabled, reason, disabled_at, failing_since, updated_at) WHERE e.account_id = u.account_id")
}

// nullableTime is t, or NULL when t is nil.
func nullableTime(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: *t, Valid: true}
}

// recordEmailOutcomesBound writes emails' deliveries, to emails still
// queued.
func recordEmailOutcomesBound(p *binder, outcomes []email.Email) string {
	q := updateFrom(p, `UPDATE emails AS e SET status = u.status, reply = u.reply,
		failure_code = u.failure_code, attempts = u.attempts, sent_at = u.sent_at, updated_at = u.updated_at`,
		latestByID(outcomes, func(e email.Email) string { return e.ID }),
		[]string{"::text", "::text", "::text", "::text", "::int", "::timestamptz", "::timestamptz"},
		func(e email.Email) []any {
			return []any{e.ID, string(e.Status), e.Reply, e.FailureCode, int64(e.Attempts), nullableTime(e.SentAt), e.UpdatedAt}
		},
		"u(id, status, reply, failure_code, attempts, sent_at, updated_at) WHERE e.id = u.id AND e.status = ")
	return q + p.bind(string(email.Queued))
}

// recordEmailBouncesBound marks emails bounced, those queued or sent.
func recordEmailBouncesBound(p *binder, bounces []writes.EmailBounce) string {
	q := updateFrom(p, `UPDATE emails AS e SET status = `+p.bind(string(email.Bounced))+`, failure_code = `+p.bind(appemail.BounceCode)+`,
		reply = u.reply, updated_at = u.updated_at`,
		bounces, []string{"::text", "::text", "::timestamptz"},
		func(b writes.EmailBounce) []any { return []any{b.EmailID, b.Reply, b.UpdatedAt} },
		"u(id, reply, updated_at) WHERE e.id = u.id AND e.status IN (")
	return q + p.bind(string(email.Queued)) + ", " + p.bind(string(email.Sent)) + ")"
}

// saveGroupColumnsBound writes a group's own columns (see
// saveGroupStates).
func saveGroupColumnsBound(p *binder, g messaging.GroupState) string {
	return "UPDATE threads SET name = " + p.bind(g.Thread.Name) + ", description = " + p.bind(g.Description) +
		", picture_url = " + p.bind(g.PictureURL) + ", invite_code = " + p.bind(nullable(g.InviteCode)) +
		", announcement = " + p.bind(g.Announcement) + ", locked = " + p.bind(g.Locked) +
		", invite_link = " + p.bind(g.InviteLink) + ", creating = " + p.bind(g.Creating) +
		", updated_at = " + p.bind(g.Thread.UpdatedAt) + " WHERE id = " + p.bind(g.Thread.ID) + " AND type = 'group'"
}

// removeGoneMembersBound deletes the members of a group that its state no
// longer lists.
func removeGoneMembersBound(p *binder, g messaging.GroupState) string {
	q := "DELETE FROM thread_participants WHERE thread_id IN (SELECT id FROM threads WHERE id = " + p.bind(g.Thread.ID) + " AND type = 'group')"
	if len(g.Members) == 0 {
		return q
	}
	placeholders := make([]string, len(g.Members))
	for i, m := range g.Members {
		placeholders[i] = p.bind(m.Address)
	}
	return q + " AND address NOT IN (" + strings.Join(placeholders, ", ") + ")"
}

// upsertMembersBound adds a group's new members and gives those who stay
// their roles (see saveGroupStates).
func upsertMembersBound(p *binder, g messaging.GroupState) string {
	var q strings.Builder
	q.WriteString(`INSERT INTO thread_participants (thread_id, address, name, admin, is_agent, joined_at)
		SELECT t.id, v.address, v.name, v.admin, v.is_agent, t.updated_at
		FROM threads AS t CROSS JOIN (VALUES `)
	valuesList(&q, p, g.Members, []string{"::text", "::text", "::boolean", "::boolean"},
		func(m messaging.Participant) []any { return []any{m.Address, m.Name, m.Admin, m.IsAgent} })
	q.WriteString(`) AS v(address, name, admin, is_agent)
		WHERE t.id = `)
	q.WriteString(p.bind(g.Thread.ID))
	q.WriteString(` AND t.type = 'group'
		ON CONFLICT (thread_id, address) DO UPDATE SET admin = excluded.admin, is_agent = excluded.is_agent`)
	return q.String()
}

// execBound runs statements on db one after the other, each with its own
// parameters, telling the query hooks about each.
func (r *Conn) execBound(ctx context.Context, db bun.IDB, statements []boundStatement) error {
	for _, s := range statements {
		done := r.observePrepared(ctx, s.text, s.args)
		_, err := execWithArgs(ctx, db, s.text, s.args)
		done(err)
		if err != nil {
			return batchStatement{name: s.name}.explain(err)
		}
	}
	return nil
}

// execWithArgs runs text with args on db's database/sql connection or
// transaction, handing the parameters to the driver (bun's own Exec
// would write them into the text).
func execWithArgs(ctx context.Context, db bun.IDB, text string, args []any) (sql.Result, error) {
	switch d := db.(type) {
	case *bun.DB:
		return d.DB.ExecContext(ctx, text, args...)
	case bun.Tx:
		return d.Tx.ExecContext(ctx, text, args...)
	}
	return db.ExecContext(ctx, text, args...)
}
