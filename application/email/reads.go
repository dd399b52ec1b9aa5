package email

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/email"
)

// Page sizes of the email listings.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// ClampPage turns a requested page size into one within the limits.
func ClampPage(n int) int {
	if n <= 0 {
		return DefaultPageSize
	}
	return min(n, MaxPageSize)
}

// Emails returns one page of the account's emails, newest first, after
// the position after when it is set, and whether more follow.
func (s *Service) Emails(ctx context.Context, accountID string, after *EmailCursor, limit int) ([]email.Email, bool, error) {
	limit = ClampPage(limit)
	rows, err := s.store.Repos().Emails(ctx, accountID, after, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(rows) > limit {
		return rows[:limit], true, nil
	}
	return rows, false, nil
}

// SandboxMailbox is a page of what the sandbox mailbox kept of an
// account's emails.
type SandboxMailbox struct {
	// Enabled is false when emails go to a relay: there is no mailbox.
	Enabled bool
	Emails  []KeptEmail
	// Total is how many of the account's emails the mailbox holds.
	Total int
}

// Mailbox returns the account's emails the sandbox mailbox kept, newest
// first, from offset, at most limit (ClampPage). The mailbox is in the
// database: every replica shows the same one.
func (s *Service) Mailbox(ctx context.Context, accountID string, offset, limit int) (SandboxMailbox, error) {
	if s.mailbox == nil {
		return SandboxMailbox{}, nil
	}
	page, err := s.mailbox.Kept(ctx, accountID, max(offset, 0), ClampPage(limit))
	if err != nil {
		return SandboxMailbox{}, err
	}
	if page.Emails == nil {
		page.Emails = []KeptEmail{}
	}
	return SandboxMailbox{Enabled: true, Emails: page.Emails, Total: page.Total}, nil
}
