package email

import (
	"context"
	"strings"

	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// errInboxOff answers the mailbox reads when the service has no inbox.
var errInboxOff = failure.NotFound("mailbox")

// OwnMailbox is address as the mailbox of one of the account's addresses
// (lower-case); an address the account does not own is NotFound.
func (s *Service) OwnMailbox(ctx context.Context, accountID, address string) (string, error) {
	rcpt, err := s.Recipient(ctx, address)
	if err != nil || rcpt.AccountID != accountID {
		if err == nil || failure.Is(err, failure.KindNotFound) {
			return "", failure.NotFound("mailbox")
		}
		return "", err
	}
	return strings.ToLower(rcpt.Address), nil
}

// MailboxEmails returns one page of the emails of one of the account's
// addresses, received and sent, newest first, after the position after
// when it is set, and whether more follow. An address the account does
// not own is NotFound.
func (s *Service) MailboxEmails(ctx context.Context, accountID, address string, after *EmailCursor, limit int) ([]email.Email, bool, error) {
	if s.inbox == nil {
		return nil, false, errInboxOff
	}
	mailbox, err := s.OwnMailbox(ctx, accountID, address)
	if err != nil {
		return nil, false, err
	}
	limit = ClampPage(limit)
	rows, err := s.inbox.MailboxEmails(ctx, accountID, mailbox, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// MaxThreadEmails bounds the emails a thread read returns: its oldest.
const MaxThreadEmails = 200

// ThreadEmails reads the account's email thread threadID (eth_…), oldest
// first, at most MaxThreadEmails; a thread of another account, or none,
// is NotFound.
func (s *Service) ThreadEmails(ctx context.Context, accountID, threadID string) ([]email.Email, error) {
	if s.inbox == nil || !ident.Valid(ident.EmailThread, threadID) {
		return nil, failure.NotFound("email thread")
	}
	list, err := s.inbox.ThreadEmails(ctx, accountID, threadID, MaxThreadEmails)
	if err == nil && len(list) == 0 {
		return nil, failure.NotFound("email thread")
	}
	return list, err
}

// EmailWithAttachments reads an email of an account with its
// attachments' metadata.
func (s *Service) EmailWithAttachments(ctx context.Context, accountID, id string) (email.Email, error) {
	e, err := s.Email(ctx, accountID, id)
	if err != nil || s.inbox == nil || e.Direction != email.Inbound {
		return e, err
	}
	found, err := s.inbox.Attachments(ctx, accountID, []string{id})
	e.Attachments = found[id]
	return e, err
}

// EmailAttachments lists the attachments of the account's emails
// emailIDs, without their content, in one read, by email: an email
// without any (a sent email, an email of another account) is absent.
func (s *Service) EmailAttachments(ctx context.Context, accountID string, emailIDs []string) (map[string][]email.Attachment, error) {
	valid := make([]string, 0, len(emailIDs))
	for _, id := range emailIDs {
		if ident.Valid(ident.Email, id) {
			valid = append(valid, id)
		}
	}
	if s.inbox == nil || len(valid) == 0 {
		return map[string][]email.Attachment{}, nil
	}
	return s.inbox.Attachments(ctx, accountID, valid)
}

// Attachment reads an attachment of an account's email with its content;
// one whose content a cap dropped is NotFound with code
// attachment_not_stored.
func (s *Service) Attachment(ctx context.Context, accountID, emailID, id string) (email.Attachment, error) {
	if s.inbox == nil || !ident.Valid(ident.Email, emailID) || !ident.Valid(ident.Attachment, id) {
		return email.Attachment{}, failure.NotFound("attachment")
	}
	a, err := s.inbox.Attachment(ctx, accountID, emailID, id)
	if err != nil {
		return email.Attachment{}, err
	}
	if !a.Stored {
		return email.Attachment{}, &failure.Error{Kind: failure.KindNotFound, Code: "attachment_not_stored",
			Message: "the attachment's content was not kept: it was past the per-email or per-account attachment cap"}
	}
	return a, nil
}

// Raw reads the message an inbound email was received as, whole.
func (s *Service) Raw(ctx context.Context, accountID, emailID string) ([]byte, error) {
	e, err := s.Email(ctx, accountID, emailID)
	if err != nil {
		return nil, err
	}
	if e.RawID == "" || s.inbox == nil {
		return nil, failure.NotFound("raw email")
	}
	sp, err := s.inbox.Spooled(ctx, e.RawID)
	if err != nil {
		return nil, err
	}
	return sp.Raw, nil
}

// ReplyInput is a reply to an email of the account.
type ReplyInput struct {
	AccountID string
	EmailID   string
	Body      string
	// Headers are extra headers as in SendInput (cc, bcc, reply-to, X-…);
	// In-Reply-To and References are the reply's own.
	Headers       map[string]any
	AttachmentURI string
	Idempotency   *idempotency.Completion[email.Email]
}

// Reply answers an email of the account: from the mailbox it belongs to,
// to its Reply-To (else its sender, with the sender's display name) for a
// received email or to its To recipients for a sent one (from the sent
// one's display name), with "Re: " before its subject, In-Reply-To
// its Message-ID and References its References followed by its
// Message-ID, in its thread. An email of another account is NotFound.
func (s *Service) Reply(ctx context.Context, in ReplyInput) (email.Email, error) {
	orig, err := s.Email(ctx, in.AccountID, in.EmailID)
	if err != nil {
		return email.Email{}, err
	}
	from, to := email.Mailbox{Address: orig.Mailbox}, email.FormatList(orig.AllTo())
	if orig.Direction == email.Inbound {
		to = email.Mailbox{Name: orig.FromName, Address: orig.From}.String()
		if len(orig.ReplyTo) > 0 {
			to = strings.Join(orig.ReplyTo, ", ")
		}
	} else {
		from.Name = orig.FromName
	}
	headers := make(map[string]any, len(in.Headers)+2)
	for k, v := range in.Headers {
		switch strings.ToLower(k) {
		case "in-reply-to", "references":
			continue
		}
		headers[k] = v
	}
	refs := orig.References
	if len(refs) == 0 && orig.InReplyTo != "" {
		refs = []string{orig.InReplyTo}
	}
	if orig.MessageID != "" {
		headers["In-Reply-To"] = orig.MessageID
		headers["References"] = referencesValue(email.ReplyReferences(refs, orig.MessageID, MaxReferences))
	}
	return s.send(ctx, SendInput{
		AccountID: in.AccountID, SenderAddress: from.String(), RecipientAddress: to, Subject: email.ReplySubject(orig.Subject),
		Body: in.Body, Headers: headers, AttachmentURI: in.AttachmentURI, Idempotency: in.Idempotency,
	}, orig.ThreadID)
}

// referencesValue joins ids with spaces within one header line
// (email.MaxHeaderValue), dropping the oldest ids after the first (the
// thread's root) until it fits.
func referencesValue(ids []string) string {
	for len(ids) > 2 && len(strings.Join(ids, " ")) > email.MaxHeaderValue {
		ids = append(ids[:1], ids[2:]...)
	}
	return strings.Join(ids, " ")
}
