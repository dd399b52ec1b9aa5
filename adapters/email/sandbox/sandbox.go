// Package sandbox is the email Sender used when no SMTP relay is
// configured (make run, tests): a mailbox that keeps what would have been
// sent, in memory, and answers like a relay that accepted it.
package sandbox

import (
	"context"
	"log/slog"
	"sync"

	appemail "github.com/switchboard-dev/switchboard/application/email"
)

// Capacity is how many emails the mailbox keeps; older ones are dropped.
const Capacity = 10000

// Reply is what the mailbox answers for every email.
const Reply = "250 2.0.0 Ok: kept in the sandbox mailbox, not sent"

// Mailbox stores emails instead of sending them. It is safe for
// concurrent use.
type Mailbox struct {
	log  *slog.Logger
	mu   sync.Mutex
	sent []appemail.Outgoing
}

var _ appemail.Sender = (*Mailbox)(nil)

// New returns an empty mailbox; log, when not nil, gets one line per email.
func New(log *slog.Logger) *Mailbox { return &Mailbox{log: log} }

// Send keeps the email.
func (m *Mailbox) Send(ctx context.Context, out appemail.Outgoing) (appemail.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return appemail.Receipt{}, err
	}
	m.mu.Lock()
	if len(m.sent) >= Capacity {
		m.sent = append(m.sent[:0], m.sent[1:]...)
	}
	m.sent = append(m.sent, out)
	m.mu.Unlock()
	if m.log != nil {
		m.log.InfoContext(ctx, "sandbox email", "message_id", out.MessageID, "from", out.From, "to", out.To, "subject", out.Subject)
	}
	return appemail.Receipt{Reply: Reply}, nil
}

// Sent returns the kept emails, oldest first.
func (m *Mailbox) Sent() []appemail.Outgoing {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]appemail.Outgoing(nil), m.sent...)
}

var _ appemail.Mailbox = (*Mailbox)(nil)

// Kept returns the account's emails the mailbox holds, newest first.
func (m *Mailbox) Kept(ctx context.Context, accountID string) ([]appemail.Outgoing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]appemail.Outgoing, 0)
	for i := len(m.sent) - 1; i >= 0; i-- {
		if m.sent[i].AccountID == accountID {
			out = append(out, m.sent[i])
		}
	}
	return out, nil
}
