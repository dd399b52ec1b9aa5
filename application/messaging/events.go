package messaging

import (
	"context"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// recordMessageEvent appends a message event to the account's log in the
// caller's transaction, so the change and its event commit together.
func (s *Service) recordMessageEvent(ctx context.Context, r Repos, typ event.Type, m messaging.Message, tt messaging.ThreadType) error {
	id := ident.New(ident.Event)
	now := s.now().UTC()
	payload := webhook.NewMessagePayload(typ, id, m, tt, now).JSON()
	return r.InsertEvent(ctx, event.Event{ID: id, AccountID: m.AccountID, Type: typ, ThreadID: m.ThreadID, Payload: payload, CreatedAt: now})
}

// outboundThreadType is the thread type of an outbound message: group
// sends have no recipient number.
func outboundThreadType(m messaging.Message) messaging.ThreadType {
	if m.To == "" {
		return messaging.Group
	}
	return messaging.Individual
}
