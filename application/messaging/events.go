package messaging

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// messageEventPayload is the body of a message event, in the webhook
// payload's field names (decisions.md, incoming-message webhook).
type messageEventPayload struct {
	Event          event.Type     `json:"event"`
	ThreadID       string         `json:"thread_id"`
	MessageID      string         `json:"message_id"`
	ThreadType     string         `json:"thread_type,omitempty"`
	SenderNumber   string         `json:"sender_number"`
	SenderName     string         `json:"sender_name"`
	AccountID      string         `json:"a1_account_id"`
	PhoneNumber    string         `json:"a1_phone_number"`
	Timestamp      string         `json:"timestamp"`
	Service        string         `json:"service"`
	MessageType    string         `json:"message_type"`
	IsFromAgent    bool           `json:"is_from_agent"`
	AgentMentioned bool           `json:"agent_mentioned"`
	MessageContent map[string]any `json:"message_content"`
	Content        string         `json:"content"`
	Status         string         `json:"status"`
}

// messageEvent appends a message event to the account's log, in the
// transaction of r, so that it exists exactly when the change it reports
// does.
func (s *Service) messageEvent(ctx context.Context, r Repos, typ event.Type, t messaging.ThreadType, m messaging.Message) error {
	agent := m.From
	if m.Direction == messaging.Inbound {
		agent = m.To
	}
	c := m.Content
	content := map[string]any{"text": c.Text}
	switch {
	case c.Kind.IsMedia():
		content = map[string]any{"url": c.MediaURL, "media_type": string(c.Kind), "caption": c.Caption}
	case c.Kind == messaging.KindLocation:
		content = map[string]any{"latitude": c.Latitude, "longitude": c.Longitude, "name": c.PlaceName, "address": c.Address}
	}
	now := s.now().UTC()
	payload, err := json.Marshal(messageEventPayload{
		Event: typ, ThreadID: m.ThreadID, MessageID: m.ID, ThreadType: string(t),
		SenderNumber: m.From, SenderName: m.SenderName, AccountID: m.AccountID, PhoneNumber: agent,
		Timestamp: now.Format(time.RFC3339Nano), Service: string(m.Service), MessageType: string(c.Kind),
		IsFromAgent: m.Direction != messaging.Inbound, MessageContent: content, Content: c.Summary(), Status: string(m.Status),
	})
	if err != nil {
		return fmt.Errorf("encode %s event: %w", typ, err)
	}
	return r.InsertEvent(ctx, event.Event{
		ID: ident.New(ident.Event), AccountID: m.AccountID, Type: typ, ThreadID: m.ThreadID, Payload: payload, CreatedAt: now,
	})
}
