package email

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// Receiving email, in two steps. The SMTP listener asks Recipient for each
// RCPT TO and answers 550 for an address no account owns; after DATA it
// hands the message to Spool, which commits the raw bytes with the
// receive job in one batch before the listener answers 250, so a message
// answered 250 survives any crash. The job (Receive) parses the message,
// checks SPF, DKIM and DMARC, threads it and commits one email per
// receiving address with its attachments and its email.received event.

// ReceiveKind is the job kind that turns a spooled message into emails.
const ReceiveKind = "email.receive"

// ReceiveAttempts bounds the receive job's tries (a database away, a
// resolver timing out); parsing itself never fails.
const ReceiveAttempts = 10

// MaxReferences bounds the Message-IDs kept of References.
const MaxReferences = 50

// receivePayload is the receive job's payload.
type receivePayload struct {
	SpooledID string `json:"spooled_id"`
}

// Recipient finds the account owning address, an address an SMTP client
// wants to deliver to: NotFound when no account owns it (the listener
// answers 550: Switchboard never relays).
func (s *Service) Recipient(ctx context.Context, address string) (email.SpooledRecipient, error) {
	a, err := email.ParseAddress(address)
	if err != nil {
		return email.SpooledRecipient{}, failure.NotFound("email address")
	}
	addr, err := s.senderAddress(ctx, strings.ToLower(a.Local), a.Domain)
	if err != nil {
		return email.SpooledRecipient{}, err
	}
	return email.SpooledRecipient{Address: addr.Address(), AccountID: addr.AccountID}, nil
}

// Spool keeps a message the listener accepted and queues its parsing, in
// one commit: when Spool returns nil the message is stored durably. A
// message for addresses of several accounts is kept once per account,
// each copy with its own receive job, so that each goes with its
// account; the first is returned.
func (s *Service) Spool(ctx context.Context, m email.Spooled) (email.Spooled, error) {
	if len(m.Recipients) == 0 {
		return email.Spooled{}, failure.Invalid(failure.Field("value_error", "a message needs a recipient", "recipients"))
	}
	var b writes.Batch
	now := s.now()
	for _, one := range m.ByAccount() {
		one.ID, one.ReceivedAt = ident.New(ident.Spooled), now
		payload, _ := json.Marshal(receivePayload{SpooledID: one.ID})
		b.Spooled = append(b.Spooled, one)
		b.Jobs = append(b.Jobs, jobs.EnqueueParams{
			Kind: ReceiveKind, Payload: payload, MaxAttempts: ReceiveAttempts, AccountID: one.AccountID(),
		})
	}
	if err := s.committer.Commit(ctx, b); err != nil {
		return email.Spooled{}, err
	}
	return b.Spooled[0], nil
}

// Receive is the receive job's handler: it parses the spooled message and
// commits one email per receiving address. It is idempotent: the emails'
// ids derive from the spooled message's, and one that exists is not
// written again.
func (s *Service) Receive(ctx context.Context, job jobs.Job) error {
	var p receivePayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("email receive payload: %w", err))
	}
	if s.inbox == nil {
		return jobs.Permanent(fmt.Errorf("email receive: no inbox configured"))
	}
	sp, err := s.inbox.Spooled(ctx, p.SpooledID)
	if failure.Is(err, failure.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.receive(ctx, sp)
}

// SimulatedAuthentication is what a simulated message records for its
// checks: none was made.
var SimulatedAuthentication = email.Authentication{SPF: email.AuthNone, DKIM: email.AuthNone, DMARC: email.AuthNone,
	Reason: "simulated through the sandbox: nothing was checked"}

// receive parses the spooled message sp and commits one email per
// receiving address, each unless it exists.
func (s *Service) receive(ctx context.Context, sp email.Spooled) error {
	parsed := s.parser.Parse(sp.Raw)
	var auth email.Authentication
	switch {
	case sp.Simulated:
		auth = SimulatedAuthentication
	case s.auth != nil:
		fromDomain := ""
		if a, err := email.ParseAddress(parsed.From); err == nil {
			fromDomain = a.Domain
		}
		auth = s.auth.Check(ctx, sp, fromDomain)
	}
	return s.inbox.Decide(ctx, func(ctx context.Context, tx InboxReads) (writes.Batch, error) {
		var b writes.Batch
		seen := map[string]bool{}
		// reported are the sent emails a delivery report bounced for an
		// earlier recipient of the same account.
		reported := map[string]bool{}
		for i, rcpt := range sp.Recipients {
			if seen[strings.ToLower(rcpt.Address)] {
				continue
			}
			seen[strings.ToLower(rcpt.Address)] = true
			id := receivedEmailID(sp.ID, i)
			exists, err := tx.EmailExists(ctx, id)
			if err != nil {
				return writes.Batch{}, err
			}
			if exists {
				continue
			}
			rb, err := s.received(ctx, tx, sp, parsed, auth, rcpt, id, reported)
			if err != nil {
				return writes.Batch{}, err
			}
			b.Add(rb)
		}
		return b, nil
	})
}

// receivedEmailID is the id of the email the spooled message spooledID
// becomes for its i-th recipient: the same on every attempt.
func receivedEmailID(spooledID string, i int) string {
	return ident.Email + "_" + strings.TrimPrefix(spooledID, ident.Spooled+"_") + strconv.Itoa(i)
}

// received is the batch of one receiving address: the email, its
// attachments within the caps, and its event; for a delivery report, the
// bounce of the sent email it reports on, unless reported has it.
func (s *Service) received(ctx context.Context, tx InboxReads, sp email.Spooled, m Parsed, auth email.Authentication, rcpt email.SpooledRecipient, id string, reported map[string]bool) (writes.Batch, error) {
	limits := s.inbound
	text := m.Text
	if text == "" && m.HTML != "" {
		text = email.TextFromHTML(m.HTML)
	}
	e := email.Email{
		ID: id, AccountID: rcpt.AccountID, Direction: email.Inbound, Mailbox: strings.ToLower(rcpt.Address),
		From: m.From, FromName: m.FromName, To: rcpt.Address, ToList: m.To, Cc: m.Cc, ReplyTo: m.ReplyTo,
		Subject: m.Subject, Body: cut(text, limits.TextBytes), HTMLBody: cut(m.HTML, limits.TextBytes),
		ExtractedText: cut(email.ExtractReply(text), limits.TextBytes),
		Headers:       m.Headers, MessageID: m.MessageID, InReplyTo: m.InReplyTo, References: m.References,
		Status: email.Received, Auth: auth, RawID: sp.ID, Size: int64(len(sp.Raw)), ParseProblem: m.Problem,
		CreatedAt: sp.ReceivedAt, UpdatedAt: s.now(),
	}
	if e.From == "" {
		e.From = sp.MailFrom
	}
	var (
		b    writes.Batch
		orig *email.Email
		err  error
	)
	if m.Report != nil {
		// A delivery report joins the thread of the email it reports on.
		if orig, b, err = s.bounce(ctx, tx, e, m.Report); err != nil {
			return writes.Batch{}, err
		}
		if orig != nil && reported[orig.ID] {
			b = writes.Batch{}
		} else if orig != nil {
			reported[orig.ID] = true
		}
	}
	if orig != nil && orig.ThreadID != "" {
		e.ThreadID = orig.ThreadID
	} else if e.ThreadID, err = s.threadOf(ctx, tx, e); err != nil {
		return writes.Batch{}, err
	}
	used, err := tx.StoredAttachmentBytes(ctx, e.AccountID)
	if err != nil {
		return writes.Batch{}, err
	}
	var perMail int64
	for i, pa := range m.Attachments {
		a := email.Attachment{
			ID: attachmentID(e.ID, i), EmailID: e.ID, AccountID: e.AccountID, Name: pa.Name, ContentType: pa.ContentType,
			ContentID: pa.ContentID, Inline: pa.Inline, Size: pa.Size, SHA256: pa.SHA256, CreatedAt: e.CreatedAt,
		}
		if perMail+pa.Size <= limits.AttachmentBytesPerEmail && used+pa.Size <= limits.AttachmentBytesPerAccount {
			a.Stored, a.Content = true, pa.Content
			perMail += pa.Size
			used += pa.Size
		}
		b.EmailAttachments = append(b.EmailAttachments, a)
		e.Attachments = append(e.Attachments, a)
	}
	b.Emails = []email.Email{e}
	b.Events = append([]event.Event{s.receivedEvent(e, sp)}, b.Events...)
	return b, nil
}

// threadOf is the thread a received email joins: the thread of the
// newest email of the account whose Message-ID its In-Reply-To or
// References name; failing that, when it has neither header and its
// subject is a reply's, the newest thread of its mailbox with the same
// subject key exchanged with its sender within SubjectThreadWindow;
// failing that, a new thread.
func (s *Service) threadOf(ctx context.Context, tx InboxReads, e email.Email) (string, error) {
	links := e.References
	if e.InReplyTo != "" {
		links = append([]string{e.InReplyTo}, links...)
	}
	if len(links) > 0 {
		t, err := tx.ThreadByMessageIDs(ctx, e.AccountID, links)
		if t != "" || err != nil {
			return t, err
		}
	} else if email.IsReplySubject(e.Subject) {
		t, err := tx.ThreadBySubject(ctx, e.AccountID, e.Mailbox, strings.ToLower(e.From), email.SubjectKey(e.Subject), e.CreatedAt.Add(-s.inbound.SubjectThreadWindow))
		if t != "" || err != nil {
			return t, err
		}
	}
	return email.StartedThreadID(e.ID), nil
}

// attachmentID is the id of the i-th attachment of the email emailID: in
// the email's order, and the same on every attempt.
func attachmentID(emailID string, i int) string {
	return fmt.Sprintf("%s_%s%04d", ident.Attachment, strings.TrimPrefix(emailID, ident.Email+"_"), i)
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ReceivedPayload is the body of an email.received event: the parsed
// email, and the names A1Base's A1Mail payload uses (email_id, subject,
// sender_address, recipient_address, raw_email_data).
type ReceivedPayload struct {
	EventHeader
	InReplyTo        string               `json:"in_reply_to,omitempty"`
	References       []string             `json:"references"`
	Subject          string               `json:"subject"`
	SenderAddress    string               `json:"sender_address"`
	SenderName       string               `json:"sender_name"`
	RecipientAddress string               `json:"recipient_address"`
	Cc               []string             `json:"cc"`
	ReplyTo          []string             `json:"reply_to"`
	Text             string               `json:"text"`
	HTML             string               `json:"html"`
	ExtractedText    string               `json:"extracted_text"`
	Attachments      []AttachmentSummary  `json:"attachments"`
	Authentication   email.Authentication `json:"authentication"`
	DMARCFailed      bool                 `json:"dmarc_failed"`
	Size             int64                `json:"size"`
	ParseProblem     string               `json:"parse_problem,omitempty"`
	// RawEmailData is the message as received when it is at most
	// InboundLimits.RawInPayloadBytes; RawEmailOmitted tells it was left
	// out for its size.
	RawEmailData    string `json:"raw_email_data,omitempty"`
	RawEmailOmitted bool   `json:"raw_email_omitted,omitempty"`
}

// AttachmentSummary is an attachment as payloads and listings show it.
type AttachmentSummary struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	ContentType string `json:"content_type"`
	ContentID   string `json:"content_id,omitempty"`
	Inline      bool   `json:"inline"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	Stored      bool   `json:"stored"`
}

// Summaries are the attachments' summaries (an empty list for none).
func Summaries(as []email.Attachment) []AttachmentSummary {
	out := make([]AttachmentSummary, len(as))
	for i, a := range as {
		out[i] = AttachmentSummary{ID: a.ID, Name: a.Name, ContentType: a.ContentType, ContentID: a.ContentID, Inline: a.Inline, Size: a.Size, SHA256: a.SHA256, Stored: a.Stored}
	}
	return out
}

// receivedEvent is the email.received event of e.
func (s *Service) receivedEvent(e email.Email, sp email.Spooled) event.Event {
	return s.emailEvent(event.EmailReceived, e, func(h EventHeader) any {
		p := ReceivedPayload{
			EventHeader: h, InReplyTo: e.InReplyTo, References: nonNilList(e.References),
			Subject: e.Subject, SenderAddress: e.From, SenderName: e.FromName, RecipientAddress: e.To,
			Cc: nonNilList(e.Cc), ReplyTo: nonNilList(e.ReplyTo), Text: e.Body, HTML: e.HTMLBody, ExtractedText: e.ExtractedText,
			Attachments: Summaries(e.Attachments), Authentication: e.Auth, DMARCFailed: e.Auth.DMARCFailed(), Size: e.Size,
			ParseProblem: e.ParseProblem,
		}
		if len(sp.Raw) <= s.inbound.RawInPayloadBytes {
			p.RawEmailData = strings.ToValidUTF8(string(sp.Raw), "\uFFFD")
		} else {
			p.RawEmailOmitted = true
		}
		return p
	})
}

func nonNilList(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
