package store

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/uptrace/bun"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// EmailStore is the storage of email addresses and emails (email.Store).
type EmailStore struct{ *Conn }

var _ appemail.Store = EmailStore{}

// EmailStore is db's EmailStore, outside any transaction.
func (db *DB) EmailStore() EmailStore { return EmailStore{db.base} }

// Repos is s itself: each of its methods is atomic by itself.
func (s EmailStore) Repos() appemail.Repos { return s }

// InsertEmailAddress stores an address, with customDomain after checking
// in the same transaction that its domain is one of its account's; a
// taken local@domain is a Conflict.
func (r EmailStore) InsertEmailAddress(ctx context.Context, a account.EmailAddress, customDomain bool) error {
	row := emailAddressRow{ID: a.ID, AccountID: a.AccountID, LocalPart: a.LocalPart, Domain: a.Domain, CreatedAt: a.CreatedAt}
	if !customDomain {
		return insertRow(ctx, r.Conn, &row, "email address")
	}
	return r.db.Transact(ctx, func(ctx context.Context, c *Conn) error {
		var found []domainRow
		if err := c.selectAll(ctx, &found, "SELECT id, account_id, name, created_at FROM domains WHERE account_id = $1 AND name = $2", a.AccountID, a.Domain); err != nil {
			return translate(err, "domain")
		}
		if len(found) == 0 {
			return failure.NotFound("domain")
		}
		return insertRow(ctx, c, &row, "email address")
	})
}

// EmailAddressByAddress finds an address of any account.
func (r EmailStore) EmailAddressByAddress(ctx context.Context, localPart, domain string) (account.EmailAddress, error) {
	var row emailAddressRow
	if err := r.selectOne(ctx, &row, "SELECT id, account_id, local_part, domain, created_at FROM email_addresses WHERE local_part = $1 AND domain = $2", localPart, domain); err != nil {
		return account.EmailAddress{}, translate(err, "email address")
	}
	return account.EmailAddress{ID: row.ID, AccountID: row.AccountID, LocalPart: row.LocalPart, Domain: row.Domain, CreatedAt: row.CreatedAt.UTC()}, nil
}

const emailColumns = "id, account_id, from_address, to_address, cc, bcc, reply_to, subject, body, html, headers, attachment_uri, message_id, status, reply, failure_code, attempts, created_at, updated_at, sent_at, " +
	"direction, mailbox, thread_id, from_name, in_reply_to, references_ids, subject_key, html_body, extracted_text, auth, raw_id, size, parse_problem, to_list"

type emailRow struct {
	bun.BaseModel `bun:"table:emails"`
	ID            string     `bun:"id,pk"`
	AccountID     string     `bun:"account_id"`
	FromAddress   string     `bun:"from_address"`
	ToAddress     string     `bun:"to_address"`
	Cc            string     `bun:"cc"`
	Bcc           string     `bun:"bcc"`
	ReplyTo       string     `bun:"reply_to"`
	Subject       string     `bun:"subject"`
	Body          string     `bun:"body"`
	HTML          bool       `bun:"html"`
	Headers       string     `bun:"headers"`
	AttachmentURI string     `bun:"attachment_uri"`
	MessageID     string     `bun:"message_id"`
	Status        string     `bun:"status"`
	Reply         string     `bun:"reply"`
	FailureCode   string     `bun:"failure_code"`
	Attempts      int        `bun:"attempts"`
	CreatedAt     time.Time  `bun:"created_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
	SentAt        *time.Time `bun:"sent_at"`
	Direction     string     `bun:"direction"`
	Mailbox       string     `bun:"mailbox"`
	ThreadID      string     `bun:"thread_id"`
	FromName      string     `bun:"from_name"`
	InReplyTo     string     `bun:"in_reply_to"`
	References    string     `bun:"references_ids"`
	SubjectKey    string     `bun:"subject_key"`
	HTMLBody      string     `bun:"html_body"`
	ExtractedText string     `bun:"extracted_text"`
	Auth          string     `bun:"auth"`
	RawID         string     `bun:"raw_id"`
	Size          int64      `bun:"size"`
	ParseProblem  string     `bun:"parse_problem"`
	ToList        string     `bun:"to_list"`
}

// headerJSON is how one extra header is kept.
type headerJSON struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func jsonList[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func emailToRow(e email.Email) emailRow {
	headers := make([]headerJSON, len(e.Headers))
	for i, h := range e.Headers {
		headers[i] = headerJSON(h)
	}
	return emailRow{
		ID: e.ID, AccountID: e.AccountID, FromAddress: e.From, ToAddress: e.To,
		Cc: jsonList(e.Cc), Bcc: jsonList(e.Bcc), ReplyTo: jsonList(e.ReplyTo),
		Subject: e.Subject, Body: e.Body, HTML: e.HTML, Headers: jsonList(headers),
		AttachmentURI: e.AttachmentURI, MessageID: e.MessageID, Status: string(e.Status),
		Reply: e.Reply, FailureCode: e.FailureCode, Attempts: e.Attempts,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, SentAt: e.SentAt,
		Direction: string(cmp.Or(e.Direction, email.Outbound)), Mailbox: strings.ToLower(e.Mailbox), ThreadID: e.ThreadID,
		FromName: e.FromName, InReplyTo: e.InReplyTo, References: jsonList(e.References), SubjectKey: email.SubjectKey(e.Subject),
		HTMLBody: e.HTMLBody, ExtractedText: e.ExtractedText, Auth: authJSON(e.Auth), RawID: e.RawID, Size: e.Size,
		ParseProblem: e.ParseProblem, ToList: jsonList(e.ToList),
	}
}

// authJSON is how an email's authentication results are kept ("{}" for
// a sent email, which has none).
func authJSON(a email.Authentication) string {
	if a.SPF == "" && a.DKIM == "" && a.DMARC == "" {
		return "{}"
	}
	b, _ := json.Marshal(a)
	return string(b)
}

func (row emailRow) domain() (email.Email, error) {
	e := email.Email{
		ID: row.ID, AccountID: row.AccountID, From: row.FromAddress, To: row.ToAddress,
		Subject: row.Subject, Body: row.Body, HTML: row.HTML, AttachmentURI: row.AttachmentURI,
		MessageID: row.MessageID, Status: email.Status(row.Status), Reply: row.Reply,
		FailureCode: row.FailureCode, Attempts: row.Attempts,
		CreatedAt: row.CreatedAt.UTC(), UpdatedAt: row.UpdatedAt.UTC(),
		Direction: email.Direction(row.Direction), Mailbox: row.Mailbox, ThreadID: row.ThreadID, FromName: row.FromName,
		InReplyTo: row.InReplyTo, HTMLBody: row.HTMLBody, ExtractedText: row.ExtractedText, RawID: row.RawID,
		Size: row.Size, ParseProblem: row.ParseProblem,
	}
	if row.References != "" && row.References != "[]" {
		if err := json.Unmarshal([]byte(row.References), &e.References); err != nil {
			return email.Email{}, err
		}
	}
	if row.ToList != "" && row.ToList != "[]" {
		if err := json.Unmarshal([]byte(row.ToList), &e.ToList); err != nil {
			return email.Email{}, err
		}
	}
	if row.Auth != "" && row.Auth != "{}" {
		if err := json.Unmarshal([]byte(row.Auth), &e.Auth); err != nil {
			return email.Email{}, err
		}
	}
	if row.SentAt != nil {
		at := row.SentAt.UTC()
		e.SentAt = &at
	}
	var err error
	e.Cc, e.Bcc, e.ReplyTo, e.Headers, err = decodeAddressColumns(row.Cc, row.Bcc, row.ReplyTo, row.Headers)
	return e, err
}

// decodeAddressColumns reads the JSON columns an email row keeps its Cc,
// Bcc and Reply-To lists and its extra headers in ("[]" when empty).
func decodeAddressColumns(cc, bcc, replyTo, headers string) (ccs, bccs, replyTos []string, hs []email.Header, err error) {
	var raw []headerJSON
	for _, f := range []struct {
		raw string
		dst any
	}{{cc, &ccs}, {bcc, &bccs}, {replyTo, &replyTos}, {headers, &raw}} {
		if f.raw == "[]" {
			continue
		}
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	for _, h := range raw {
		hs = append(hs, email.Header(h))
	}
	return ccs, bccs, replyTos, hs, nil
}

// Email reads an email of an account.
func (r EmailStore) Email(ctx context.Context, accountID, id string) (email.Email, error) {
	var row emailRow
	if err := r.selectOne(ctx, &row, "SELECT "+emailColumns+" FROM emails WHERE id = $1 AND account_id = $2", id, accountID); err != nil {
		return email.Email{}, translate(err, "email")
	}
	return row.domain()
}

// EmailByID reads an email of any account.
func (r EmailStore) EmailByID(ctx context.Context, id string) (email.Email, error) {
	var row emailRow
	if err := r.selectOne(ctx, &row, "SELECT "+emailColumns+" FROM emails WHERE id = $1", id); err != nil {
		return email.Email{}, translate(err, "email")
	}
	return row.domain()
}

// Emails reads up to limit of the account's emails, newest first, after
// the position after when it is set, on the emails_account_idx index.
func (r EmailStore) Emails(ctx context.Context, accountID string, after *appemail.EmailCursor, limit int) ([]email.Email, error) {
	q := "SELECT " + emailColumns + " FROM emails WHERE account_id = ?"
	args := []any{accountID}
	if after != nil {
		q += " AND (created_at < ? OR (created_at = ? AND id < ?))"
		args = append(args, after.CreatedAt, after.CreatedAt, after.ID)
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT ?"
	return r.readEmails(ctx, q, append(args, limit)...)
}
