package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/uptrace/bun"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// InboxStore is the storage of received email (appemail.Inbox): the
// spooled messages, mailbox listings, attachments and thread lookups.
type InboxStore struct{ *Conn }

var _ appemail.Inbox = InboxStore{}

// InboxStore is db's InboxStore, outside any transaction.
func (db *DB) InboxStore() InboxStore { return InboxStore{db.base} }

// Decide runs decide in a transaction, reading through s on it, and
// writes the batch it returns there.
func (s InboxStore) Decide(ctx context.Context, decide func(ctx context.Context, tx appemail.InboxReads) (writes.Batch, error)) error {
	return s.db.decide(ctx, func(ctx context.Context, c *Conn) (writes.Batch, error) { return decide(ctx, InboxStore{c}) })
}

type spooledRow struct {
	bun.BaseModel `bun:"table:email_spool"`
	ID            string    `bun:"id,pk"`
	RemoteIP      string    `bun:"remote_ip"`
	Helo          string    `bun:"helo"`
	MailFrom      string    `bun:"mail_from"`
	Recipients    string    `bun:"recipients"`
	Raw           []byte    `bun:"raw"`
	Size          int64     `bun:"size"`
	ReceivedAt    time.Time `bun:"received_at"`
	Simulated     bool      `bun:"simulated"`
	// AccountID is the account of the recipients (one a message).
	AccountID string `bun:"account_id"`
}

func spooledToRow(m email.Spooled) spooledRow {
	rcpts, _ := json.Marshal(m.Recipients)
	return spooledRow{
		ID: m.ID, RemoteIP: m.RemoteIP, Helo: m.Helo, MailFrom: m.MailFrom, Recipients: string(rcpts),
		Raw: nonNilBytes(m.Raw), Size: int64(len(m.Raw)), ReceivedAt: m.ReceivedAt, Simulated: m.Simulated,
		AccountID: m.AccountID(),
	}
}

type attachmentRow struct {
	bun.BaseModel `bun:"table:email_attachments"`
	ID            string    `bun:"id,pk"`
	EmailID       string    `bun:"email_id"`
	AccountID     string    `bun:"account_id"`
	Name          string    `bun:"name"`
	ContentType   string    `bun:"content_type"`
	ContentID     string    `bun:"content_id"`
	Inline        bool      `bun:"inline"`
	Size          int64     `bun:"size"`
	SHA256        string    `bun:"sha256"`
	Stored        bool      `bun:"stored"`
	Content       []byte    `bun:"content"`
	CreatedAt     time.Time `bun:"created_at"`
}

func attachmentToRow(a email.Attachment) attachmentRow {
	return attachmentRow{
		ID: a.ID, EmailID: a.EmailID, AccountID: a.AccountID, Name: a.Name, ContentType: a.ContentType, ContentID: a.ContentID,
		Inline: a.Inline, Size: a.Size, SHA256: a.SHA256, Stored: a.Stored, Content: nonNilBytes(a.Content), CreatedAt: a.CreatedAt,
	}
}

func (row attachmentRow) domain() email.Attachment {
	return email.Attachment{
		ID: row.ID, EmailID: row.EmailID, AccountID: row.AccountID, Name: row.Name, ContentType: row.ContentType,
		ContentID: row.ContentID, Inline: row.Inline, Size: row.Size, SHA256: row.SHA256, Stored: row.Stored,
		Content: row.Content, CreatedAt: row.CreatedAt.UTC(),
	}
}

// Spooled reads a spooled message.
func (s InboxStore) Spooled(ctx context.Context, id string) (email.Spooled, error) {
	var row spooledRow
	if err := s.read.NewRaw("SELECT id, remote_ip, helo, mail_from, recipients, raw, size, received_at, simulated FROM email_spool WHERE id = ?", id).Scan(ctx, &row); err != nil {
		return email.Spooled{}, translate(err, "spooled email")
	}
	m := email.Spooled{ID: row.ID, RemoteIP: row.RemoteIP, Helo: row.Helo, MailFrom: row.MailFrom, Raw: row.Raw, ReceivedAt: row.ReceivedAt.UTC(), Simulated: row.Simulated}
	if err := json.Unmarshal([]byte(row.Recipients), &m.Recipients); err != nil {
		return email.Spooled{}, err
	}
	return m, nil
}

// ThreadByMessageIDs is the thread of the account's newest email whose
// Message-ID is one of ids: an inbound email on
// emails_inbound_message_id_idx, an outbound one by the id its Message-ID
// names (sentByMessageID).
func (s InboxStore) ThreadByMessageIDs(ctx context.Context, accountID string, ids []string) (string, error) {
	if len(ids) == 0 {
		return "", nil
	}
	q := "SELECT thread_id, created_at, id FROM emails WHERE account_id = ? AND direction = 'inbound' AND message_id IN (?) AND thread_id <> ''"
	args := []any{accountID, bun.List(ids)}
	if sent, sentArgs, ok := sentByMessageID("thread_id, created_at, id", accountID, ids); ok {
		q += " UNION ALL " + sent + " AND thread_id <> ''"
		args = append(args, sentArgs...)
	}
	var thread string
	err := s.read.NewRaw("SELECT thread_id FROM ("+q+") AS linked ORDER BY created_at DESC, id DESC LIMIT 1", args...).Scan(ctx, &thread)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return thread, translate(err, "email")
}

// sentByMessageID selects columns of the account's outbound emails whose
// Message-ID is one of ids, by the email ids those Message-IDs name
// (email.SentMessageID), on the primary key; false when none names one.
func sentByMessageID(columns, accountID string, ids []string) (string, []any, bool) {
	var emailIDs []string
	for _, id := range ids {
		if emailID, ok := email.SentEmailID(id); ok {
			emailIDs = append(emailIDs, emailID)
		}
	}
	if len(emailIDs) == 0 {
		return "", nil, false
	}
	return "SELECT " + columns + " FROM emails WHERE id IN (?) AND account_id = ? AND direction = 'outbound' AND message_id IN (?)",
		[]any{bun.List(emailIDs), accountID, bun.List(ids)}, true
}

// ThreadBySubject is the thread of the mailbox's newest email since since
// with subject key key exchanged with correspondent, on
// emails_mailbox_idx.
func (s InboxStore) ThreadBySubject(ctx context.Context, accountID, mailbox, correspondent, key string, since time.Time) (string, error) {
	var thread string
	err := s.read.NewRaw(`SELECT thread_id FROM emails WHERE account_id = ? AND mailbox = ? AND created_at >= ? AND subject_key = ?
		AND ((direction = 'outbound' AND lower(to_address) = ?) OR (direction = 'inbound' AND lower(from_address) = ?))
		ORDER BY created_at DESC, id DESC LIMIT 1`, accountID, mailbox, since, key, correspondent, correspondent).Scan(ctx, &thread)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return thread, translate(err, "email")
}

// SentEmail is the account's newest outbound email with one of the
// Message-IDs ids (see sentByMessageID).
func (s InboxStore) SentEmail(ctx context.Context, accountID string, ids []string) (email.Email, bool, error) {
	q, args, ok := sentByMessageID(emailColumns, accountID, ids)
	if !ok {
		return email.Email{}, false, nil
	}
	var rows []emailRow
	if err := s.read.NewRaw(q+" ORDER BY created_at DESC, id DESC LIMIT 1", args...).Scan(ctx, &rows); err != nil || len(rows) == 0 {
		return email.Email{}, false, translate(err, "email")
	}
	e, err := rows[0].domain()
	return e, err == nil, err
}

// StoredAttachmentBytes adds up the account's stored attachments.
func (s InboxStore) StoredAttachmentBytes(ctx context.Context, accountID string) (int64, error) {
	var n sql.NullInt64
	err := s.read.NewRaw("SELECT SUM(size) FROM email_attachments WHERE account_id = ? AND stored", accountID).Scan(ctx, &n)
	return n.Int64, translate(err, "attachment")
}

// EmailExists reports whether the email id exists.
func (s InboxStore) EmailExists(ctx context.Context, id string) (bool, error) {
	var n int
	err := s.read.NewRaw("SELECT COUNT(*) FROM emails WHERE id = ?", id).Scan(ctx, &n)
	return n > 0, translate(err, "email")
}

// MailboxEmails reads a page of a mailbox, newest first.
func (s InboxStore) MailboxEmails(ctx context.Context, accountID, mailbox string, after *appemail.EmailCursor, limit int) ([]email.Email, error) {
	q := "SELECT " + emailColumns + " FROM emails WHERE account_id = ? AND mailbox = ?"
	args := []any{accountID, mailbox}
	if after != nil {
		q += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, after.CreatedAt, after.CreatedAt, after.ID)
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT ?"
	return s.readEmails(ctx, q, append(args, limit)...)
}

// ThreadEmails reads a thread's emails, oldest first: its first email by
// the id the thread's id names (email.ThreadStarterID), the others on
// emails_joined_thread_idx, whose condition the second part repeats.
func (s InboxStore) ThreadEmails(ctx context.Context, accountID, threadID string, limit int) ([]email.Email, error) {
	return s.readEmails(ctx, "SELECT "+emailColumns+" FROM emails WHERE id = ? AND account_id = ? AND thread_id = ?"+
		" UNION ALL SELECT "+emailColumns+" FROM emails WHERE account_id = ? AND thread_id = ? AND "+joinsThread+
		" ORDER BY created_at, id LIMIT ?",
		email.ThreadStarterID(threadID), accountID, threadID, accountID, threadID, limit)
}

// joinsThread holds for an email that joined a thread it did not start
// (email.StartedThreadID in SQL): the condition of
// emails_joined_thread_idx, written as its migration writes it.
const joinsThread = "thread_id <> 'eth_' || substr(id, 5)"

// readEmails reads the emails of the query q, whose columns are
// emailColumns.
func (c *Conn) readEmails(ctx context.Context, q string, args ...any) ([]email.Email, error) {
	var rows []emailRow
	if err := c.read.NewRaw(q, args...).Scan(ctx, &rows); err != nil {
		return nil, translate(err, "email")
	}
	out := make([]email.Email, 0, len(rows))
	for _, row := range rows {
		e, err := row.domain()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

const attachmentColumns = "id, email_id, account_id, name, content_type, content_id, inline, size, sha256, stored, created_at"

// Attachments lists the attachments of emails without their content, in one
// statement.
func (s InboxStore) Attachments(ctx context.Context, accountID string, emailIDs []string) (map[string][]email.Attachment, error) {
	out := map[string][]email.Attachment{}
	if len(emailIDs) == 0 {
		return out, nil
	}
	var rows []attachmentRow
	if err := s.read.NewRaw("SELECT "+attachmentColumns+" FROM email_attachments WHERE email_id IN (?) AND account_id = ? ORDER BY id",
		bun.List(emailIDs), accountID).Scan(ctx, &rows); err != nil {
		return nil, translate(err, "attachment")
	}
	for _, r := range rows {
		a := r.domain()
		out[a.EmailID] = append(out[a.EmailID], a)
	}
	return out, nil
}

// Attachment reads one attachment with its content.
func (s InboxStore) Attachment(ctx context.Context, accountID, emailID, id string) (email.Attachment, error) {
	var row attachmentRow
	if err := s.read.NewRaw("SELECT "+attachmentColumns+", content FROM email_attachments WHERE id = ? AND email_id = ? AND account_id = ?",
		id, emailID, accountID).Scan(ctx, &row); err != nil {
		return email.Attachment{}, translate(err, "attachment")
	}
	return row.domain(), nil
}
