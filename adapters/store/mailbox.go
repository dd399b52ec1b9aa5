package store

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	appemail "github.com/switchboard-dev/switchboard/application/email"
)

// MailboxStore is the storage of the sandbox mailbox (email.Mailbox),
// shared by every replica of the database.
type MailboxStore struct{ *Conn }

var _ appemail.Mailbox = MailboxStore{}

// MailboxStore is db's MailboxStore.
func (db *DB) MailboxStore() MailboxStore { return MailboxStore{db.base} }

// maxEvictionRounds bounds the steps one keep takes to bring the mailbox
// back within its total bounds (Keep).
const maxEvictionRounds = 256

// evictBatch is how many of an account's oldest emails one read looks at
// when removing enough of them.
const evictBatch = 64

type sandboxEmailRow struct {
	bun.BaseModel    `bun:"table:sandbox_emails"`
	Seq              int64   `bun:"seq,pk,autoincrement"`
	AccountID        string  `bun:"account_id"`
	MessageID        string  `bun:"message_id"`
	FromAddress      string  `bun:"from_address"`
	ToAddress        string  `bun:"to_address"`
	Cc               string  `bun:"cc"`
	Bcc              string  `bun:"bcc"`
	ReplyTo          string  `bun:"reply_to"`
	Subject          string  `bun:"subject"`
	TextPart         string  `bun:"text_part"`
	HTMLPart         string  `bun:"html_part"`
	Headers          string  `bun:"headers"`
	AttachmentName   *string `bun:"attachment_name"`
	AttachmentType   *string `bun:"attachment_type"`
	AttachmentSize   *int64  `bun:"attachment_size"`
	AttachmentSHA256 *string `bun:"attachment_sha256"`
	Date             int64   `bun:"date"`
	Size             int64   `bun:"size"`
}

const sandboxEmailColumns = "seq, account_id, message_id, from_address, to_address, cc, bcc, reply_to, subject, text_part, html_part, headers, attachment_name, attachment_type, attachment_size, attachment_sha256, date, size"

func sandboxEmailToRow(e appemail.KeptEmail) sandboxEmailRow {
	headers := make([]headerJSON, len(e.Headers))
	for i, h := range e.Headers {
		headers[i] = headerJSON(h)
	}
	row := sandboxEmailRow{
		AccountID: e.AccountID, MessageID: e.MessageID, FromAddress: e.From, ToAddress: e.To,
		Cc: jsonList(e.Cc), Bcc: jsonList(e.Bcc), ReplyTo: jsonList(e.ReplyTo),
		Subject: e.Subject, TextPart: e.Text, HTMLPart: e.HTML, Headers: jsonList(headers),
		Date: micros(e.Date), Size: e.Size(),
	}
	if a := e.Attachment; a != nil {
		row.AttachmentName, row.AttachmentType, row.AttachmentSize, row.AttachmentSHA256 = &a.Name, &a.ContentType, &a.Size, &a.SHA256
	}
	return row
}

func (row sandboxEmailRow) kept() (appemail.KeptEmail, error) {
	e := appemail.KeptEmail{
		AccountID: row.AccountID, MessageID: row.MessageID, From: row.FromAddress, To: row.ToAddress,
		Subject: row.Subject, Text: row.TextPart, HTML: row.HTMLPart, Date: fromMicros(row.Date),
	}
	var err error
	if e.Cc, e.Bcc, e.ReplyTo, e.Headers, err = decodeAddressColumns(row.Cc, row.Bcc, row.ReplyTo, row.Headers); err != nil {
		return appemail.KeptEmail{}, fmt.Errorf("read sandbox email %d: %w", row.Seq, err)
	}
	if row.AttachmentName != nil {
		e.Attachment = &appemail.KeptAttachment{Name: *row.AttachmentName}
		if row.AttachmentType != nil {
			e.Attachment.ContentType = *row.AttachmentType
		}
		if row.AttachmentSize != nil {
			e.Attachment.Size = *row.AttachmentSize
		}
		if row.AttachmentSHA256 != nil {
			e.Attachment.SHA256 = *row.AttachmentSHA256
		}
	}
	return e, nil
}

// mailboxUsage is what an account, or the whole mailbox, holds.
type mailboxUsage struct {
	Emails int64 `bun:"emails"`
	Bytes  int64 `bun:"bytes"`
}

// Keep stores e and trims the mailbox back within limits, in one
// transaction (email.Mailbox.Keep states the rule). On Postgres the
// totals row, updated first, locks out every other keep until the commit;
// SQLite's one writer does the same.
func (r MailboxStore) Keep(ctx context.Context, e appemail.KeptEmail, limits appemail.MailboxLimits) error {
	row := sandboxEmailToRow(e)
	if row.Size > limits.AccountBytes || row.Size > limits.TotalBytes {
		return nil
	}
	err := r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		var total mailboxUsage
		if err := c.write.NewRaw("UPDATE sandbox_mailbox_totals SET emails = emails + 1, bytes = bytes + ? WHERE id = 1 RETURNING emails, bytes", row.Size).Scan(ctx, &total); err != nil {
			return err
		}
		if _, err := c.write.NewInsert().Model(&row).Exec(ctx); err != nil {
			return err
		}
		var own mailboxUsage
		if err := c.write.NewRaw(`INSERT INTO sandbox_mailbox_usage (account_id, emails, bytes) VALUES (?, 1, ?)
			ON CONFLICT (account_id) DO UPDATE SET emails = sandbox_mailbox_usage.emails + 1, bytes = sandbox_mailbox_usage.bytes + excluded.bytes
			RETURNING emails, bytes`, row.AccountID, row.Size).Scan(ctx, &own); err != nil {
			return err
		}
		// The account's own oldest emails go first.
		if over := (mailboxUsage{Emails: own.Emails - int64(limits.AccountEmails), Bytes: own.Bytes - limits.AccountBytes}); over.Emails > 0 || over.Bytes > 0 {
			removed, err := MailboxStore{c}.evictOldest(ctx, row.AccountID, over)
			if err != nil {
				return err
			}
			total.Emails, total.Bytes = total.Emails-removed.Emails, total.Bytes-removed.Bytes
		}
		// Then, while the mailbox is over a total bound, the oldest emails
		// of the account holding the most of what is over, the sender
		// first among equals: as many at once as keep it at or above the
		// next largest holding, which is what taking one at a time would
		// take from it. A keep makes at most maxEvictionRounds of these
		// steps, so that one keep after the bounds were lowered stays
		// short; the keeps after it take the rest.
		for round := 0; round < maxEvictionRounds && (total.Emails > int64(limits.TotalEmails) || total.Bytes > limits.TotalBytes); round++ {
			measure, over := "emails", total.Emails-int64(limits.TotalEmails)
			if over <= 0 {
				measure, over = "bytes", total.Bytes-limits.TotalBytes
			}
			var largest []struct {
				AccountID string `bun:"account_id"`
				Held      int64  `bun:"held"`
			}
			if err := c.write.NewRaw("SELECT account_id, "+measure+" AS held FROM sandbox_mailbox_usage WHERE "+measure+" = (SELECT MAX("+measure+") FROM sandbox_mailbox_usage) ORDER BY (account_id = ?) DESC, account_id LIMIT 2", row.AccountID).Scan(ctx, &largest); err != nil {
				return err
			}
			if len(largest) == 0 {
				return fmt.Errorf("the sandbox mailbox's totals (%d emails, %d bytes) hold more than its accounts", total.Emails, total.Bytes)
			}
			gap := int64(1) // Two hold the most: one unit, then look again.
			if len(largest) == 1 {
				var next []int64
				if err := c.write.NewRaw("SELECT COALESCE(MAX("+measure+"), 0) FROM sandbox_mailbox_usage WHERE "+measure+" < ?", largest[0].Held).Scan(ctx, &next); err != nil {
					return err
				}
				gap = max(1, largest[0].Held-next[0])
			}
			need := mailboxUsage{Emails: min(over, gap)}
			if measure == "bytes" {
				need = mailboxUsage{Bytes: min(over, gap)}
			}
			removed, err := MailboxStore{c}.evictOldest(ctx, largest[0].AccountID, need)
			if err != nil {
				return err
			}
			total.Emails, total.Bytes = total.Emails-removed.Emails, total.Bytes-removed.Bytes
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keep sandbox email: %w", err)
	}
	return nil
}

// evictOldest removes the account's oldest emails, as few as make up at
// least need (emails and bytes), and takes them off the account's usage
// and the totals; it returns what it removed.
func (c MailboxStore) evictOldest(ctx context.Context, accountID string, need mailboxUsage) (mailboxUsage, error) {
	var (
		removed mailboxUsage
		cutoff  int64
	)
	for removed.Emails < need.Emails || removed.Bytes < need.Bytes {
		var rows []struct {
			Seq  int64 `bun:"seq"`
			Size int64 `bun:"size"`
		}
		if err := c.write.NewRaw("SELECT seq, size FROM sandbox_emails WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?", accountID, cutoff, evictBatch).Scan(ctx, &rows); err != nil {
			return mailboxUsage{}, err
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			if removed.Emails >= need.Emails && removed.Bytes >= need.Bytes {
				break
			}
			cutoff = r.Seq
			removed.Emails++
			removed.Bytes += r.Size
		}
	}
	if removed.Emails == 0 {
		return removed, nil
	}
	if _, err := c.write.NewRaw("DELETE FROM sandbox_emails WHERE account_id = ? AND seq <= ?", accountID, cutoff).Exec(ctx); err != nil {
		return mailboxUsage{}, err
	}
	return removed, c.takeOff(ctx, accountID, removed)
}

// takeOff takes removed, the emails just deleted from the account's kept
// ones, off the account's usage and the totals.
func (c MailboxStore) takeOff(ctx context.Context, accountID string, removed mailboxUsage) error {
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE sandbox_mailbox_usage SET emails = emails - ?, bytes = bytes - ? WHERE account_id = ?", []any{removed.Emails, removed.Bytes, accountID}},
		{"DELETE FROM sandbox_mailbox_usage WHERE account_id = ? AND emails <= 0", []any{accountID}},
		{"UPDATE sandbox_mailbox_totals SET emails = emails - ?, bytes = bytes - ? WHERE id = 1", []any{removed.Emails, removed.Bytes}},
	} {
		if _, err := c.write.NewRaw(q.sql, q.args...).Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Kept reads a page of the account's kept emails, newest first, and how
// many it holds.
func (r MailboxStore) Kept(ctx context.Context, accountID string, offset, limit int) (appemail.MailboxPage, error) {
	var held []int64
	if err := r.read.NewRaw("SELECT emails FROM sandbox_mailbox_usage WHERE account_id = ?", accountID).Scan(ctx, &held); err != nil {
		return appemail.MailboxPage{}, fmt.Errorf("read sandbox mailbox: %w", err)
	}
	var rows []sandboxEmailRow
	if err := r.read.NewRaw("SELECT "+sandboxEmailColumns+" FROM sandbox_emails WHERE account_id = ? ORDER BY seq DESC LIMIT ? OFFSET ?", accountID, limit, offset).Scan(ctx, &rows); err != nil {
		return appemail.MailboxPage{}, fmt.Errorf("read sandbox mailbox: %w", err)
	}
	page := appemail.MailboxPage{Emails: make([]appemail.KeptEmail, 0, len(rows))}
	if len(held) > 0 {
		page.Total = int(held[0])
	}
	for _, row := range rows {
		e, err := row.kept()
		if err != nil {
			return appemail.MailboxPage{}, err
		}
		page.Emails = append(page.Emails, e)
	}
	return page, nil
}
