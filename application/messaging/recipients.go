package messaging

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/account"
)

// RecipientResolver turns the recipient a send names into the address the
// conversation with that user is kept under. On Telegram a user may be
// named by chat id, @username or (once they shared it) phone number, while
// the bot addresses them by chat id.
type RecipientResolver interface {
	ResolveRecipient(ctx context.Context, n account.Number, to string) (string, error)
}

// resolveRecipient applies the resolver when there is one.
func (s *Service) resolveRecipient(ctx context.Context, n account.Number, to string) (string, error) {
	if s.recipients == nil {
		return to, nil
	}
	return s.recipients.ResolveRecipient(ctx, n, to)
}
