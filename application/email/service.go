// Package email holds the email use cases: creating an address on the
// service domain or an authorised custom domain, sending (stored and queued
// in one transaction, delivered by a job through the Sender port), and
// reading an email's status.
//
// Attachments are fetched at delivery, not when the send is accepted: the
// URL is checked against private ranges when the send is accepted (so an
// obviously internal URL is a 422 at once), and the file is downloaded by
// the delivery job through the SSRF-safe client, held to the document size
// limit. Accepting stays one short transaction, the database never holds
// the file, and a file host that is briefly down is retried like a relay
// that is.
package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// DeliverKind is the job kind that hands a queued email to the Sender.
const DeliverKind = "email.deliver"

// DeliveryAttempts bounds delivery tries; with DeliveryBackoff an email
// whose relay keeps answering 4xx is retried for about nine hours, in the
// spirit of an MTA's queue, before it is failed.
const DeliveryAttempts = 16

// DeliveryBackoff times retries after a 4xx or a connection failure: 5 s
// doubling, at most one hour.
var DeliveryBackoff = jobs.ExponentialBackoff(5*time.Second, time.Hour)

// MaxAttachmentBytes is the document size limit, which attachments share.
const MaxAttachmentBytes = 100 << 20

// Service runs the email use cases.
type Service struct {
	store Store
	// committer writes sends and delivery outcomes.
	committer writes.Committer
	sender    Sender
	fetch     Fetcher
	urls      URLChecker
	domain    string
	// mailbox is the sandbox mailbox, when emails go there.
	mailbox Mailbox
	// inbox, parser and auth receive email; nil inbox: receiving is off.
	inbox   Inbox
	parser  Parser
	auth    Authenticator
	inbound InboundLimits
	// composer writes the sandbox's simulated received email.
	composer Composer
	now      func() time.Time
	log      *slog.Logger
}

// Deps are what the email use cases are built from.
type Deps struct {
	Store Store
	// Committer writes what sends and deliveries decide.
	Committer writes.Committer
	Sender    Sender
	// Fetcher downloads attachments; URLs checks them when a send is
	// accepted.
	Fetcher Fetcher
	URLs    URLChecker
	// ServiceDomain is the service's own email domain (EMAIL_DOMAIN),
	// on which every account may create addresses.
	ServiceDomain string
	// Mailbox, when the Sender is the sandbox mailbox, lists what it
	// kept; nil when emails go to a relay.
	Mailbox Mailbox
	// Inbox stores received email and threads; Parser and Authenticator
	// read and check what the SMTP listener received; InboundLimits
	// bound it (DefaultInboundLimits where zero).
	Inbox         Inbox
	Parser        Parser
	Authenticator Authenticator
	InboundLimits InboundLimits
	// Composer writes the sandbox's simulated received email; without
	// it, only whole messages are simulated.
	Composer Composer
	Now      func() time.Time
	Logger   *slog.Logger
}

// NewService builds the email use cases.
func NewService(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	clock := d.Now
	now := func() time.Time { return clock().UTC().Truncate(time.Microsecond) }
	domain, _ := account.NormalizeDomain(d.ServiceDomain)
	if d.InboundLimits == (InboundLimits{}) {
		d.InboundLimits = DefaultInboundLimits
	}
	return &Service{
		store: d.Store, committer: d.Committer, sender: d.Sender, fetch: d.Fetcher, urls: d.URLs, domain: domain, mailbox: d.Mailbox,
		inbox: d.Inbox, parser: d.Parser, auth: d.Authenticator, inbound: d.InboundLimits, composer: d.Composer, now: now, log: d.Logger,
	}
}

// ServiceDomain is the service's own email domain.
func (s *Service) ServiceDomain() string { return s.domain }

// CreateAddress creates local@domain for an account. The local part
// follows email.NormalizeLocalPart (400 in the interface); the domain must
// be the service domain or a custom domain authorised for the account
// (Forbidden otherwise); an address that exists on any account is a
// Conflict.
func (s *Service) CreateAddress(ctx context.Context, accountID, local, domainName string) (account.EmailAddress, error) {
	var p failure.Problems
	l, err := email.NormalizeLocalPart(local, "address")
	if err != nil {
		p = append(p, failure.As(err).Fields...)
	}
	d, err := account.NormalizeDomain(domainName)
	if err != nil {
		p.Add("value_error", "domain_name must be a DNS name such as "+s.domainExample(), "domain_name")
	}
	if err := p.Err(); err != nil {
		return account.EmailAddress{}, err
	}
	addr := account.EmailAddress{ID: ident.New(ident.Email), AccountID: accountID, LocalPart: l, Domain: d, CreatedAt: s.now()}
	err = s.store.Repos().InsertEmailAddress(ctx, addr, d != s.domain)
	if failure.Is(err, failure.KindNotFound) {
		return account.EmailAddress{}, failure.Forbidden("domain_not_authorized", "the domain "+d+" is not authorised for this account; use "+s.domainExample()+" or ask the operator to add a custom domain")
	}
	if failure.Is(err, failure.KindConflict) {
		return account.EmailAddress{}, failure.Conflict("email_exists", "the email address "+addr.Address()+" already exists")
	}
	if err != nil {
		return account.EmailAddress{}, err
	}
	return addr, nil
}

func (s *Service) domainExample() string {
	if s.domain == "" {
		return "mail.example.com"
	}
	return s.domain
}

// SendInput is a send request.
type SendInput struct {
	AccountID string
	// SenderAddress is an address of the account, with a display name
	// where given ("Acme Support" <support@…>).
	SenderAddress string
	// RecipientAddress is the To recipient, or several separated by
	// commas, each an address or a display name with an address;
	// Recipients, when not nil, lists them one a value instead.
	RecipientAddress string
	Recipients       []string
	Subject          string
	Body             string
	// Headers is the request's headers object as decoded JSON (values are
	// strings or lists of strings).
	Headers       map[string]any
	AttachmentURI string
	// Idempotency, when set, records the answer to the send under its
	// Idempotency-Key in the transaction that stores the email.
	Idempotency *idempotency.Completion[email.Email]
}

// deliverPayload is the delivery job's payload.
type deliverPayload struct {
	EmailID string `json:"email_id"`
}

// Send checks a send, stores the email and queues its delivery in one
// transaction. The sender must be an address of the account (Forbidden,
// code sender_not_permitted, otherwise). The email joins the thread of the
// email its In-Reply-To or References header names, where the account has
// it, else it starts a thread.
func (s *Service) Send(ctx context.Context, in SendInput) (email.Email, error) {
	return s.send(ctx, in, "")
}

// send is Send into thread (found from the headers when empty).
func (s *Service) send(ctx context.Context, in SendInput, thread string) (email.Email, error) {
	var (
		p    failure.Problems
		from email.Mailbox
	)
	if email.CheckLine(&p, in.SenderAddress, "sender_address") {
		var err error
		if from, err = email.ParseMailbox(in.SenderAddress); err != nil {
			p.Add("value_error", "must be an address of the account such as support@example.com, or Name <support@example.com>", "sender_address")
		}
	}
	values, isList := []string{in.RecipientAddress}, false
	if in.Recipients != nil {
		values, isList = in.Recipients, true
	}
	to := email.CheckMailboxes(&p, values, isList, "recipient_address")
	subject := strings.TrimSpace(in.Subject)
	if email.CheckLine(&p, in.Subject, "subject") {
		switch n := utf8.RuneCountInString(subject); {
		case n == 0:
			p.Add("string_too_short", "subject must not be empty", "subject")
		case n > email.MaxSubjectLength:
			p.Add("string_too_long", "subject must be at most 998 characters", "subject")
		}
	}
	if strings.TrimSpace(in.Body) == "" {
		p.Add("string_too_short", "body must not be empty", "body")
	} else if !utf8.ValidString(in.Body) {
		p.Add("value_error", "body must be valid UTF-8", "body")
	}
	headers, err := email.ParseHeaders(in.Headers, "headers")
	if err != nil {
		p = append(p, failure.As(err).Fields...)
	}
	if n := len(to) + len(headers.Cc) + len(headers.Bcc); n > email.MaxRecipients {
		field := "headers"
		if len(to) > email.MaxRecipients {
			field = "recipient_address"
		}
		p.Add("value_error", fmt.Sprintf("an email may have at most %d recipients (to, cc and bcc), not %d", email.MaxRecipients, n), field)
	}
	if in.AttachmentURI != "" {
		s.checkAttachmentURI(ctx, &p, in.AttachmentURI)
	}
	if err := p.Err(); err != nil {
		return email.Email{}, err
	}

	sender, _ := email.ParseAddress(from.Address)
	addr, err := s.senderAddress(ctx, strings.ToLower(sender.Local), sender.Domain)
	if failure.Is(err, failure.KindNotFound) || (err == nil && addr.AccountID != in.AccountID) {
		return email.Email{}, failure.Forbidden("sender_not_permitted", "the sender address "+from.Address+" is not an address of this account")
	}
	if err != nil {
		return email.Email{}, err
	}
	now := s.now()
	id := ident.New(ident.Email)
	e := email.Email{
		ID: id, AccountID: in.AccountID, From: addr.Address(), FromName: from.Name, To: to[0].Address,
		Cc: headers.Cc, Bcc: headers.Bcc, ReplyTo: headers.ReplyTo,
		Subject: subject, Body: in.Body, HTML: email.LooksLikeHTML(in.Body), Headers: headers.Extra,
		AttachmentURI: in.AttachmentURI, MessageID: email.SentMessageID(id, addr.Domain),
		Status: email.Queued, CreatedAt: now, UpdatedAt: now,
	}
	if len(to) > 1 || to[0].Name != "" {
		e.ToList = to
	}
	e.Direction, e.Mailbox = email.Outbound, strings.ToLower(addr.Address())
	e.InReplyTo, e.References = headerValue(e.Headers, "In-Reply-To"), email.MessageIDs(headerValue(e.Headers, "References"))
	if e.ThreadID = thread; thread == "" {
		if e.ThreadID, err = s.sentThread(ctx, e); err != nil {
			return email.Email{}, err
		}
	}
	payload, _ := json.Marshal(deliverPayload{EmailID: e.ID})
	// The job needs no unique key: the email is new, and Work leaves an
	// email that is no longer queued alone.
	err = s.committer.Commit(ctx, writes.Batch{
		Emails: []email.Email{e},
		Jobs: []jobs.EnqueueParams{{
			Kind: DeliverKind, Payload: payload, MaxAttempts: DeliveryAttempts,
			AccountID: e.AccountID, EndpointKey: EndpointKey(e),
		}},
		Answers: writes.Answering(in.Idempotency, e),
	})
	if err != nil {
		return email.Email{}, err
	}
	return e, nil
}

// sentThread is the thread of the account's email that e answers (by its
// In-Reply-To and References), or a new one.
func (s *Service) sentThread(ctx context.Context, e email.Email) (string, error) {
	links := e.References
	if e.InReplyTo != "" {
		links = append(email.MessageIDs(e.InReplyTo), links...)
	}
	if len(links) > 0 && s.inbox != nil {
		t, err := s.inbox.ThreadByMessageIDs(ctx, e.AccountID, links)
		if t != "" || err != nil {
			return t, err
		}
	}
	return email.StartedThreadID(e.ID), nil
}

// headerValue is the value of the extra header name, or "".
func headerValue(hs []email.Header, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// EndpointKey is what a delivery calls besides the SMTP relay, for the
// runner's per-endpoint limit and circuit breaker: the account's
// attachment URLs, which the delivery fetches and which may hang. The
// relay is one endpoint shared by every account, whose slowness no
// account causes (and its connection pool bounds); an email without an
// attachment has no key.
func EndpointKey(e email.Email) string {
	if e.AttachmentURI == "" {
		return ""
	}
	return "email-attachment:" + e.AccountID
}

// senderAddress finds an address by local part and domain.
func (s *Service) senderAddress(ctx context.Context, local, domain string) (account.EmailAddress, error) {
	return s.store.Repos().EmailAddressByAddress(ctx, local, domain)
}

func (s *Service) checkAttachmentURI(ctx context.Context, p *failure.Problems, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.Add("url_parsing", "attachment_uri must be an http or https URL", "attachment_uri")
		return
	}
	if s.urls != nil {
		if err := s.urls.CheckURL(ctx, raw); err != nil {
			p.Add("url_forbidden", "the attachment URL is not allowed: "+err.Error(), "attachment_uri")
		}
	}
}

// Email reads an email of an account.
func (s *Service) Email(ctx context.Context, accountID, id string) (email.Email, error) {
	if !ident.Valid(ident.Email, id) {
		return email.Email{}, failure.NotFound("email")
	}
	return s.store.Repos().Email(ctx, accountID, id)
}

// Work delivers one queued email: the delivery job's handler. It is
// idempotent: an email that is no longer queued is left alone. (A crash
// between the relay's 250 and the status update sends the email again on
// the next attempt, with the same Message-ID, which receivers use to
// recognise the duplicate.)
func (s *Service) Work(ctx context.Context, job jobs.Job) error {
	var p deliverPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return jobs.Permanent(fmt.Errorf("email delivery payload: %w", err))
	}
	r := s.store.Repos()
	e, err := r.EmailByID(ctx, p.EmailID)
	if failure.Is(err, failure.KindNotFound) {
		return nil // deleted with its account
	}
	if err != nil {
		return err
	}
	if e.Status != email.Queued {
		return nil
	}
	e.Attempts = job.Attempt
	out, err := s.outgoing(ctx, e)
	var receipt Receipt
	if err == nil {
		receipt, err = s.sender.Send(ctx, out)
	}
	if err == nil {
		at := s.now()
		e.Status, e.Reply, e.FailureCode, e.SentAt, e.UpdatedAt = email.Sent, receipt.Reply, "", &at, at
		return s.recordOutcome(ctx, e, event.EmailSent)
	}

	var (
		smtpErr  *SMTPError
		fetchErr *FetchError
	)
	last := job.Attempt >= job.MaxAttempts
	switch {
	case errors.As(err, &smtpErr) && !smtpErr.Temporary():
		return s.fail(ctx, e, "rejected", smtpErr.Reply, err)
	case errors.As(err, &fetchErr):
		return s.fail(ctx, e, fetchErr.Code, fetchErr.Message, err)
	case errors.Is(err, ErrUnsendable):
		return s.fail(ctx, e, "unsendable", err.Error(), err)
	case errors.Is(err, ErrAttachmentTooLarge):
		return s.fail(ctx, e, "attachment_too_large", fmt.Sprintf("attachments may be at most %d MB", MaxAttachmentBytes>>20), err)
	case last:
		return s.fail(ctx, e, "retries_exhausted", "gave up after "+fmt.Sprint(job.Attempt)+" attempts: "+replyOf(err), err)
	}
	// A 4xx or a connection failure: keep the email queued, note why, and
	// retry with the kind's back-off.
	e.Reply, e.UpdatedAt = replyOf(err), s.now()
	if uerr := s.recordOutcome(ctx, e, ""); uerr != nil {
		return errors.Join(err, uerr)
	}
	return err
}

// replyOf is the SMTP reply of err, or its text.
func replyOf(err error) string {
	var smtpErr *SMTPError
	if errors.As(err, &smtpErr) {
		return smtpErr.Reply
	}
	return err.Error()
}

// fail marks the email failed with the reply, and stops the job.
func (s *Service) fail(ctx context.Context, e email.Email, code, reply string, cause error) error {
	e.Status, e.FailureCode, e.Reply, e.UpdatedAt = email.Failed, code, reply, s.now()
	if err := s.recordOutcome(ctx, e, event.EmailFailed); err != nil {
		return err
	}
	return jobs.Permanent(cause)
}

// recordOutcome commits e's delivery, to e while it is still queued,
// with its event of type typ (none when typ is empty: a retry).
func (s *Service) recordOutcome(ctx context.Context, e email.Email, typ event.Type) error {
	b := writes.Batch{EmailOutcomes: []email.Email{e}}
	if typ != "" {
		b.Events = []event.Event{s.outcomeEvent(typ, e, nil)}
	}
	return s.committer.Commit(ctx, b)
}

// outgoing builds what the Sender gets, fetching the attachment.
func (s *Service) outgoing(ctx context.Context, e email.Email) (Outgoing, error) {
	out := Outgoing{
		AccountID: e.AccountID, MessageID: e.MessageID, From: e.From, FromName: e.FromName, To: e.AllTo(), Cc: e.Cc, Bcc: e.Bcc, ReplyTo: e.ReplyTo,
		Subject: e.Subject, Text: e.Body, Headers: e.Headers, Date: e.CreatedAt,
	}
	if e.HTML {
		out.HTML, out.Text = e.Body, email.TextFromHTML(e.Body)
	}
	if e.AttachmentURI != "" {
		if s.fetch == nil {
			return Outgoing{}, &FetchError{Code: "attachment_unavailable", Message: "attachments are not configured"}
		}
		att, err := s.fetch.Fetch(ctx, e.AttachmentURI, MaxAttachmentBytes)
		if err != nil {
			return Outgoing{}, err
		}
		if att.Name = cleanName(att.Name); att.Name == "" {
			att.Name = attachmentName(e.AttachmentURI)
		}
		out.Attachment = &att
	}
	return out, nil
}

// attachmentName is the last path segment of the URL, or "attachment".
func attachmentName(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if name := cleanName(u.Path); name != "" {
			return name
		}
	}
	return "attachment"
}

// cleanName keeps the last path element of a file name, without control
// characters, at most 200 bytes.
func cleanName(name string) string {
	name = path.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	if name == "." || name == "/" || name == ".." {
		return ""
	}
	if len(name) > 200 {
		name = name[:200]
	}
	return strings.TrimSpace(name)
}
