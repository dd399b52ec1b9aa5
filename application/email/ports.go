package email

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// Repos is the storage of email addresses and emails; new emails are
// written by the committer (writes.Batch.Emails). Each method is atomic
// by itself.
//
// Errors: a lookup returns a failure of kind NotFound for a missing row and
// for a row of another account alike; an insert of a taken unique value
// returns one of kind Conflict; when the database is away, every method
// returns a failure of kind Unavailable. Other errors are infrastructure
// failures.
type Repos interface {
	// InsertEmailAddress stores a new address. With customDomain, the
	// address's domain must be one of its account's custom domains,
	// checked in the same transaction: NotFound otherwise. Conflict when
	// the address exists, on any account.
	InsertEmailAddress(ctx context.Context, a account.EmailAddress, customDomain bool) error
	// EmailAddressByAddress finds an address by local part and domain,
	// whichever account owns it. NotFound.
	EmailAddressByAddress(ctx context.Context, localPart, domain string) (account.EmailAddress, error)

	// Email reads an email of an account. NotFound.
	Email(ctx context.Context, accountID, id string) (email.Email, error)
	// EmailByID reads an email without account scoping, for delivery.
	// NotFound.
	EmailByID(ctx context.Context, id string) (email.Email, error)
	// Emails lists an account's emails, newest first (by creation, then
	// id), after the position after when it is set; at most limit.
	Emails(ctx context.Context, accountID string, after *EmailCursor, limit int) ([]email.Email, error)
}

// Store gives the use cases their repositories.
type Store interface {
	Repos() Repos
}

// EmailCursor is a position in the newest-first order of an account's
// emails.
type EmailCursor struct {
	CreatedAt time.Time
	ID        string
}

// Outgoing is one email as a Sender gets it: envelope and content, ready
// to be written as MIME.
type Outgoing struct {
	// AccountID is whose email it is (for the sandbox mailbox's
	// listing; a relay does not see it).
	AccountID string
	// MessageID is the Message-ID header value, angle brackets included.
	MessageID string
	// From is the sender's address and FromName its display name ("" for
	// none); To are the To recipients.
	From     string
	FromName string
	To       []email.Mailbox
	Cc       []string
	// Bcc recipients are in the envelope only, never in a header.
	Bcc     []string
	ReplyTo []string
	Subject string
	// Text is the plain-text body; HTML, when set, is sent beside it as
	// multipart/alternative.
	Text    string
	HTML    string
	Headers []email.Header
	// Attachment, when set, is attached to the email.
	Attachment *Attachment
	Date       time.Time
}

// Recipients is the envelope: To, Cc and Bcc.
func (o Outgoing) Recipients() []string {
	out := make([]string, 0, len(o.To)+len(o.Cc)+len(o.Bcc))
	for _, m := range o.To {
		out = append(out, m.Address)
	}
	out = append(out, o.Cc...)
	return append(out, o.Bcc...)
}

// Attachment is a fetched file.
type Attachment struct {
	Name        string
	ContentType string
	Data        []byte
}

// Receipt is what the relay answered to an accepted email.
type Receipt struct {
	// Reply is the server's final reply ("250 2.0.0 Ok: queued as 4BXk").
	Reply string
}

// Sender hands emails to a relay. Implementations are safe for concurrent
// use. Send returns a *SMTPError when the server refused the email with a
// reply, an error wrapping ErrUnsendable when the email cannot be written;
// any other error (connection refused, timeout) is transient.
type Sender interface {
	Send(ctx context.Context, m Outgoing) (Receipt, error)
}

// Composer writes an email as RFC 5322 bytes, as a Sender would send it.
// It returns an error wrapping ErrUnsendable when the email cannot be
// written.
type Composer interface {
	Compose(out Outgoing) ([]byte, error)
}

// Mailbox is the storage of the sandbox mailbox, where the Sender used
// when no relay is configured keeps what it was handed instead of sending
// it. It lives in the database, so every replica reads the same mailbox.
//
// Errors: when the database is away, both methods return a failure of
// kind Unavailable; other errors are infrastructure failures.
type Mailbox interface {
	// Keep stores e and then removes emails until limits hold again, all
	// in one transaction that concurrent Keeps wait for. First the
	// account's own oldest emails go, until the account is within
	// AccountEmails and AccountBytes. Then, while the mailbox is over
	// TotalEmails (or TotalBytes), the oldest email of the account
	// holding the most emails (or bytes) goes, the sending account
	// first among equals. So another account's sending removes an
	// account's email only while that account holds at least as much as
	// every other account, the sender included: at least the average,
	// which is above its fair share of the total bound (the total
	// divided by the accounts holding email). An account within its fair
	// share loses email only to its own sends. An email that alone
	// exceeds AccountBytes or TotalBytes is not kept and removes nothing.
	// After the total bounds were lowered, a keep may leave the mailbox
	// above them when trimming would take more than a few hundred steps
	// (the next keeps go on).
	Keep(ctx context.Context, e KeptEmail, limits MailboxLimits) error
	// Kept returns the account's emails from offset (newest first), at
	// most limit, and how many the mailbox holds of the account.
	Kept(ctx context.Context, accountID string, offset, limit int) (MailboxPage, error)
}

// ErrUnsendable is wrapped by a Sender's error when the email cannot be
// written at all (an address the library refuses); retrying cannot help.
var ErrUnsendable = errors.New("email cannot be written")

// SMTPError is a refusal the server explained with a reply code.
type SMTPError struct {
	// Code is the reply code (451, 550, ...); EnhancedCode the RFC 3463
	// status ("5.1.1") when the server sent one.
	Code         int
	EnhancedCode string
	// Reply is the server's text, code included.
	Reply string
}

func (e *SMTPError) Error() string { return "smtp: " + e.Reply }

// Temporary reports a 4xx reply, which a later attempt may overcome; 5xx
// replies are permanent.
func (e *SMTPError) Temporary() bool { return e.Code >= 400 && e.Code < 500 }

// Fetcher downloads an attachment through the SSRF-safe client, reading
// at most maxBytes. It returns ErrAttachmentTooLarge beyond the limit and a
// *FetchError for what retrying cannot fix.
type Fetcher interface {
	Fetch(ctx context.Context, rawURL string, maxBytes int64) (Attachment, error)
}

// ErrAttachmentTooLarge is returned by a Fetcher when the declared length
// or the bytes read exceed the limit.
var ErrAttachmentTooLarge = errors.New("attachment is larger than the limit")

// FetchError is an attachment failure retrying cannot fix (a 404, a
// forbidden address).
type FetchError struct {
	Code    string
	Message string
}

func (e *FetchError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// URLChecker refuses URLs on private, loopback or link-local addresses at
// request time.
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}
