package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
	"modernc.org/sqlite"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/jobs"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// The write pipeline's committers (application/writes).
//
// A batch is written by a fixed list of named statements, one per kind of
// write, each for all the batch's rows of that kind: multi-row INSERTs,
// and on Postgres one UPDATE … FROM (VALUES …) per kind of change. On
// Postgres the statements are fixed text with bound parameters (bound.go)
// and go as one multi-statement query, which Postgres runs as one
// implicit transaction: one round trip whatever the batch's size. On
// SQLite they are bun's queries and run in a transaction.

var (
	_ writes.Committer = InlineCommitter{}
	_ writes.Committer = (*DB)(nil)
)

// InlineCommitter writes each batch in a transaction of its own.
type InlineCommitter struct{ db *DB }

// Inline returns the committer that writes each batch alone.
func (db *DB) Inline() InlineCommitter { return InlineCommitter{db: db} }

// Commit writes b alone.
func (c InlineCommitter) Commit(ctx context.Context, b writes.Batch) error {
	return c.db.commitAlone(ctx, b)
}

// Commit writes b, in one transaction with the batches of concurrent
// callers (group commit, shared.go) where it can.
func (db *DB) Commit(ctx context.Context, b writes.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.shared.commit(ctx, b)
}

// react adds to b the writes of the reactions reading on c.
func (db *DB) react(ctx context.Context, c *Conn, b *writes.Batch) error {
	if db.reactingOn == nil || len(b.Events) == 0 {
		return nil
	}
	return db.reactingOn(c).React(ctx, b)
}

// decide runs decide in a transaction and writes the batch it returns
// there (see writeInTx); nothing is written when decide fails.
func (db *DB) decide(ctx context.Context, decide func(ctx context.Context, c *Conn) (writes.Batch, error)) error {
	return db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		b, err := decide(ctx, c)
		if err != nil {
			return err
		}
		return c.writeInTx(ctx, b)
	})
}

// writeInTx writes b, with its reactions reading on r, in r's
// transaction.
func (r *Conn) writeInTx(ctx context.Context, b writes.Batch) error {
	if err := checkBatch(b); err != nil {
		return err
	}
	if err := r.db.react(ctx, r, &b); err != nil {
		return err
	}
	var err error
	if r.dialect == Postgres {
		err = r.execBound(ctx, r.write, pgStatements(rowTables{r.scanner.Dialect().Tables(), r.db.defaults()}, b, r.clock(), func() *binder { return &binder{} }))
	} else {
		err = execEach(ctx, batchStatements(r.write, b, r.clock()))
	}
	if err != nil {
		return err
	}
	if wakes(b) {
		r.tx.enqueued = true
	}
	return nil
}

// commitAlone writes b with its reactions atomically, alone.
func (db *DB) commitAlone(ctx context.Context, b writes.Batch) error {
	if err := checkBatch(b); err != nil {
		return err
	}
	if err := db.react(ctx, db.base, &b); err != nil {
		return err
	}
	return db.writeBatch(ctx, b)
}

// writeBatch writes b atomically (its reactions already in it).
func (db *DB) writeBatch(ctx context.Context, b writes.Batch) error {
	var err error
	if db.dialect == Postgres {
		err = db.execAsOne(ctx, b)
	} else {
		err = db.write.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			return execEach(ctx, batchStatements(tx, b, db.now()))
		})
	}
	if err == nil && wakes(b) {
		db.wake.signal()
	}
	return err
}

// execEach runs statements one after the other.
func execEach(ctx context.Context, statements []batchStatement) error {
	for _, s := range statements {
		if _, err := s.query.Exec(ctx); err != nil {
			return s.explain(err)
		}
	}
	return nil
}

// execAsOne runs b's Postgres statements as one multi-statement query on
// the pool, their parameters numbered across all of them: Postgres runs it
// as one implicit transaction.
func (db *DB) execAsOne(ctx context.Context, b writes.Batch) error {
	all := &binder{}
	statements := pgStatements(rowTables{db.write.Dialect().Tables(), db.defaults()}, b, db.now(), func() *binder { return all })
	if len(statements) == 0 {
		return nil
	}
	texts := make([]string, len(statements))
	for i, s := range statements {
		texts[i] = s.text
	}
	q := strings.Join(texts, ";\n")
	done := db.base.observePrepared(ctx, q, all.args)
	_, err := execWithArgs(ctx, db.write, q, all.args)
	done(err)
	if err != nil {
		return explainBatch(err)
	}
	return nil
}

// wakes tells whether b gives the job runners or the live readers
// something new.
func wakes(b writes.Batch) bool { return len(b.Jobs) > 0 || len(b.Events) > 0 }

// checkBatch refuses what a batch may not hold.
func checkBatch(b writes.Batch) error {
	for _, j := range b.Jobs {
		if err := j.Validate(); err != nil {
			return err
		}
		if j.UniqueKey != "" {
			return fmt.Errorf("job %s: a batch enqueues new work only, without a unique key", j.Kind)
		}
	}
	return nil
}

// batchStatement is one named statement of a batch.
type batchStatement struct {
	name  string
	query batchQuery
}

// batchQuery is a statement of bun's builders.
type batchQuery interface {
	bun.Query
	Exec(ctx context.Context, dest ...any) (sql.Result, error)
}

// explain turns the statement's error into the caller's.
func (s batchStatement) explain(err error) error {
	return fmt.Errorf("%s: %w", s.name, explainBatch(err))
}

// explainBatch turns a batch's error into the callers': an answer for a
// key that has one already is ErrAnsweredElsewhere; another taken unique
// value a Conflict.
func explainBatch(err error) error {
	if isUniqueViolation(err) && violatesIn(err, "idempotency_responses") {
		return idempotency.ErrAnsweredElsewhere
	}
	if isUniqueViolation(err) && violatesIndividualThread(err) {
		return writes.ErrThreadExists
	}
	return translate(err, "row")
}

// violatesIn tells whether a constraint violation is in table.
func violatesIn(err error, table string) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgErr.Field('t') == table
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		return strings.Contains(liteErr.Error(), table+".")
	}
	return false
}

// violatesIndividualThread tells whether a unique violation is of the one
// individual thread of an agent number and a user (threads_individual).
func violatesIndividualThread(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgErr.Field('n') == "threads_individual"
	}
	var liteErr *sqlite.Error
	if errors.As(err, &liteErr) {
		return strings.Contains(liteErr.Error(), "threads.contact")
	}
	return false
}

// batchStatements returns the SQLite statements that write b on db, in an
// order in which every row exists before a statement refers to it
// (pgStatements are Postgres's, in the same order).
func batchStatements(db bun.IDB, b writes.Batch, now time.Time) []batchStatement {
	var out []batchStatement
	add := func(name string, queries ...batchQuery) {
		for _, q := range queries {
			out = append(out, batchStatement{name: name, query: q})
		}
	}
	add("insert threads", insertThreads(db, b.Threads, b.Groups)...)
	add("save group states", saveGroupStates(db, b.GroupStates)...)
	add("link group chats", insertRows(db, b.GroupChats, groupChatToRow)...)
	add("insert messages", insertRows(db, b.Messages, messageToRow)...)
	add("record thread activity", touchThreads(db, b.ThreadActivity, false)...)
	add("record inbound activity", recordInbound(db, b.Inbound)...)
	add("move thread windows", moveWindows(db, b.Windows)...)
	add("write contacts", writeContacts(db, b.Contacts, b.ContactMerges)...)
	add("move message statuses", moveStatuses(db, b.Statuses)...)
	add("set message reactions", setReactions(db, b.MessageReactions)...)
	add("change messages", changeMessages(db, b.MessageChanges)...)
	add("insert events", insertRows(db, b.Events, eventToRow)...)
	add("insert webhook deliveries", insertRows(db, b.Deliveries, deliveryToRow)...)
	add("save webhook delivery states", saveDeliveryStates(db, b.DeliveryStates)...)
	add("log webhook attempts", insertRows(db, b.Attempts, attemptToRow)...)
	add("record endpoint health", recordEndpointHealth(db, b.EndpointHealth)...)
	add("insert emails", insertRows(db, b.Emails, emailToRow)...)
	add("record email deliveries", recordEmailOutcomes(db, b.EmailOutcomes)...)
	add("record email bounces", recordEmailBounces(db, b.EmailBounces)...)
	add("insert email attachments", insertRows(db, b.EmailAttachments, attachmentToRow)...)
	add("spool received emails", insertRows(db, b.Spooled, spooledToRow)...)
	add("replace message templates", writeTemplateSets(db, b.TemplateSets)...)
	add("enqueue jobs", insertRows(db, b.Jobs, func(p jobs.EnqueueParams) newJobRow { return newJob(p, now) })...)
	add("insert cron jobs", insertRows(db, b.CronJobs, cronJobToRow)...)
	add("record idempotent answers", insertRows(db, b.Answers, func(a writes.Answer) idempotencyResponseRow { return answerRow(a, now) })...)
	return out
}

// answerRow is the stored response to an Idempotency-Key.
func answerRow(a writes.Answer, now time.Time) idempotencyResponseRow {
	return idempotencyResponseRow{AccountID: a.AccountID, Key: a.Key, StatusCode: a.Response.Status, Body: nonNilBytes(a.Response.Body), CreatedAt: now.UTC()}
}

// insertRows is the multi-row INSERT of items as rows of their table
// (none for no items). Nothing is read back: without Returning("NULL"),
// bun adds RETURNING for columns left to their default (a nil time),
// making an INSERT a query.
func insertRows[T, R any](db bun.IDB, items []T, row func(T) R) []batchQuery {
	if len(items) == 0 {
		return nil
	}
	rows := mapRows(items, row)
	q := db.NewInsert().Model(&rows).Returning("NULL")
	return []batchQuery{q}
}

// newJobRow is a job as enqueued (its id is the table's identity).
type newJobRow struct {
	bun.BaseModel `bun:"table:jobs"`
	Kind          string         `bun:"kind"`
	State         string         `bun:"state"`
	Payload       []byte         `bun:"payload"`
	MaxAttempts   int            `bun:"max_attempts"`
	PaceKey       sql.NullString `bun:"pace_key"`
	AccountID     string         `bun:"account_id"`
	EndpointKey   sql.NullString `bun:"endpoint_key"`
	RunAt         int64          `bun:"run_at"`
	CreatedAt     int64          `bun:"created_at"`
}

func newJob(p jobs.EnqueueParams, now time.Time) newJobRow {
	runAt := p.RunAt
	if runAt.IsZero() {
		runAt = now
	}
	payload := p.Payload
	if payload == nil {
		payload = []byte{}
	}
	return newJobRow{
		Kind: p.Kind, State: string(jobs.StateAvailable), Payload: payload,
		MaxAttempts: cmp.Or(p.MaxAttempts, jobs.DefaultMaxAttempts),
		PaceKey:     nullable(p.PaceKey), AccountID: p.AccountID, EndpointKey: nullable(p.EndpointKey),
		RunAt: micros(runAt), CreatedAt: micros(now),
	}
}

// latestByID keeps the last change of each row, in id order, so that
// concurrent batches changing the same rows lock them in the same order.
func latestByID[T any](changes []T, id func(T) string) []T {
	if len(changes) < 2 {
		return changes
	}
	last := make(map[string]int, len(changes))
	for i, c := range changes {
		last[id(c)] = i
	}
	out := make([]T, 0, len(last))
	for i, c := range changes {
		if last[id(c)] == i {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(id(a), id(b)) })
	return out
}

// insertThreads inserts new threads and groups, then their participants.
func insertThreads(db bun.IDB, threads []writes.NewThread, groups []messaging.GroupState) []batchQuery {
	if len(threads) == 0 && len(groups) == 0 {
		return nil
	}
	rows, members := threadRows(threads, groups)
	out := []batchQuery{db.NewInsert().Model(&rows).Returning("NULL")}
	if len(members) > 0 {
		out = append(out, db.NewInsert().Model(&members).Returning("NULL"))
	}
	return out
}

// threadRows are the rows of new threads and groups, and of their
// participants, who join at the creation.
func threadRows(threads []writes.NewThread, groups []messaging.GroupState) ([]groupColumnsRow, []participantRow) {
	rows := make([]groupColumnsRow, 0, len(threads)+len(groups))
	var members []participantRow
	for _, n := range threads {
		rows = append(rows, groupColumnsRow{threadRow: threadToRow(n.Thread)})
		members = appendParticipants(members, n.Thread.ID, n.Participants, n.Thread.CreatedAt)
	}
	for _, g := range groups {
		rows = append(rows, groupToRow(g))
		members = appendParticipants(members, g.Thread.ID, g.Members, g.Thread.CreatedAt)
	}
	return rows, members
}

// appendParticipants appends the rows of members of thread, joined at.
func appendParticipants(rows []participantRow, thread string, members []messaging.Participant, at time.Time) []participantRow {
	for _, m := range members {
		rows = append(rows, participantRow{ThreadID: thread, Address: m.Address, Name: m.Name, Admin: m.Admin, IsAgent: m.IsAgent, JoinedAt: at})
	}
	return rows
}

// saveGroupStates writes groups' columns and replaces their members: a
// member who stays keeps the name and join time stored with it and takes
// their new roles; a new one joins at the group's UpdatedAt. A thread that
// is not a group is left as it is. Three statements per group.
func saveGroupStates(db bun.IDB, groups []messaging.GroupState) []batchQuery {
	var out []batchQuery
	for _, g := range latestByID(groups, func(g messaging.GroupState) string { return g.Thread.ID }) {
		out = append(out, db.NewUpdate().Model((*threadRow)(nil)).
			Set("name = ?", g.Thread.Name).Set("description = ?", g.Description).Set("picture_url = ?", g.PictureURL).
			Set("invite_code = ?", nullable(g.InviteCode)).Set("announcement = ?", g.Announcement).Set("locked = ?", g.Locked).
			Set("invite_link = ?", g.InviteLink).Set("creating = ?", g.Creating).
			Set("updated_at = ?", g.Thread.UpdatedAt).
			Where("id = ? AND type = 'group'", g.Thread.ID))
		addresses := make([]string, len(g.Members))
		for i, m := range g.Members {
			addresses[i] = m.Address
		}
		gone := db.NewDelete().Model((*participantRow)(nil)).
			Where("thread_id IN (SELECT id FROM threads WHERE id = ? AND type = 'group')", g.Thread.ID)
		if len(addresses) > 0 {
			gone = gone.Where("address NOT IN (?)", bun.List(addresses))
		}
		out = append(out, gone)
		if len(g.Members) == 0 {
			continue
		}
		// The members as a VALUES list, whose columns are named column1
		// to column4 on both databases; new members join at the group's
		// updated_at, which the UPDATE above has just set.
		var values strings.Builder
		args := make([]any, 0, 4*len(g.Members)+1)
		for i, m := range g.Members {
			if i > 0 {
				values.WriteString(", ")
			}
			values.WriteString("(?, ?, ?, ?)")
			args = append(args, m.Address, m.Name, m.Admin, m.IsAgent)
		}
		args = append(args, g.Thread.ID)
		out = append(out, db.NewRaw(`INSERT INTO thread_participants (thread_id, address, name, admin, is_agent, joined_at)
		SELECT t.id, v.column1, v.column2, v.column3, v.column4, t.updated_at
		FROM threads AS t CROSS JOIN (VALUES `+values.String()+`) AS v
		WHERE t.id = ? AND t.type = 'group'
		ON CONFLICT (thread_id, address) DO UPDATE SET admin = excluded.admin, is_agent = excluded.is_agent`, args...))
	}
	return out
}

// recordInbound records users who wrote: one upsert of their contacts
// (the newest non-empty name of each stays), and their threads' activity.
func recordInbound(db bun.IDB, activity []writes.InboundActivity) []batchQuery {
	if len(activity) == 0 {
		return nil
	}
	contacts, threads := inboundRows(activity)
	upsert := db.NewInsert().Model(&contacts).ModelTableExpr("contacts").On(contactConflict).Returning("NULL")
	return append([]batchQuery{upsert}, touchThreads(db, threads, true)...)
}

// contactConflict is what the upsert of a known contact changes: the name,
// unless the new one is empty, and the time it last wrote. contactUpsert
// is the clause as it follows an INSERT.
const (
	contactConflict = "CONFLICT (account_id, service, address) DO UPDATE SET " +
		"name = CASE WHEN EXCLUDED.name = '' THEN contacts.name ELSE EXCLUDED.name END, updated_at = EXCLUDED.updated_at"
	contactUpsert = " ON " + contactConflict
)

// inboundRows are the contacts that activity records, one per user (the
// newest non-empty name and time of each), and the threads' activity.
func inboundRows(activity []writes.InboundActivity) ([]contactRow, []writes.ThreadActivity) {
	type contactKey struct{ account, service, address string }
	latest := map[contactKey]contactRow{}
	var order []contactKey
	threads := make([]writes.ThreadActivity, len(activity))
	for i, a := range activity {
		threads[i] = writes.ThreadActivity{ThreadID: a.ThreadID, At: a.At}
		k := contactKey{a.AccountID, string(a.Service), a.Address}
		c, seen := latest[k]
		if !seen {
			order = append(order, k)
			c = contactRow{AccountID: a.AccountID, Service: string(a.Service), Address: a.Address, CreatedAt: a.At, UpdatedAt: a.At}
		}
		if a.Name != "" {
			c.Name = a.Name
		}
		if a.At.After(c.UpdatedAt) {
			c.UpdatedAt = a.At
		}
		latest[k] = c
	}
	contacts := make([]contactRow, len(order))
	for i, k := range order {
		contacts[i] = latest[k]
	}
	return contacts, threads
}

// newestActivity keeps the newest activity of each thread, threads in id
// order (see latestByID).
func newestActivity(activity []writes.ThreadActivity) []writes.ThreadActivity {
	return newestPerThread(activity, func(a writes.ThreadActivity) (string, time.Time) { return a.ThreadID, a.At })
}

// newestPerThread keeps the item of each thread whose time is the latest
// (the first of equal ones), threads in id order.
func newestPerThread[T any](items []T, of func(T) (string, time.Time)) []T {
	newest := map[string]T{}
	for _, it := range items {
		id, at := of(it)
		if prev, ok := newest[id]; ok {
			if _, prevAt := of(prev); !at.After(prevAt) {
				continue
			}
		}
		newest[id] = it
	}
	kept := make([]T, 0, len(newest))
	for _, id := range slices.Sorted(maps.Keys(newest)) {
		kept = append(kept, newest[id])
	}
	return kept
}

// touchThreads moves threads' last activity forward, and for inbound
// messages their last inbound message: one UPDATE per thread.
func touchThreads(db bun.IDB, activity []writes.ThreadActivity, inbound bool) []batchQuery {
	set := "last_message_at = ?0, updated_at = ?0"
	if inbound {
		set += ", last_inbound_at = ?0"
	}
	kept := newestActivity(activity)
	out := make([]batchQuery, len(kept))
	for i, a := range kept {
		out[i] = db.NewRaw("UPDATE threads SET "+set+" WHERE id = ?1", a.At, a.ThreadID)
	}
	return out
}

// latestWindows keeps the latest closing time of each thread's window,
// threads in id order.
func latestWindows(ws []writes.ThreadWindow) []writes.ThreadWindow {
	return newestPerThread(ws, func(w writes.ThreadWindow) (string, time.Time) { return w.ThreadID, w.ClosesAt })
}

// moveWindows moves threads' customer service windows forward, never
// back: one UPDATE per thread.
func moveWindows(db bun.IDB, ws []writes.ThreadWindow) []batchQuery {
	kept := latestWindows(ws)
	out := make([]batchQuery, len(kept))
	for i, w := range kept {
		out[i] = db.NewRaw("UPDATE threads SET window_closes_at = ?0 WHERE id = ?1 AND (window_closes_at IS NULL OR window_closes_at < ?0)",
			w.ClosesAt.UTC(), w.ThreadID)
	}
	return out
}

// moveStatuses writes messages' new statuses.
func moveStatuses(db bun.IDB, changes []writes.MessageStatus) []batchQuery {
	kept := latestByID(changes, func(c writes.MessageStatus) string { return c.MessageID })
	out := make([]batchQuery, len(kept))
	for i, c := range kept {
		out[i] = db.NewRaw(`UPDATE messages SET status = ?, failure_code = ?, failure_text = ?,
		provider_message_id = COALESCE(?, provider_message_id), updated_at = ? WHERE id = ?`,
			string(c.Status), c.FailureCode, c.FailureText, nullable(c.ProviderMessageID), c.UpdatedAt, c.MessageID)
	}
	return out
}

// saveDeliveryStates writes webhook deliveries' new states.
func saveDeliveryStates(db bun.IDB, ds []webhook.Delivery) []batchQuery {
	kept := latestByID(ds, func(d webhook.Delivery) string { return d.ID })
	out := make([]batchQuery, len(kept))
	for i, d := range kept {
		out[i] = db.NewUpdate().Model((*webhookDeliveryRow)(nil)).
			Set("status = ?", string(d.Status)).Set("attempts = ?", d.Attempts).
			Set("last_status_code = ?", d.LastStatusCode).Set("last_error = ?", d.LastError).
			Set("next_attempt_at = ?", d.NextAttemptAt).Set("updated_at = ?", d.UpdatedAt).
			Where("id = ?", d.ID)
	}
	return out
}

// recordEndpointHealth writes webhook endpoints' health.
func recordEndpointHealth(db bun.IDB, es []webhook.Endpoint) []batchQuery {
	kept := latestByID(es, func(e webhook.Endpoint) string { return e.AccountID })
	out := make([]batchQuery, len(kept))
	for i, e := range kept {
		out[i] = db.NewUpdate().Model((*webhookEndpointRow)(nil)).
			Set("enabled = ?", e.Enabled).Set("disabled_reason = ?", e.DisabledReason).Set("disabled_at = ?", e.DisabledAt).
			Set("failing_since = ?", e.FailingSince).Set("updated_at = ?", e.UpdatedAt).
			Where("account_id = ?", e.AccountID)
	}
	return out
}

// recordEmailBounces marks emails bounced, those queued or sent.
func recordEmailBounces(db bun.IDB, bounces []writes.EmailBounce) []batchQuery {
	out := make([]batchQuery, len(bounces))
	for i, b := range bounces {
		out[i] = db.NewRaw(`UPDATE emails SET status = ?, failure_code = ?, reply = ?, updated_at = ? WHERE id = ? AND status IN (?, ?)`,
			string(email.Bounced), appemail.BounceCode, b.Reply, b.UpdatedAt, b.EmailID, string(email.Queued), string(email.Sent))
	}
	return out
}

// recordEmailOutcomes writes emails' deliveries, to emails still queued.
func recordEmailOutcomes(db bun.IDB, outcomes []email.Email) []batchQuery {
	kept := latestByID(outcomes, func(e email.Email) string { return e.ID })
	out := make([]batchQuery, len(kept))
	for i, e := range kept {
		out[i] = db.NewRaw(`UPDATE emails SET status = ?, reply = ?, failure_code = ?, attempts = ?, sent_at = ?, updated_at = ?
		WHERE id = ? AND status = ?`,
			string(e.Status), e.Reply, e.FailureCode, e.Attempts, e.SentAt, e.UpdatedAt, e.ID, string(email.Queued))
	}
	return out
}
