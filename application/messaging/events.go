package messaging

import (
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// messageEvent is the event on the account's log about m.
func (s *Service) messageEvent(typ event.Type, m messaging.Message, tt messaging.ThreadType) event.Event {
	id := ident.New(ident.Event)
	now := s.now().UTC()
	payload := webhook.NewMessagePayload(typ, id, s.withMediaLink(m), tt, now).JSON()
	return event.Event{ID: id, AccountID: m.AccountID, Type: typ, ThreadID: m.ThreadID, Payload: payload, CreatedAt: now}
}

// outboundThreadType is the thread type of an outbound message: group
// sends have no recipient number.
func outboundThreadType(m messaging.Message) messaging.ThreadType {
	if m.To == "" {
		return messaging.Group
	}
	return messaging.Individual
}
