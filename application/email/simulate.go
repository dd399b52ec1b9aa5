package email

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
)

// SimulatedEmail is an email the sandbox delivers to one of an account's
// addresses as if a mail server had sent it: given as parts (From,
// Subject, Text, HTML, InReplyTo, an attachment), which are written as a
// message the way a Sender writes one, or whole (Raw).
type SimulatedEmail struct {
	AccountID string
	// To is the receiving address, one of the account's.
	To string
	// From is the sender: an address, or a display name and an address.
	From    string
	Subject string
	Text    string
	HTML    string
	// InReplyTo is the email it answers: an email of the account (eml_…)
	// or a Message-ID (<…>); the message then carries In-Reply-To and
	// References as a mail client writes them.
	InReplyTo  string
	Attachment *Attachment
	// Raw, when set, is the whole message (RFC 5322) instead of the
	// parts, which must then be empty but From (the envelope sender).
	Raw []byte
}

// Simulate delivers a simulated email through the path received email
// takes: it is spooled with its receive job in one commit, and received
// at once (parsed, threaded, stored with its email.received event; the
// job then finds it received). Its authentication records that nothing
// was checked. The receiving address must be the account's (NotFound
// otherwise), as must an email InReplyTo names.
func (s *Service) Simulate(ctx context.Context, in SimulatedEmail) (email.Email, error) {
	if s.inbox == nil || s.parser == nil {
		return email.Email{}, errInboxOff
	}
	var p failure.Problems
	var from email.Mailbox
	if in.From != "" || in.Raw == nil {
		if email.CheckLine(&p, in.From, "from") {
			var err error
			if from, err = email.ParseMailbox(in.From); err != nil {
				p.Add("value_error", "must be an email address such as someone@example.com, or Name <someone@example.com>", "from")
			}
		}
	}
	if in.Raw != nil {
		for field, given := range map[string]bool{"subject": in.Subject != "", "text": in.Text != "", "html": in.HTML != "",
			"in_reply_to": in.InReplyTo != "", "attachment": in.Attachment != nil} {
			if given {
				p.Add("extra_forbidden", "a raw message is whole: give "+field+" inside it, or give the parts without raw", field)
			}
		}
		if len(in.Raw) == 0 {
			p.Add("string_too_short", "raw must not be empty", "raw")
		}
	} else {
		email.CheckLine(&p, in.Subject, "subject")
		if strings.TrimSpace(in.Text) == "" && strings.TrimSpace(in.HTML) == "" {
			p.Add("missing", "give text or html", "text")
		}
		for field, v := range map[string]string{"text": in.Text, "html": in.HTML} {
			if !utf8.ValidString(v) {
				p.Add("value_error", field+" must be valid UTF-8", field)
			}
		}
	}
	if email.CheckLine(&p, in.To, "to") {
		email.CheckAddress(&p, in.To, "to")
	}
	if err := p.Err(); err != nil {
		return email.Email{}, err
	}
	mailbox, err := s.OwnMailbox(ctx, in.AccountID, in.To)
	if err != nil {
		return email.Email{}, err
	}
	raw := in.Raw
	if raw == nil {
		if raw, err = s.compose(ctx, in, from, mailbox); err != nil {
			return email.Email{}, err
		}
	}
	sp, err := s.Spool(ctx, email.Spooled{
		Helo: "sandbox", MailFrom: from.Address, Raw: raw, Simulated: true,
		Recipients: []email.SpooledRecipient{{Address: mailbox, AccountID: in.AccountID}},
	})
	if err != nil {
		return email.Email{}, err
	}
	if err := s.receive(ctx, sp); err != nil {
		return email.Email{}, err
	}
	return s.Email(ctx, in.AccountID, receivedEmailID(sp.ID, 0))
}

// compose writes the parts of a simulated email as a message.
func (s *Service) compose(ctx context.Context, in SimulatedEmail, from email.Mailbox, mailbox string) ([]byte, error) {
	if s.composer == nil {
		return nil, failure.Invalid(failure.Field("value_error", "this server writes no messages: give the whole message as raw", "raw"))
	}
	domain := "sandbox.invalid"
	if a, err := email.ParseAddress(from.Address); err == nil {
		domain = a.Domain
	}
	out := Outgoing{
		AccountID: in.AccountID, MessageID: "<" + ident.New(ident.Spooled) + "@" + domain + ">", From: from.Address, FromName: from.Name,
		To: []email.Mailbox{{Address: mailbox}}, Subject: strings.TrimSpace(in.Subject), Text: in.Text, HTML: in.HTML,
		Attachment: in.Attachment, Date: s.now(),
	}
	if out.Text == "" {
		out.Text = email.TextFromHTML(in.HTML)
	}
	if in.InReplyTo != "" {
		var inReplyTo string
		var refs []string
		switch {
		case ident.Valid(ident.Email, in.InReplyTo):
			orig, err := s.Email(ctx, in.AccountID, in.InReplyTo)
			if err != nil {
				return nil, err
			}
			inReplyTo, refs = orig.MessageID, orig.References
		default:
			ids := email.MessageIDs(in.InReplyTo)
			if len(ids) != 1 {
				return nil, failure.Invalid(failure.Field("value_error", "in_reply_to must be an email of the account (eml_…) or one Message-ID (<…>)", "in_reply_to"))
			}
			inReplyTo = ids[0]
		}
		out.Headers = []email.Header{{Name: "In-Reply-To", Value: inReplyTo},
			{Name: "References", Value: referencesValue(email.ReplyReferences(refs, inReplyTo, MaxReferences))}}
	}
	raw, err := s.composer.Compose(out)
	if err != nil {
		return nil, failure.Invalid(failure.Field("value_error", "the email cannot be written: "+err.Error(), "from"))
	}
	return raw, nil
}
