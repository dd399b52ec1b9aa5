// Package email is the model of outbound email: the addresses an account
// sends from (their local-part rules), recipient address validation, the
// headers a client may set (and the injection they must not carry), and the
// life of one email: queued → sent | failed.
package email

import (
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Status is where an email is in its life.
type Status string

// The statuses of a sent email. It is queued when accepted, then sent
// (the relay accepted it with a 2xx) or failed (a 5xx, or retries ran
// out); a sent email becomes bounced when a receiving server reports
// with a delivery status notification that it could not deliver it.
const (
	Queued  Status = "queued"
	Sent    Status = "sent"
	Failed  Status = "failed"
	Bounced Status = "bounced"
)

// Final reports whether the delivery is over: no relay will be asked
// again (a sent email may still become bounced).
func (s Status) Final() bool { return s == Sent || s == Failed || s == Bounced || s == Received }

// MayBounce reports whether an email of status s becomes bounced when a
// delivery status notification reports a failed recipient: one queued
// (its outcome not yet recorded when the report arrives) or sent.
func (s Status) MayBounce() bool { return s == Queued || s == Sent }

// Limits of an email.
const (
	// MinLocalLength and MaxLocalLength bound the local part of an address
	// created on the service (the interface's "5 to 30 characters").
	MinLocalLength = 5
	MaxLocalLength = 30
	// MaxSubjectLength bounds the subject in characters.
	MaxSubjectLength = 998
	// MaxRecipients bounds To, Cc and Bcc together.
	MaxRecipients = 50
	// MaxAddressLength is RFC 5321's limit of a forward path.
	MaxAddressLength = 254
)

// NormalizeLocalPart case-folds the local part of a new address and checks
// the creation rules: 5-30 characters of [a-z0-9._-], no leading, trailing
// or double dot. Problems are reported on field.
func NormalizeLocalPart(local, field string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(local))
	var p failure.Problems
	switch n := utf8.RuneCountInString(l); {
	case n < MinLocalLength:
		p.Add("string_too_short", "address must be at least 5 characters", field)
	case n > MaxLocalLength:
		p.Add("string_too_long", "address must be at most 30 characters", field)
	}
	for _, r := range l {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			p.Add("string_pattern_mismatch", "address may contain only a-z, 0-9, dot, underscore and hyphen", field)
			break
		}
	}
	switch {
	case strings.HasPrefix(l, "."), strings.HasSuffix(l, "."):
		p.Add("value_error", "address must not start or end with a dot", field)
	case strings.Contains(l, ".."):
		p.Add("value_error", "address must not contain two dots in a row", field)
	}
	if err := p.Err(); err != nil {
		return "", err
	}
	return l, nil
}

// Address is a parsed mailbox address, local@domain, with the domain
// lower-cased (the local part keeps its case, as RFC 5321 asks).
type Address struct {
	Local  string
	Domain string
}

// String is local@domain.
func (a Address) String() string { return a.Local + "@" + a.Domain }

// atext is RFC 5322's atom characters besides letters and digits.
const atext = "!#$%&'*+-/=?^_`{|}~"

// ParseAddress checks a bare mailbox address (dot-atom local part, DNS
// domain): no display name, no quoted local part, no comments, nothing
// that could carry a header line break.
func ParseAddress(s string) (Address, error) {
	s = strings.TrimSpace(s)
	at := strings.LastIndexByte(s, '@')
	if s == "" || len(s) > MaxAddressLength || at <= 0 || at == len(s)-1 {
		return Address{}, errAddress
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 || strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return Address{}, errAddress
	}
	for i := 0; i < len(local); i++ {
		c := local[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || strings.IndexByte(atext, c) >= 0) {
			return Address{}, errAddress
		}
	}
	d, err := account.NormalizeDomain(domain)
	if err != nil || d != strings.ToLower(domain) {
		return Address{}, errAddress
	}
	return Address{Local: local, Domain: d}, nil
}

var errAddress = failure.Invalid(failure.Field("value_error", "not a valid email address"))

// CheckAddress parses s and reports a problem on path when it is not an
// address.
func CheckAddress(p *failure.Problems, s string, path ...any) Address {
	a, err := ParseAddress(s)
	if err != nil {
		badAddress(p, path...)
	}
	return a
}

// badAddress records a value that is not an address.
func badAddress(p *failure.Problems, path ...any) {
	p.Add("value_error", "must be an email address such as someone@example.com", path...)
}

// Email is one email of an account: sent through the API (outbound) or
// received by the SMTP listener (inbound).
type Email struct {
	ID        string
	AccountID string
	Direction Direction
	// Mailbox is the account's address the email belongs to: the sender
	// of an outbound one, the receiving address of an inbound one.
	Mailbox string
	// ThreadID is the conversation it belongs to (eth_…).
	ThreadID string
	// From is the sender's address: the account's for an outbound email.
	// FromName is the sender's display name, where given.
	From     string
	FromName string
	// To is the first To recipient of an outbound email, the receiving
	// address of an inbound one. ToList is every To recipient with its
	// display name (To first), where the email has several or a name; an
	// inbound email's is its To header's.
	To      string
	ToList  []Mailbox
	Cc      []string
	Bcc     []string
	ReplyTo []string
	Subject string
	Body    string
	// HTML is true when Body is HTML (sent as multipart/alternative with
	// a generated text part).
	HTML bool
	// Headers are the extra safe headers the client set.
	Headers []Header
	// AttachmentURI is a file fetched at delivery and attached.
	AttachmentURI string
	// MessageID is the RFC 5322 Message-ID, fixed when the email is
	// accepted so that every delivery attempt carries the same one.
	MessageID string
	Status    Status
	// Reply is the last SMTP reply ("250 2.0.0 Ok: queued as ...",
	// "550 5.1.1 User unknown"); FailureCode says why a failed email
	// failed.
	Reply       string
	FailureCode string
	Attempts    int
	CreatedAt   time.Time
	UpdatedAt   time.Time
	SentAt      *time.Time

	// InReplyTo and References are the Message-IDs the email answers and
	// follows (angle brackets included).
	InReplyTo  string
	References []string
	// The fields of an inbound email: its HTML part (Body is the text
	// part, or text made from the HTML), the reply without its quoted
	// history, the authentication results, its spooled raw message and
	// size in bytes, what went wrong while parsing it (empty when
	// nothing), and its attachments (read where asked for).
	HTMLBody      string
	ExtractedText string
	Auth          Authentication
	RawID         string
	Size          int64
	ParseProblem  string
	Attachments   []Attachment
}

// AllTo is every To recipient: ToList, or To alone.
func (e Email) AllTo() []Mailbox {
	if len(e.ToList) > 0 {
		return e.ToList
	}
	if e.To == "" {
		return nil
	}
	return []Mailbox{{Address: e.To}}
}

// Recipients is every envelope recipient of an outbound email: To, Cc
// and Bcc.
func (e Email) Recipients() []string {
	to := e.AllTo()
	out := make([]string, 0, len(to)+len(e.Cc)+len(e.Bcc))
	for _, m := range to {
		out = append(out, m.Address)
	}
	out = append(out, e.Cc...)
	return append(out, e.Bcc...)
}

// Mailbox is an address with the display name it is shown with ("" for
// none).
type Mailbox struct {
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
}

// String is the mailbox as a header shows it: the address alone, or the
// name (quoted or encoded as RFC 5322 and 2047 need) and the address in
// angle brackets.
func (m Mailbox) String() string {
	if m.Name == "" {
		return m.Address
	}
	return (&mail.Address{Name: m.Name, Address: m.Address}).String()
}
