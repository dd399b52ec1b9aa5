// Package sandbox is the email Sender used when no SMTP relay is
// configured (make run, tests): it keeps what would have been sent in the
// sandbox mailbox, which lives in the database, and answers like a relay
// that accepted it.
package sandbox

import (
	"context"
	"log/slog"

	appemail "github.com/switchboard-dev/switchboard/application/email"
)

// Reply is what the sender answers for every email.
const Reply = "250 2.0.0 Ok: kept in the sandbox mailbox, not sent"

// Sender keeps emails in the sandbox mailbox instead of sending them. It
// is safe for concurrent use.
type Sender struct {
	mailbox appemail.Mailbox
	limits  appemail.MailboxLimits
	log     *slog.Logger
}

var _ appemail.Sender = (*Sender)(nil)

// New returns a Sender that keeps emails in mailbox within limits
// (appemail.MailboxLimits.Check must accept them); log, when not nil,
// gets one line per email.
func New(mailbox appemail.Mailbox, limits appemail.MailboxLimits, log *slog.Logger) *Sender {
	return &Sender{mailbox: mailbox, limits: limits, log: log}
}

// Send keeps the email (appemail.KeptFrom: the attachment as its name,
// type, size and SHA-256, long parts cut). Errors: the mailbox's, which
// are transient.
func (s *Sender) Send(ctx context.Context, out appemail.Outgoing) (appemail.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return appemail.Receipt{}, err
	}
	if err := s.mailbox.Keep(ctx, appemail.KeptFrom(out, s.limits.BodyBytes), s.limits); err != nil {
		return appemail.Receipt{}, err
	}
	if s.log != nil {
		s.log.InfoContext(ctx, "sandbox email", "message_id", out.MessageID, "from", out.From, "to", out.To, "subject", out.Subject)
	}
	return appemail.Receipt{Reply: Reply}, nil
}
