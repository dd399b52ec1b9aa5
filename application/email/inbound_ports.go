package email

import (
	"context"
	"time"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// Inbox is the storage of received email: the spooled messages, the
// mailbox listings, attachments and the reads that thread an email. New
// rows are written by the committer (writes.Batch: Spooled, Emails,
// EmailAttachments) or by Decide.
//
// Errors: a lookup returns a failure of kind NotFound for a missing row
// and for a row of another account alike; when the database is away,
// every method returns a failure of kind Unavailable. Other errors are
// infrastructure failures.
type Inbox interface {
	InboxReads
	// Spooled reads a spooled message. NotFound.
	Spooled(ctx context.Context, id string) (email.Spooled, error)
	// Decide runs decide in a transaction, reading through tx, and writes
	// the batch it returns there, with its reactions. When decide fails,
	// nothing is written and Decide returns its error; otherwise it
	// returns writes.Committer's errors.
	Decide(ctx context.Context, decide func(ctx context.Context, tx InboxReads) (writes.Batch, error)) error
	// MailboxEmails lists the account's emails of mailbox (received and
	// sent, mailbox lower-case), newest first (by creation, then id),
	// after the position after when it is set; at most limit.
	MailboxEmails(ctx context.Context, accountID, mailbox string, after *EmailCursor, limit int) ([]email.Email, error)
	// ThreadEmails lists the account's emails of the thread threadID,
	// oldest first (by creation, then id), at most limit.
	ThreadEmails(ctx context.Context, accountID, threadID string, limit int) ([]email.Email, error)
	// Attachments lists the attachments of the account's emails emailIDs,
	// without their content, by email (in the email's order); an email
	// without any, or of another account, is absent.
	Attachments(ctx context.Context, accountID string, emailIDs []string) (map[string][]email.Attachment, error)
	// Attachment reads one attachment of an account's email with its
	// content. NotFound.
	Attachment(ctx context.Context, accountID, emailID, id string) (email.Attachment, error)
}

// InboxReads are the reads that decide where a received email goes. An
// outbound email's Message-ID is email.SentMessageID of its id, and a
// thread's id is email.StartedThreadID of its first email's id (as Send
// and Receive write them): the stores may find both by those ids.
type InboxReads interface {
	// ThreadByMessageIDs is the thread of the account's newest email
	// whose Message-ID is one of ids; "" when there is none.
	ThreadByMessageIDs(ctx context.Context, accountID string, ids []string) (string, error)
	// ThreadBySubject is the thread of the newest email of the account's
	// mailbox created since since whose subject key is key and which was
	// exchanged with correspondent (sent to it, or received from it);
	// "" when there is none.
	ThreadBySubject(ctx context.Context, accountID, mailbox, correspondent, key string, since time.Time) (string, error)
	// SentEmail is the account's newest outbound email whose Message-ID
	// is one of ids; found is false when there is none.
	SentEmail(ctx context.Context, accountID string, ids []string) (e email.Email, found bool, err error)
	// StoredAttachmentBytes is the size of the content of the account's
	// stored attachments.
	StoredAttachmentBytes(ctx context.Context, accountID string) (int64, error)
	// EmailExists reports whether an email with this id exists, on any
	// account.
	EmailExists(ctx context.Context, id string) (bool, error)
}

// Parsed is what a Parser read of a raw message.
type Parsed struct {
	MessageID string
	InReplyTo string
	// References are the Message-IDs of References, oldest first.
	References []string
	Subject    string
	// From is the first From address and FromName its display name.
	From     string
	FromName string
	// To are the To header's mailboxes, with their display names.
	To      []email.Mailbox
	Cc      []string
	ReplyTo []string
	Date    time.Time
	// Text and HTML are the first text/plain and text/html parts that
	// are not attachments, decoded to UTF-8.
	Text, HTML string
	// Headers are the top-level header fields, in order, decoded.
	Headers     []email.Header
	Attachments []ParsedAttachment
	// Report is what the message reports about an email sent earlier
	// when it is a delivery status notification; nil otherwise.
	Report *email.DeliveryReport
	// Problem says where reading stopped or what was skipped (a missing
	// boundary, too many parts, an unknown charset); empty when the
	// whole message was read.
	Problem string
}

// ParsedAttachment is a file part of a message, decoded.
type ParsedAttachment struct {
	Name, ContentType, ContentID string
	Inline                       bool
	Size                         int64
	SHA256                       string
	// Content is the decoded bytes.
	Content []byte
}

// Parser reads raw messages. Parse never fails: what it cannot read is
// told in Parsed.Problem, with everything read before it. Its memory is
// bounded by a small multiple of len(raw).
type Parser interface {
	Parse(raw []byte) Parsed
}

// Authenticator checks where a spooled message comes from: SPF of its
// envelope sender against the connecting address, its DKIM signatures,
// and DMARC alignment of fromDomain (the From header's domain). Lookups
// that fail give temperror, never an error.
type Authenticator interface {
	Check(ctx context.Context, s email.Spooled, fromDomain string) email.Authentication
}

// InboundLimits bound what received email stores.
type InboundLimits struct {
	// AttachmentBytesPerEmail bounds the stored attachment content of one
	// email, AttachmentBytesPerAccount all of an account's. Past a cap, an
	// attachment's metadata is kept and its content dropped.
	AttachmentBytesPerEmail   int64
	AttachmentBytesPerAccount int64
	// TextBytes bounds each of an email's text and HTML parts as stored.
	TextBytes int
	// RawInPayloadBytes bounds the raw message included in the
	// email.received payload (raw_email_data); a larger one is left out
	// and read through the API.
	RawInPayloadBytes int
	// SubjectThreadWindow is how far back a reply without headers that
	// link it looks for a thread with its subject.
	SubjectThreadWindow time.Duration
}

// DefaultInboundLimits are the limits when none are configured.
var DefaultInboundLimits = InboundLimits{
	AttachmentBytesPerEmail:   25 << 20,
	AttachmentBytesPerAccount: 1 << 30,
	TextBytes:                 1 << 20,
	RawInPayloadBytes:         256 << 10,
	SubjectThreadWindow:       30 * 24 * time.Hour,
}
