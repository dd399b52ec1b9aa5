package email

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/email"
)

// KeptEmail is an email as the sandbox mailbox keeps it: what a relay
// would have received, with the attachment described instead of stored.
type KeptEmail struct {
	AccountID string
	// MessageID is the Message-ID header value, angle brackets included.
	MessageID string
	// From and To are the header values: the sender and the To
	// recipients as written, display names included.
	From string
	To   string
	Cc   []string
	// Bcc recipients were in the envelope only.
	Bcc     []string
	ReplyTo []string
	Subject string
	// Text and HTML are the parts, each cut at MailboxLimits.BodyBytes
	// with TruncatedMarker.
	Text    string
	HTML    string
	Headers []email.Header
	// Attachment describes the attached file; nil without one.
	Attachment *KeptAttachment
	Date       time.Time
}

// KeptAttachment describes an attached file. The mailbox never keeps the
// file's bytes: their count and SHA-256 identify them.
type KeptAttachment struct {
	Name        string
	ContentType string
	// Size is the file's length in bytes.
	Size int64
	// SHA256 is the hex SHA-256 of the file's bytes.
	SHA256 string
}

// TruncatedMarker ends a part the mailbox cut; %d is the part's whole
// length in bytes.
const TruncatedMarker = "\n[… truncated by the sandbox mailbox: %d bytes in all]"

// KeptFrom is what the mailbox keeps of out: the attachment's bytes are
// counted and hashed, never copied, and a text or HTML part longer than
// bodyBytes is cut at a character boundary and ends with TruncatedMarker.
func KeptFrom(out Outgoing, bodyBytes int) KeptEmail {
	k := KeptEmail{
		AccountID: out.AccountID, MessageID: out.MessageID, From: email.Mailbox{Name: out.FromName, Address: out.From}.String(), To: email.FormatList(out.To),
		Cc: out.Cc, Bcc: out.Bcc, ReplyTo: out.ReplyTo, Subject: out.Subject,
		Text: truncate(out.Text, bodyBytes), HTML: truncate(out.HTML, bodyBytes),
		Headers: out.Headers, Date: out.Date.UTC().Truncate(time.Microsecond),
	}
	if a := out.Attachment; a != nil {
		h := sha256.New()
		n, _ := io.Copy(h, bytes.NewReader(a.Data)) // A hash takes every write.
		k.Attachment = &KeptAttachment{Name: a.Name, ContentType: a.ContentType, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	}
	return k
}

// truncate cuts s to at most n bytes at a character boundary and adds
// TruncatedMarker; s is returned as it is when it fits.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf(TruncatedMarker, len(s))
}

// Size is what the email counts against the mailbox's byte bounds: the
// bytes of every text it stores (addresses, subject, parts, headers, the
// attachment's name and type). The attachment's bytes are not stored and
// do not count.
func (k KeptEmail) Size() int64 {
	n := len(k.MessageID) + len(k.From) + len(k.To) + len(k.Subject) + len(k.Text) + len(k.HTML)
	for _, list := range [][]string{k.Cc, k.Bcc, k.ReplyTo} {
		for _, a := range list {
			n += len(a)
		}
	}
	for _, h := range k.Headers {
		n += len(h.Name) + len(h.Value)
	}
	if k.Attachment != nil {
		n += len(k.Attachment.Name) + len(k.Attachment.ContentType) + len(k.Attachment.SHA256)
	}
	return int64(n)
}

// MailboxLimits bound the sandbox mailbox, per account and in total, by
// count and by bytes (KeptEmail.Size).
type MailboxLimits struct {
	// AccountEmails and AccountBytes bound one account's emails; beyond
	// either, the account's own oldest emails are removed.
	AccountEmails int
	AccountBytes  int64
	// TotalEmails and TotalBytes bound every account's emails together;
	// beyond either, emails are removed from the account holding the
	// most (Mailbox.Keep states the rule).
	TotalEmails int
	TotalBytes  int64
	// BodyBytes bounds each of an email's text and HTML parts.
	BodyBytes int
}

// DefaultMailboxLimits are the bounds unless configured: 1,000 emails or
// 10 MiB per account, 100,000 emails or 500 MiB in all, parts cut at
// 256 KiB.
var DefaultMailboxLimits = MailboxLimits{
	AccountEmails: 1000, AccountBytes: 10 << 20,
	TotalEmails: 100_000, TotalBytes: 500 << 20,
	BodyBytes: 256 << 10,
}

// Check reports limits that cannot work: a bound that is not positive, an
// account's bound above the total one, or parts so long that one email
// could outgrow an account's bytes.
func (l MailboxLimits) Check() error {
	switch {
	case l.AccountEmails <= 0 || l.AccountBytes <= 0 || l.TotalEmails <= 0 || l.TotalBytes <= 0 || l.BodyBytes <= 0:
		return errors.New("every sandbox mailbox bound must be positive")
	case l.AccountEmails > l.TotalEmails || l.AccountBytes > l.TotalBytes:
		return errors.New("a sandbox mailbox's per-account bound must not exceed its total bound")
	case 4*int64(l.BodyBytes) > l.AccountBytes:
		return fmt.Errorf("the sandbox mailbox's body cap (%d bytes) must be at most a quarter of its per-account bytes (%d)", l.BodyBytes, l.AccountBytes)
	}
	return nil
}

// MailboxPage is a page of the sandbox mailbox's emails of one account.
type MailboxPage struct {
	// Emails are newest first.
	Emails []KeptEmail
	// Total is how many of the account's emails the mailbox holds.
	Total int
}
