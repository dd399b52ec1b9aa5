package messaging

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// RecipientResolver turns the recipient a send names into the address the
// conversation with that user is kept under. On Telegram a user may be
// named by chat id, @username or (once they shared it) phone number, while
// the bot addresses them by chat id.
type RecipientResolver interface {
	ResolveRecipient(ctx context.Context, n account.Number, to string) (string, error)
}

// resolveRecipient applies the resolver when there is one; a contact id
// names the user of the contact's thread with the agent number; a WhatsApp
// user id names the thread of its contact with the agent number (the
// thread of their phone number, when they wrote from one) when there is
// no thread kept under the user id itself.
func (s *Service) resolveRecipient(ctx context.Context, n account.Number, to string) (string, error) {
	if ident.Valid(ident.Contact, to) {
		return s.contactThread(ctx, n, to)
	}
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
	if t, ok := contactThreadWith(threads, n); ok {
		return t.Contact, nil
	}
	return userID, nil
}

// contactThread is the user address of the account's contact's individual
// thread with the agent number: NotFound when the contact is not the
// account's, a validation error naming to when the contact has never
// written to that number on its service.
func (s *Service) contactThread(ctx context.Context, n account.Number, contactID string) (string, error) {
	r := s.store.Repos()
	if _, err := r.Contact(ctx, n.AccountID, contactID); err != nil {
		return "", err
	}
	threads, err := r.ContactThreads(ctx, n.AccountID, contactID)
	if err != nil {
		return "", err
	}
	if t, ok := contactThreadWith(threads, n); ok {
		return t.Contact, nil
	}
	return "", failure.Invalid(failure.Field("contact_unreachable",
		"contact "+contactID+" has no conversation with "+n.Number+" on "+string(n.Service)+"; the person must write to that number first", "to"))
}

// contactThreadWith is the most recent of a contact's threads (threads
// come most recent first) that is an individual thread of agent number n.
func contactThreadWith(threads []messaging.Thread, n account.Number) (messaging.Thread, bool) {
	for _, t := range threads {
		if t.Type == messaging.Individual && t.Service == n.Service && t.AgentNumber == n.Number {
			return t, true
		}
	}
	return messaging.Thread{}, false
}
