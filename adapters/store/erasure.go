package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	apperasure "github.com/switchboard-dev/switchboard/application/erasure"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/erasure"
)

// ErasureStore is the storage of erasures (application/erasure.Store):
// it finds everything stored about a person inside the deciding
// transaction, and the batch's Erasures delete exactly that.
type ErasureStore struct{ *Conn }

var (
	_ apperasure.Store   = ErasureStore{}
	_ apperasure.TxReads = ErasureStore{}
)

// ErasureStore is db's ErasureStore.
func (db *DB) ErasureStore() ErasureStore { return ErasureStore{db.base} }

// Decide runs decide in a transaction, reading through s on it, and
// writes the batch it returns there.
func (s ErasureStore) Decide(ctx context.Context, decide func(ctx context.Context, tx apperasure.TxReads) (writes.Batch, error)) error {
	return s.db.decide(ctx, func(ctx context.Context, c *Conn) (writes.Batch, error) { return decide(ctx, ErasureStore{c}) })
}

// Erased tells whether the account erased the identifier of this hash
// before.
func (r ErasureStore) Erased(ctx context.Context, accountID, identifierHash string) (bool, error) {
	var n int
	if err := r.write.NewRaw("SELECT COUNT(*) FROM erasures WHERE account_id = ? AND identifier_hash = ?", accountID, identifierHash).Scan(ctx, &n); err != nil {
		return false, translate(err, "erasure")
	}
	return n > 0, nil
}

// eraseChunk bounds the keys one statement names.
const eraseChunk = 500

// chunks calls fn with keys, eraseChunk at a time.
func chunks[T any](keys []T, fn func(part []T) error) error {
	for len(keys) > 0 {
		n := min(len(keys), eraseChunk)
		if err := fn(keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// stringSet keeps distinct non-empty strings in the order first added.
type stringSet struct {
	seen map[string]bool
	list []string
}

func (s *stringSet) add(values ...string) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	for _, v := range values {
		if v != "" && !s.seen[v] {
			s.seen[v] = true
			s.list = append(s.list, v)
		}
	}
}

// ErasureTarget finds everything stored about the person id names in the
// account (apperasure.TxReads).
func (r ErasureStore) ErasureTarget(ctx context.Context, accountID string, id erasure.Identifier) (erasure.Target, error) {
	t, err := r.target(ctx, accountID, id)
	if err != nil {
		return erasure.Target{}, translate(err, "erasure")
	}
	return t, nil
}

func (r ErasureStore) target(ctx context.Context, accountID string, id erasure.Identifier) (erasure.Target, error) {
	t := erasure.Target{AccountID: accountID, Counts: map[string]int{}}
	var contacts, addresses, names stringSet
	if id.Kind != erasure.Email {
		addresses.add(id.Value)
		if err := r.findPeople(ctx, accountID, id, &t, &contacts, &addresses, &names); err != nil {
			return t, err
		}
		if err := r.findChats(ctx, accountID, &t, &addresses, &names); err != nil {
			return t, err
		}
	}
	t.ContactIDs, t.Addresses = contacts.list, addresses.list
	var emailAddress string
	if id.Kind == erasure.Email {
		emailAddress = id.Value
	}
	if len(t.ContactIDs) > 0 || len(t.Addresses) > 0 {
		if err := r.findThreads(ctx, &t, &names); err != nil {
			return t, err
		}
		if err := r.findMessages(ctx, &t, &names); err != nil {
			return t, err
		}
	}
	needles := eraseNeedles(t, names.list, emailAddress)
	if err := r.findEvents(ctx, &t, needles, emailAddress != ""); err != nil {
		return t, err
	}
	if emailAddress != "" {
		if err := r.findEmails(ctx, &t, emailAddress); err != nil {
			return t, err
		}
	}
	if err := r.findAnswers(ctx, &t, needles, emailAddress != ""); err != nil {
		return t, err
	}
	if err := r.findJobs(ctx, &t, needles, emailAddress != ""); err != nil {
		return t, err
	}
	t.Counts["people"] = len(t.ContactIDs)
	t.Counts["threads"] = len(t.ThreadIDs)
	t.Counts["messages"] = len(t.MessageIDs)
	t.Counts["events"] = len(t.EventIDs)
	t.Counts["webhook_deliveries"] = len(t.DeliveryIDs)
	t.Counts["emails"] = len(t.EmailIDs)
	t.Counts["email_spool"] = len(t.SpoolIDs)
	t.Counts["sandbox_emails"] = len(t.SandboxSeqs)
	t.Counts["idempotency_responses"] = len(t.IdempotencyKeys)
	t.Counts["channel_contacts"] = len(t.Chats)
	t.Counts["jobs"] = len(t.JobIDs)
	return t, r.countRest(ctx, &t)
}

// findPeople finds the contacts the identifier names (the contact itself,
// or those holding the phone number or user id) and adds what they hold.
func (r ErasureStore) findPeople(ctx context.Context, accountID string, id erasure.Identifier, t *erasure.Target, contacts, addresses, names *stringSet) error {
	var where string
	var args []any
	switch id.Kind {
	case erasure.Contact:
		where, args = "id = ?", []any{id.Value}
	case erasure.Phone:
		quoted, _ := json.Marshal(id.Value)
		where, args = "phones LIKE ?", []any{"%" + string(quoted) + "%"}
	default:
		where, args = "whatsapp_user_id = ? OR telegram_user_id = ? OR '@' || telegram_username = ? OR '@' || whatsapp_username = ?",
			[]any{id.Value, id.Value, id.Value, id.Value}
	}
	var rows []personRow
	if err := r.write.NewRaw("SELECT "+personColumns+" FROM people WHERE account_id = ? AND ("+where+")", append([]any{accountID}, args...)...).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	for _, row := range rows {
		c := row.domain()
		t.Found = true
		contacts.add(c.ID)
		names.add(c.Name)
		addresses.add(c.Phones...)
		addresses.add(c.WhatsAppUserID, c.TelegramUserID)
		if c.TelegramUsername != "" {
			addresses.add("@" + c.TelegramUsername)
		}
		if c.WhatsAppUsername != "" {
			addresses.add("@" + c.WhatsAppUsername)
		}
	}
	return nil
}

// findChats finds the provider chats of the account's numbers that showed
// the person (by chat id, phone number or username) and adds what they
// showed.
func (r ErasureStore) findChats(ctx context.Context, accountID string, t *erasure.Target, addresses, names *stringSet) error {
	return chunks(slices.Clone(addresses.list), func(part []string) error {
		var rows []struct {
			NumberID string `bun:"number_id"`
			ChatID   string `bun:"chat_id"`
			Username string `bun:"username"`
			Phone    string `bun:"phone"`
			Name     string `bun:"name"`
		}
		if err := r.write.NewRaw(`SELECT c.number_id, c.chat_id, c.username, c.phone, c.name FROM channel_contacts AS c
			JOIN numbers AS n ON n.id = c.number_id
			WHERE n.account_id = ? AND (c.chat_id IN (?) OR c.phone IN (?) OR '@' || c.username IN (?))`,
			accountID, bun.List(part), bun.List(part), bun.List(part)).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		for _, row := range rows {
			t.Chats = append(t.Chats, erasure.ChatKey{NumberID: row.NumberID, ChatID: row.ChatID})
			addresses.add(row.ChatID, row.Phone)
			if row.Username != "" {
				addresses.add("@" + row.Username)
			}
			names.add(row.Name)
		}
		return nil
	})
}

// findThreads finds the person's individual threads and the groups they
// take part in.
func (r ErasureStore) findThreads(ctx context.Context, t *erasure.Target, names *stringSet) error {
	var threads, groups stringSet
	individual := func(column string, part []string) error {
		var rows []struct {
			ID   string `bun:"id"`
			Name string `bun:"name"`
		}
		if err := r.write.NewRaw("SELECT id, name FROM threads WHERE account_id = ? AND type = 'individual' AND "+column+" IN (?)",
			t.AccountID, bun.List(part)).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		for _, row := range rows {
			threads.add(row.ID)
			names.add(row.Name)
		}
		return nil
	}
	if err := chunks(t.ContactIDs, func(part []string) error { return individual("contact_id", part) }); err != nil {
		return err
	}
	err := chunks(t.Addresses, func(part []string) error {
		if err := individual("contact", part); err != nil {
			return err
		}
		var members []struct {
			ThreadID string `bun:"thread_id"`
			Name     string `bun:"name"`
		}
		if err := r.write.NewRaw(`SELECT p.thread_id, p.name FROM thread_participants AS p JOIN threads AS t ON t.id = p.thread_id
			WHERE t.account_id = ? AND t.type <> 'individual' AND p.address IN (?)`,
			t.AccountID, bun.List(part)).Scan(ctx, &members); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		for _, m := range members {
			groups.add(m.ThreadID)
			names.add(m.Name)
		}
		return nil
	})
	t.ThreadIDs, t.GroupThreadIDs = threads.list, groups.list
	return err
}

// findMessages finds every message of the person's individual threads,
// and theirs elsewhere (by contact, sender address or user id).
func (r ErasureStore) findMessages(ctx context.Context, t *erasure.Target, names *stringSet) error {
	var ids stringSet
	scan := func(where string, part []string) error {
		var rows []struct {
			ID         string `bun:"id"`
			SenderName string `bun:"sender_name"`
			Direction  string `bun:"direction"`
		}
		if err := r.write.NewRaw("SELECT id, sender_name, direction FROM messages WHERE account_id = ? AND "+where,
			t.AccountID, bun.List(part)).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		for _, row := range rows {
			ids.add(row.ID)
			if row.Direction == "inbound" {
				names.add(row.SenderName)
			}
		}
		return nil
	}
	for _, q := range []struct {
		where string
		keys  []string
	}{
		{"thread_id IN (?)", t.ThreadIDs},
		{"contact_id IN (?)", t.ContactIDs},
		{"from_address IN (?)", t.Addresses},
		{"user_id IN (?)", t.Addresses},
	} {
		if err := chunks(q.keys, func(part []string) error { return scan(q.where, part) }); err != nil {
			return err
		}
	}
	t.MessageIDs = ids.list
	return nil
}

// minNeedle is the length below which an address or a name is not looked
// for in documents.
const minNeedle = 4

// eraseNeedles are the strings whose presence in a stored document (an
// event's payload, a stored answer) makes it carry the person: their
// contact ids, addresses, threads, messages, and names as whole JSON
// strings. An email address is looked for in lower case.
func eraseNeedles(t erasure.Target, names []string, emailAddress string) [][]byte {
	var out [][]byte
	for _, list := range [][]string{t.ContactIDs, t.Addresses, t.ThreadIDs, t.MessageIDs} {
		for _, s := range list {
			// A very short user id would match unrelated documents; the
			// person's threads find their events then.
			if len(s) >= minNeedle {
				out = append(out, []byte(s))
			}
		}
	}
	for _, n := range names {
		if len([]rune(n)) >= minNeedle {
			quoted, _ := json.Marshal(n)
			out = append(out, quoted)
		}
	}
	if emailAddress != "" {
		out = append(out, []byte(emailAddress))
	}
	return out
}

// carries tells whether doc holds one of needles (doc in lower case too
// when lower).
func carries(doc []byte, needles [][]byte, lower bool) bool {
	if lower {
		doc = bytes.ToLower(doc)
	}
	for _, n := range needles {
		if bytes.Contains(doc, n) {
			return true
		}
	}
	return false
}

// findEvents walks the account's event log for the events of the
// person's threads and those that carry them, with their deliveries.
func (r ErasureStore) findEvents(ctx context.Context, t *erasure.Target, needles [][]byte, lower bool) error {
	if len(needles) == 0 {
		return nil
	}
	threads := map[string]bool{}
	for _, id := range t.ThreadIDs {
		threads[id] = true
	}
	var after int64
	for {
		var rows []struct {
			Seq      int64   `bun:"seq"`
			ID       string  `bun:"id"`
			ThreadID *string `bun:"thread_id"`
			Payload  string  `bun:"payload"`
		}
		if err := r.write.NewRaw("SELECT seq, id, thread_id, payload FROM events WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT 1000",
			t.AccountID, after).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		for _, row := range rows {
			if (row.ThreadID != nil && threads[*row.ThreadID]) || carries([]byte(row.Payload), needles, lower) {
				t.EventIDs = append(t.EventIDs, row.ID)
			}
			after = row.Seq
		}
		if len(rows) < 1000 {
			break
		}
	}
	return chunks(t.EventIDs, func(part []string) error {
		var ids []string
		if err := r.write.NewRaw("SELECT id FROM webhook_deliveries WHERE event_id IN (?)", bun.List(part)).Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		t.DeliveryIDs = append(t.DeliveryIDs, ids...)
		return nil
	})
}

// findEmails finds the account's emails from or to the address, and the
// sandbox mailbox's mail.
func (r ErasureStore) findEmails(ctx context.Context, t *erasure.Target, address string) error {
	contains := func(column string) string {
		if r.dialect == Postgres {
			return "strpos(lower(" + column + "), ?) > 0"
		}
		return "instr(lower(" + column + "), ?) > 0"
	}
	columns := []string{"from_address", "to_address", "cc", "bcc", "reply_to"}
	var emailWhere, sandboxWhere []string
	var emailArgs, sandboxArgs []any
	for _, c := range append(columns, "to_list") {
		emailWhere, emailArgs = append(emailWhere, contains(c)), append(emailArgs, address)
	}
	for _, c := range columns {
		sandboxWhere, sandboxArgs = append(sandboxWhere, contains(c)), append(sandboxArgs, address)
	}
	if err := r.write.NewRaw("SELECT id FROM emails WHERE account_id = ? AND ("+strings.Join(emailWhere, " OR ")+")",
		append([]any{t.AccountID}, emailArgs...)...).Scan(ctx, &t.EmailIDs); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if err := r.write.NewRaw("SELECT id FROM email_spool WHERE account_id = ? AND "+contains("mail_from"), t.AccountID, address).Scan(ctx, &t.SpoolIDs); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	var kept []struct {
		Seq  int64 `bun:"seq"`
		Size int64 `bun:"size"`
	}
	if err := r.write.NewRaw("SELECT seq, size FROM sandbox_emails WHERE account_id = ? AND ("+strings.Join(sandboxWhere, " OR ")+")",
		append([]any{t.AccountID}, sandboxArgs...)...).Scan(ctx, &kept); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	for _, k := range kept {
		t.SandboxSeqs = append(t.SandboxSeqs, k.Seq)
		t.SandboxBytes += k.Size
	}
	return nil
}

// findAnswers finds the account's stored answers to Idempotency-Keys that
// carry the person (a send's answer holds its recipient and text).
func (r ErasureStore) findAnswers(ctx context.Context, t *erasure.Target, needles [][]byte, lower bool) error {
	if len(needles) == 0 {
		return nil
	}
	var rows []struct {
		Key  string `bun:"key"`
		Body []byte `bun:"body"`
	}
	if err := r.write.NewRaw("SELECT key, body FROM idempotency_responses WHERE account_id = ?", t.AccountID).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	for _, row := range rows {
		if carries(row.Body, needles, lower) {
			t.IdempotencyKeys = append(t.IdempotencyKeys, row.Key)
		}
	}
	return nil
}

// findJobs finds the account's jobs whose payload names what goes (a
// message, a delivery, an email) or whose last error carries the person.
func (r ErasureStore) findJobs(ctx context.Context, t *erasure.Target, needles [][]byte, lower bool) error {
	var ids [][]byte
	for _, list := range [][]string{t.MessageIDs, t.DeliveryIDs, t.EmailIDs} {
		for _, id := range list {
			ids = append(ids, []byte(id))
		}
	}
	if len(ids) == 0 && len(needles) == 0 {
		return nil
	}
	var rows []struct {
		ID        int64   `bun:"id"`
		Payload   []byte  `bun:"payload"`
		LastError *string `bun:"last_error"`
	}
	if err := r.write.NewRaw("SELECT id, payload, last_error FROM jobs WHERE account_id = ?", t.AccountID).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	for _, row := range rows {
		if carries(row.Payload, ids, false) || (row.LastError != nil && carries([]byte(*row.LastError), needles, lower)) {
			t.JobIDs = append(t.JobIDs, row.ID)
		}
	}
	return nil
}

// countRest counts the rows that go with the ones named by key: attempts,
// reactions, participants, contacts by address, provider chats,
// attachments.
func (r ErasureStore) countRest(ctx context.Context, t *erasure.Target) error {
	count := func(table, query string, keys []string, args ...any) error {
		return chunks(keys, func(part []string) error {
			var n int
			if err := r.write.NewRaw(query, append(args, bun.List(part))...).Scan(ctx, &n); err != nil {
				return err
			}
			t.Counts[table] += n
			return nil
		})
	}
	for _, c := range []struct {
		table, query string
		keys         []string
		args         []any
	}{
		{"webhook_attempts", "SELECT COUNT(*) FROM webhook_attempts WHERE delivery_id IN (?)", t.DeliveryIDs, nil},
		{"thread_participants", "SELECT COUNT(*) FROM thread_participants WHERE thread_id IN (?)", t.ThreadIDs, nil},
		{"thread_participants", "SELECT COUNT(*) FROM thread_participants AS p JOIN threads AS t ON t.id = p.thread_id WHERE t.account_id = ? AND t.type <> 'individual' AND p.address IN (?)", t.Addresses, []any{t.AccountID}},
		{"contacts", "SELECT COUNT(*) FROM contacts WHERE account_id = ? AND address IN (?)", t.Addresses, []any{t.AccountID}},
		{"channel_chats", "SELECT COUNT(*) FROM channel_chats WHERE thread_id IN (?)", t.ThreadIDs, nil},
		{"email_attachments", "SELECT COUNT(*) FROM email_attachments WHERE email_id IN (?)", t.EmailIDs, nil},
	} {
		if err := count(c.table, c.query, c.keys, c.args...); err != nil {
			return err
		}
	}
	// Reactions: those on the messages that go and the person's own, each
	// row once.
	reactions := map[[2]string]bool{}
	collect := func(where string, part []string) error {
		var rows []struct {
			MessageID string `bun:"message_id"`
			Reactor   string `bun:"reactor"`
		}
		if err := r.write.NewRaw("SELECT message_id, reactor FROM message_reactions WHERE account_id = ? AND "+where,
			t.AccountID, bun.List(part)).Scan(ctx, &rows); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		for _, row := range rows {
			reactions[[2]string{row.MessageID, row.Reactor}] = true
		}
		return nil
	}
	if err := chunks(t.MessageIDs, func(part []string) error { return collect("message_id IN (?)", part) }); err != nil {
		return err
	}
	if err := chunks(t.Addresses, func(part []string) error { return collect("reactor IN (?)", part) }); err != nil {
		return err
	}
	t.Counts["message_reactions"] = len(reactions)
	return nil
}

// erasedAnswer replaces a stored answer that carried an erased person: a
// replay of its key answers that, and the key is not run again.
const erasedAnswer = `{"status":"error","code":"erased","message":"the answer to this Idempotency-Key named a person who was erased","detail":"the answer to this Idempotency-Key named a person who was erased"}`

// eraseStatements are the statements of the batch's erasures, in an order
// in which nothing refers to a row already gone, each naming at most
// eraseChunk keys; the audit record last.
func eraseStatements(es []writes.Erasure) []rawStatement {
	var out []rawStatement
	inAny := func(sql string, keys []any, args ...any) {
		_ = chunks(keys, func(list []any) error {
			marks := strings.TrimSuffix(strings.Repeat("?, ", len(list)), ", ")
			out = append(out, rawStatement{strings.Replace(sql, "(?)", "("+marks+")", 1), append(slices.Clone(args), list...)})
			return nil
		})
	}
	in := func(sql string, keys []string, args ...any) {
		list := make([]any, len(keys))
		for i, k := range keys {
			list[i] = k
		}
		inAny(sql, list, args...)
	}
	for _, e := range es {
		t, acc := e.Target, e.Target.AccountID
		in("DELETE FROM webhook_attempts WHERE delivery_id IN (?)", t.DeliveryIDs)
		in("DELETE FROM webhook_deliveries WHERE account_id = ? AND id IN (?)", t.DeliveryIDs, acc)
		in("DELETE FROM events WHERE account_id = ? AND id IN (?)", t.EventIDs, acc)
		in("DELETE FROM message_reactions WHERE account_id = ? AND message_id IN (?)", t.MessageIDs, acc)
		in("DELETE FROM message_reactions WHERE account_id = ? AND reactor IN (?)", t.Addresses, acc)
		in("UPDATE messages SET quoted_text = '' WHERE account_id = ? AND reply_to_message_id IN (?)", t.MessageIDs, acc)
		in("DELETE FROM messages WHERE account_id = ? AND id IN (?)", t.MessageIDs, acc)
		in("DELETE FROM thread_participants WHERE thread_id IN (?)", t.ThreadIDs)
		for _, g := range t.GroupThreadIDs {
			in("DELETE FROM thread_participants WHERE thread_id = ? AND address IN (?)", t.Addresses, g)
		}
		in("DELETE FROM channel_chats WHERE thread_id IN (?)", t.ThreadIDs)
		for _, c := range t.Chats {
			out = append(out, rawStatement{"DELETE FROM channel_contacts WHERE number_id = ? AND chat_id = ?", []any{c.NumberID, c.ChatID}})
		}
		in("DELETE FROM threads WHERE account_id = ? AND id IN (?)", t.ThreadIDs, acc)
		in("DELETE FROM contacts WHERE account_id = ? AND address IN (?)", t.Addresses, acc)
		in("DELETE FROM people WHERE account_id = ? AND id IN (?)", t.ContactIDs, acc)
		in("DELETE FROM email_attachments WHERE email_id IN (?)", t.EmailIDs)
		in("DELETE FROM emails WHERE account_id = ? AND id IN (?)", t.EmailIDs, acc)
		in("DELETE FROM email_spool WHERE account_id = ? AND id IN (?)", t.SpoolIDs, acc)
		if len(t.SandboxSeqs) > 0 {
			seqs := make([]any, len(t.SandboxSeqs))
			for i, s := range t.SandboxSeqs {
				seqs[i] = s
			}
			inAny("DELETE FROM sandbox_emails WHERE account_id = ? AND seq IN (?)", seqs, acc)
			out = append(out,
				rawStatement{"UPDATE sandbox_mailbox_usage SET emails = emails - ?, bytes = bytes - ? WHERE account_id = ?", []any{int64(len(t.SandboxSeqs)), t.SandboxBytes, acc}},
				rawStatement{"DELETE FROM sandbox_mailbox_usage WHERE account_id = ? AND emails <= 0", []any{acc}},
				rawStatement{"UPDATE sandbox_mailbox_totals SET emails = emails - ?, bytes = bytes - ? WHERE id = 1", []any{int64(len(t.SandboxSeqs)), t.SandboxBytes}})
		}
		jobs := make([]any, len(t.JobIDs))
		for i, id := range t.JobIDs {
			jobs[i] = id
		}
		// A job in flight is ended too: its worker's outcome (a retry, a
		// death, a completion) is written only while it holds the lease,
		// so nothing of that attempt, its error quoting the person
		// included, is written back.
		inAny("UPDATE jobs SET state = 'cancelled', finished_at = ?, "+leaseReleased+" WHERE state IN ('available', 'retryable', 'running') AND id IN (?)", jobs, micros(e.Record.At))
		inAny("UPDATE jobs SET last_error = NULL WHERE id IN (?)", jobs)
		in("UPDATE idempotency_responses SET status_code = 410, body = ? WHERE account_id = ? AND key IN (?)", t.IdempotencyKeys, []byte(erasedAnswer), acc)
		counts, _ := json.Marshal(sortedCounts(e.Record.Counts))
		out = append(out, rawStatement{`INSERT INTO erasures (id, account_id, requested_by, identifier_kind, identifier_hash, counts, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, []any{e.Record.ID, e.Record.AccountID, e.Record.RequestedBy, string(e.Record.Kind), e.Record.IdentifierHash, string(counts), e.Record.At.UTC()}})
	}
	return out
}

// sortedCounts is counts without zeros (json.Marshal sorts a map's keys).
func sortedCounts(counts map[string]int) map[string]int {
	out := maps.Clone(counts)
	maps.DeleteFunc(out, func(_ string, n int) bool { return n == 0 })
	if out == nil {
		out = map[string]int{}
	}
	return out
}

// writeErasures are the SQLite queries of the batch's erasures.
func writeErasures(db bun.IDB, es []writes.Erasure) []batchQuery {
	var out []batchQuery
	for _, s := range eraseStatements(es) {
		out = append(out, db.NewRaw(s.sql, s.args...))
	}
	return out
}

// writeErasuresBound are the Postgres statements of the batch's erasures.
func writeErasuresBound(add func(name string, build func(p *binder) string), es []writes.Erasure) {
	for _, s := range eraseStatements(es) {
		add("erase people", func(p *binder) string { return bindRaw(p, s.sql, s.args) })
	}
}

// erasureRow is a row of erasures.
type erasureRow struct {
	bun.BaseModel  `bun:"table:erasures"`
	ID             string    `bun:"id,pk"`
	AccountID      string    `bun:"account_id"`
	RequestedBy    string    `bun:"requested_by"`
	IdentifierKind string    `bun:"identifier_kind"`
	IdentifierHash string    `bun:"identifier_hash"`
	Counts         string    `bun:"counts"`
	CreatedAt      time.Time `bun:"created_at"`
}

// Records lists the account's audit records newest first, along the
// erasures_account index.
func (r ErasureStore) Records(ctx context.Context, q apperasure.Query) ([]erasure.Record, error) {
	sel := r.read.NewSelect().Model((*erasureRow)(nil)).Where("account_id = ?", q.AccountID)
	if a := q.After; a != nil {
		sel = sel.Where("(created_at, id) < (?, ?)", a.At.UTC(), a.ID)
	}
	var rows []erasureRow
	if err := sel.OrderExpr("created_at DESC, id DESC").Limit(q.Limit).Scan(ctx, &rows); err != nil {
		return nil, translate(err, "erasure")
	}
	out := make([]erasure.Record, len(rows))
	for i, row := range rows {
		out[i] = erasure.Record{ID: row.ID, AccountID: row.AccountID, RequestedBy: row.RequestedBy, Kind: erasure.Kind(row.IdentifierKind),
			IdentifierHash: row.IdentifierHash, At: row.CreatedAt.UTC()}
		if err := json.Unmarshal([]byte(row.Counts), &out[i].Counts); err != nil {
			return nil, fmt.Errorf("erasure %s: counts: %w", row.ID, err)
		}
	}
	return out, nil
}
