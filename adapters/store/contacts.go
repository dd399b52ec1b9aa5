package store

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// personRow is a contact: one person of an account (table people; the
// contacts table keeps per service address when a user last wrote).
type personRow struct {
	bun.BaseModel    `bun:"table:people"`
	ID               string    `bun:"id,pk"`
	AccountID        string    `bun:"account_id"`
	Name             string    `bun:"name"`
	Phones           string    `bun:"phones"`
	WhatsAppUserID   string    `bun:"whatsapp_user_id"`
	WhatsAppUsername string    `bun:"whatsapp_username"`
	TelegramUserID   string    `bun:"telegram_user_id"`
	TelegramUsername string    `bun:"telegram_username"`
	CreatedAt        time.Time `bun:"created_at"`
	UpdatedAt        time.Time `bun:"updated_at"`
}

const personColumns = "id, account_id, name, phones, whatsapp_user_id, whatsapp_username, telegram_user_id, telegram_username, created_at, updated_at"

func personToRow(c messaging.Contact) personRow {
	phones := c.Phones
	if phones == nil {
		phones = []string{}
	}
	b, _ := json.Marshal(phones) // strings only: it cannot fail
	return personRow{ID: c.ID, AccountID: c.AccountID, Name: c.Name, Phones: string(b), WhatsAppUserID: c.WhatsAppUserID,
		WhatsAppUsername: c.WhatsAppUsername, TelegramUserID: c.TelegramUserID, TelegramUsername: c.TelegramUsername,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

func (r personRow) domain() messaging.Contact {
	var phones []string
	_ = json.Unmarshal([]byte(r.Phones), &phones) // written by personToRow
	if len(phones) == 0 {
		phones = nil
	}
	return messaging.Contact{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Phones: phones, WhatsAppUserID: r.WhatsAppUserID,
		WhatsAppUsername: r.WhatsAppUsername, TelegramUserID: r.TelegramUserID, TelegramUsername: r.TelegramUsername,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}
}

// Contact reads a contact of an account.
func (r MessagingStore) Contact(ctx context.Context, accountID, id string) (messaging.Contact, error) {
	var row personRow
	if err := r.selectOne(ctx, &row, "SELECT "+personColumns+" FROM people WHERE id = $1 AND account_id = $2", id, accountID); err != nil {
		return messaging.Contact{}, translate(err, "contact")
	}
	return row.domain(), nil
}

// ContactByIdentity finds the account's contact with the identity's
// WhatsApp user id, Telegram user id or phone number (in that order),
// the oldest when several have it.
//
// Inside a decision on Postgres it first takes, until the decision ends,
// a lock on each of the identity's ids in the account (lockIdentity), so
// that two decisions about one person run one after another and the
// second finds the contact the first created.
func (r MessagingStore) ContactByIdentity(ctx context.Context, accountID string, id messaging.Identity) (messaging.Contact, error) {
	if err := r.lockIdentity(ctx, accountID, id); err != nil {
		return messaging.Contact{}, err
	}
	var row personRow
	try := func(where string, v string) error {
		if v == "" {
			return failure.NotFound("contact")
		}
		err := r.selectOne(ctx, &row, "SELECT "+personColumns+" FROM people WHERE account_id = $1 AND "+where+" ORDER BY id LIMIT 1", accountID, v)
		return translate(err, "contact")
	}
	err := try("whatsapp_user_id = $2", id.WhatsAppUserID)
	if failure.Is(err, failure.KindNotFound) {
		err = try("telegram_user_id = $2", id.TelegramUserID)
	}
	if failure.Is(err, failure.KindNotFound) && id.Phone != "" {
		// phones is a JSON array of E.164 numbers, which hold no
		// character LIKE treats specially.
		err = try("phones LIKE $2", `%"`+id.Phone+`"%`)
	}
	if err != nil {
		return messaging.Contact{}, err
	}
	return row.domain(), nil
}

// Contacts lists an account's contacts, newest first, those older than
// the cursor's when it is set, optionally those whose name, phone
// numbers, user ids or usernames contain the search text.
func (r MessagingStore) Contacts(ctx context.Context, q appmessaging.ContactQuery) ([]messaging.Contact, error) {
	where := "account_id = $1"
	args := []any{q.AccountID}
	if q.Before != "" {
		args = append(args, q.Before)
		where += " AND id < $" + strconv.Itoa(len(args))
	}
	if s := strings.TrimSpace(q.Search); s != "" {
		args = append(args, "%"+likeEscaper.Replace(strings.ToLower(s))+"%")
		n := "$" + strconv.Itoa(len(args))
		where += " AND (lower(name) LIKE " + n + " ESCAPE '!' OR phones LIKE " + n + " ESCAPE '!' OR lower(whatsapp_user_id) LIKE " + n +
			" ESCAPE '!' OR lower(whatsapp_username) LIKE " + n + " ESCAPE '!' OR telegram_user_id LIKE " + n + " ESCAPE '!' OR telegram_username LIKE " + n + " ESCAPE '!')"
	}
	var rows []personRow
	err := r.selectAll(ctx, &rows, "SELECT "+personColumns+" FROM people WHERE "+where+" ORDER BY id DESC LIMIT "+strconv.Itoa(max(q.Limit, 0)), args...)
	if err != nil {
		return nil, translate(err, "contact")
	}
	var out []messaging.Contact
	for _, row := range rows {
		out = append(out, row.domain())
	}
	return out, nil
}

// likeEscaper escapes the LIKE wildcards of a search text, with ! as the
// escape character.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

// ContactThreads lists the threads of an account's contact, most recently
// active first.
func (r MessagingStore) ContactThreads(ctx context.Context, accountID, contactID string) ([]messaging.Thread, error) {
	var rows []threadRow
	err := r.selectAll(ctx, &rows, "SELECT "+threadColumns+" FROM threads WHERE account_id = $1 AND contact_id = $2 ORDER BY last_message_at DESC, id",
		accountID, contactID)
	if err != nil {
		return nil, translate(err, "thread")
	}
	out := make([]messaging.Thread, len(rows))
	for i, row := range rows {
		out[i] = row.domain()
	}
	return out, nil
}

// The contact writes of a batch, on both databases: the people upserted
// (the last write of each), the threads linked, the chat contacts
// recorded, then the merges.

const personUpsert = " ON CONFLICT (id) DO UPDATE SET name = excluded.name, phones = excluded.phones, " +
	"whatsapp_user_id = excluded.whatsapp_user_id, whatsapp_username = excluded.whatsapp_username, " +
	"telegram_user_id = excluded.telegram_user_id, telegram_username = excluded.telegram_username, " +
	"created_at = excluded.created_at, updated_at = excluded.updated_at"

const chatContactUpsert = ` ON CONFLICT (number_id, chat_id) DO UPDATE SET
	username = CASE WHEN excluded.username = '' THEN channel_contacts.username ELSE excluded.username END,
	phone = CASE WHEN excluded.phone = '' THEN channel_contacts.phone ELSE excluded.phone END,
	name = CASE WHEN excluded.name = '' THEN channel_contacts.name ELSE excluded.name END,
	updated_at = excluded.updated_at`

// rawStatement is one statement of a batch's writes: fixed SQL with ?
// placeholders and its values.
type rawStatement struct {
	sql  string
	args []any
}

// contactRows are the people and chat contacts the writes store, the
// last write of each.
func contactRows(ws []writes.ContactWrite) ([]personRow, []channelContactRow) {
	var people []messaging.Contact
	var chats []writes.ChatContact
	for _, w := range ws {
		if w.Contact != nil {
			people = append(people, *w.Contact)
		}
		if w.Chat != nil {
			chats = append(chats, *w.Chat)
		}
	}
	people = latestByID(people, func(c messaging.Contact) string { return c.ID })
	chats = latestByID(chats, func(c writes.ChatContact) string { return c.NumberID + " " + c.ChatID })
	return mapRows(people, personToRow), mapRows(chats, func(c writes.ChatContact) channelContactRow {
		return channelContactRow{NumberID: c.NumberID, ChatID: c.ChatID, Username: c.Username, Phone: c.Phone, Name: c.Name, UpdatedAt: c.At}
	})
}

// contactUpdates are the thread links and merges, one statement each.
func contactUpdates(ws []writes.ContactWrite, merges []writes.ContactMerge) []rawStatement {
	var out []rawStatement
	for _, w := range ws {
		for _, t := range w.Threads {
			if w.Contact != nil {
				out = append(out, rawStatement{"UPDATE threads SET contact_id = ? WHERE id = ? AND account_id = ?", []any{w.Contact.ID, t, w.Contact.AccountID}},
					rawStatement{"UPDATE messages SET contact_id = ? WHERE thread_id = ? AND account_id = ?", []any{w.Contact.ID, t, w.Contact.AccountID}})
			}
		}
	}
	for _, m := range merges {
		out = append(out,
			rawStatement{"UPDATE threads SET contact_id = ? WHERE contact_id = ? AND account_id = ?", []any{m.Into, m.From, m.AccountID}},
			rawStatement{"UPDATE messages SET contact_id = ? WHERE contact_id = ? AND account_id = ?", []any{m.Into, m.From, m.AccountID}},
			rawStatement{"DELETE FROM people WHERE id = ? AND account_id = ?", []any{m.From, m.AccountID}})
	}
	return out
}

// writeContacts are the SQLite queries of the contact writes.
func writeContacts(db bun.IDB, ws []writes.ContactWrite, merges []writes.ContactMerge) []batchQuery {
	var out []batchQuery
	people, chats := contactRows(ws)
	if len(people) > 0 {
		out = append(out, db.NewInsert().Model(&people).On(strings.TrimPrefix(personUpsert, " ON ")).Returning("NULL"))
	}
	if len(chats) > 0 {
		out = append(out, db.NewInsert().Model(&chats).ModelTableExpr("channel_contacts").On(strings.TrimPrefix(chatContactUpsert, " ON ")).Returning("NULL"))
	}
	for _, s := range contactUpdates(ws, merges) {
		out = append(out, db.NewRaw(s.sql, s.args...))
	}
	return out
}

// writeContactsBound are the Postgres statements of the contact writes.
func writeContactsBound(tables rowTables, add func(name string, build func(p *binder) string), ws []writes.ContactWrite, merges []writes.ContactMerge) {
	people, chats := contactRows(ws)
	if len(people) > 0 {
		add("write contacts", func(p *binder) string { return boundInsert(tables, p, people, personUpsert) })
	}
	if len(chats) > 0 {
		add("write contacts", func(p *binder) string { return boundInsert(tables, p, chats, chatContactUpsert) })
	}
	for _, s := range contactUpdates(ws, merges) {
		add("write contacts", func(p *binder) string { return bindRaw(p, s.sql, s.args) })
	}
}

// lockIdentity takes a transaction-scoped advisory lock per id of the
// identity in the account, in one order, inside a Postgres transaction;
// it does nothing elsewhere (SQLite runs one decision at a time).
func (r MessagingStore) lockIdentity(ctx context.Context, accountID string, id messaging.Identity) error {
	if r.tx == nil || r.dialect != Postgres {
		return nil
	}
	var keys []string
	for _, k := range [][2]string{{"phone", id.Phone}, {"telegram", id.TelegramUserID}, {"whatsapp", id.WhatsAppUserID}} {
		if k[1] != "" {
			keys = append(keys, "contact "+accountID+" "+k[0]+" "+k[1])
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, err := execWithArgs(ctx, r.write, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", []any{k}); err != nil {
			return translate(err, "contact")
		}
	}
	return nil
}
