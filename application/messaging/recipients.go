package messaging

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// RecipientResolver turns the recipient a send names into the address the
// conversation with that user is kept under. On Telegram a user may be
// named by chat id, @username or (once they shared it) phone number, while
// the bot addresses them by chat id.
type RecipientResolver interface {
	ResolveRecipient(ctx context.Context, n account.Number, to string) (string, error)
}

// resolveRecipient applies the resolver when there is one; a WhatsApp
// user id names the thread of its contact with the agent number (the
// thread of their phone number, when they wrote from one) when there is
// no thread kept under the user id itself.
func (s *Service) resolveRecipient(ctx context.Context, n account.Number, to string) (string, error) {
	if n.Service == account.WhatsApp && messaging.ValidWhatsAppUserID(to) {
		return s.userIDThread(ctx, n, to)
	}
	if s.recipients == nil {
		return to, nil
	}
	return s.recipients.ResolveRecipient(ctx, n, to)
}

// userIDThread is the user address of the thread of the WhatsApp user id
// with the agent number: the user id's own thread, else a thread of the
// contact that has the user id, else the user id (a send then finds no
// conversation).
func (s *Service) userIDThread(ctx context.Context, n account.Number, userID string) (string, error) {
	r := s.store.Repos()
	_, err := r.IndividualThread(ctx, n.AccountID, n.Service, n.Number, userID)
	if err == nil || !failure.Is(err, failure.KindNotFound) {
		return userID, err
	}
	c, err := r.ContactByIdentity(ctx, n.AccountID, messaging.Identity{WhatsAppUserID: userID})
	if failure.Is(err, failure.KindNotFound) {
		return userID, nil
	}
	if err != nil {
		return "", err
	}
	threads, err := r.ContactThreads(ctx, n.AccountID, c.ID)
	if err != nil {
		return "", err
	}
	for _, t := range threads {
		if t.Type == messaging.Individual && t.Service == n.Service && t.AgentNumber == n.Number {
			return t.Contact, nil
		}
	}
	return userID, nil
}
