package webhook

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// TimeFormat is how payload times are written: RFC 3339 UTC, microseconds.
const TimeFormat = "2006-01-02T15:04:05.999999Z07:00"

// MessagePayload is the body of a message event, with the fields existing
// clients read: message_content as an object and content as plain text.
type MessagePayload struct {
	Event          event.Type     `json:"event"`
	EventID        string         `json:"event_id"`
	ThreadID       string         `json:"thread_id"`
	MessageID      string         `json:"message_id"`
	ThreadType     string         `json:"thread_type"`
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
	Direction      string         `json:"direction"`
	Recipient      string         `json:"recipient_number,omitempty"`
	ErrorCode      string         `json:"error_code,omitempty"`
	ErrorMessage   string         `json:"error_message,omitempty"`
	// ReplyToMessageID is the message this one quotes (our id), and
	// ReplyToProviderMessageID the provider's id of it when Switchboard
	// does not have that message; QuotedText is its text where known.
	ReplyToMessageID         string `json:"reply_to_message_id,omitempty"`
	ReplyToProviderMessageID string `json:"reply_to_provider_message_id,omitempty"`
	QuotedText               string `json:"quoted_text,omitempty"`
	// Buttons are the reply buttons an agent message offers.
	Buttons []Button `json:"buttons,omitempty"`
	// ButtonID and ButtonTitle name the button a user pressed
	// (message_type button_reply; reply_to_message_id is the message it
	// was on).
	ButtonID    string `json:"button_id,omitempty"`
	ButtonTitle string `json:"button_title,omitempty"`
	// UserID and Username are the WhatsApp business-scoped user id and
	// username of the user who sent an inbound message, where known
	// (sender_number is then their phone number where known, else the
	// user id, or "unknown" when the provider showed no id).
	UserID   string `json:"user_id,omitempty"`
	Username string `json:"username,omitempty"`
	// ContactID is the contact (the person) of the thread's user.
	ContactID string `json:"contact_id,omitempty"`
	// The fields of message.edited and message.deleted (absent from other
	// events; see NewChangePayload).
	*ChangeFields
}

// Button is a reply button as the JSON Switchboard reads and writes
// shows it: payloads, REST bodies, MCP tools, the buttons column.
type Button struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Buttons is the JSON form of a message's buttons (nil for none).
func Buttons(in []messaging.Button) []Button {
	return convert(in, func(b messaging.Button) Button { return Button(b) })
}

// ModelButtons is the model of buttons read from JSON (nil for none).
func ModelButtons(in []Button) []messaging.Button {
	return convert(in, func(b Button) messaging.Button { return messaging.Button(b) })
}

// convert converts a list of buttons between the two forms (nil for
// none).
func convert[From, To any](in []From, one func(From) To) []To {
	if len(in) == 0 {
		return nil
	}
	out := make([]To, len(in))
	for i, b := range in {
		out[i] = one(b)
	}
	return out
}

// ChangeFields say what a user's edit or deletion changed: the message's
// provider id, the text before the edit (none for a deletion, which keeps
// no text), when it was edited or deleted, and whether Switchboard had
// the message before (false: it was stored from the change report).
type ChangeFields struct {
	ProviderMessageID string `json:"provider_message_id"`
	PreviousText      string `json:"previous_text"`
	EditedAt          string `json:"edited_at,omitempty"`
	Deleted           bool   `json:"deleted"`
	DeletedAt         string `json:"deleted_at,omitempty"`
	PreviouslyStored  bool   `json:"previously_stored"`
}

// NewChangePayload builds the payload of a message.edited or
// message.deleted event about m as it is after the change (its content is
// the new text; a deleted message has none), in a thread of type tt,
// recorded at now under event id. previouslyStored is false when the
// message was first stored from this report.
func NewChangePayload(typ event.Type, id string, m messaging.Message, tt messaging.ThreadType, previouslyStored bool, now time.Time) MessagePayload {
	p := NewMessagePayload(typ, id, m, tt, now)
	p.ChangeFields = &ChangeFields{ProviderMessageID: m.ProviderMessageID, PreviousText: m.PreviousText,
		Deleted: m.Deleted(), PreviouslyStored: previouslyStored}
	if m.EditedAt != nil {
		p.EditedAt = m.EditedAt.UTC().Format(TimeFormat)
	}
	if m.DeletedAt != nil {
		p.DeletedAt = m.DeletedAt.UTC().Format(TimeFormat)
	}
	return p
}

// NewMessagePayload builds the payload of event typ about m in a thread of
// type tt, recorded at now under event id.
func NewMessagePayload(typ event.Type, id string, m messaging.Message, tt messaging.ThreadType, now time.Time) MessagePayload {
	fromAgent := m.Direction == messaging.OutboundAPI
	agent := m.To
	if fromAgent {
		agent = m.From
	}
	p := MessagePayload{
		Event: typ, EventID: id, ThreadID: m.ThreadID, MessageID: m.ID, ThreadType: string(tt),
		SenderNumber: m.From, SenderName: m.SenderName, AccountID: m.AccountID, PhoneNumber: agent,
		Timestamp: now.UTC().Format(TimeFormat), Service: string(m.Service), MessageType: string(m.Content.Kind),
		IsFromAgent: fromAgent, MessageContent: contentObject(m.Content), Content: m.Content.Summary(),
		Status: string(m.Status), Direction: string(m.Direction), Recipient: m.To,
		ErrorCode: m.FailureCode, ErrorMessage: m.FailureText,
		ReplyToMessageID: m.ReplyTo.MessageID, QuotedText: m.ReplyTo.Text, Buttons: Buttons(m.Content.Buttons),
		UserID: m.UserID, Username: m.Username, ContactID: m.ContactID,
	}
	if m.Content.Kind == messaging.KindButtonReply {
		p.ButtonID, p.ButtonTitle = m.Content.ButtonID, m.Content.Text
	}
	if m.ReplyTo.MessageID == "" {
		p.ReplyToProviderMessageID = m.ReplyTo.ProviderMessageID
	}
	if !fromAgent && tt == messaging.Group && agent != "" {
		// A group message mentions the agent when it names its number.
		p.AgentMentioned = strings.Contains(m.Content.Summary(), strings.TrimPrefix(agent, "+"))
	}
	if tt == messaging.Individual && !fromAgent {
		p.AgentMentioned = true
	}
	return p
}

// JSON encodes the payload with encoding/json. Only a content number
// that is not finite could make it fail (validation and JSON input keep
// them finite); the payload then goes without its content object rather
// than not at all.
func (p MessagePayload) JSON() []byte {
	b, err := json.Marshal(p)
	if err != nil {
		p.MessageContent = map[string]any{}
		b, _ = json.Marshal(p)
	}
	return b
}

func contentObject(c messaging.Content) map[string]any {
	switch {
	case c.Kind == messaging.KindText && len(c.Buttons) > 0:
		return map[string]any{"text": c.Text, "buttons": Buttons(c.Buttons)}
	case c.Kind == messaging.KindText, c.Kind == messaging.KindSystem:
		return map[string]any{"text": c.Text}
	case c.Kind == messaging.KindButtonReply:
		return map[string]any{"button_id": c.ButtonID, "button_title": c.Text}
	case c.Kind.IsMedia():
		obj := map[string]any{"url": c.MediaURL, "media_type": string(c.Kind), "caption": c.Caption}
		// Media a user sent says what the provider told about it.
		if c.MimeType != "" {
			obj["mime_type"] = c.MimeType
		}
		if c.Size > 0 {
			obj["size"] = c.Size
		}
		if c.FileName != "" {
			obj["file_name"] = c.FileName
		}
		if c.Variant != "" {
			obj["variant"] = string(c.Variant)
		}
		return obj
	case c.Kind == messaging.KindLocation:
		return map[string]any{"latitude": c.Latitude, "longitude": c.Longitude, "name": c.PlaceName, "address": c.Address}
	case c.Kind == messaging.KindTemplate && c.Template != nil:
		return map[string]any{"text": c.Text, "template": map[string]any{"name": c.Template.Name, "language": c.Template.Language}}
	}
	return map[string]any{}
}

// ReactionType is the message_type of a reaction event.
const ReactionType = "reaction"

// ReactionPayload is the body of a message.reaction event: who set which
// emoji on which message. MessageID and TargetMessageID are the message
// reacted to (empty when Switchboard does not have it; then
// TargetProviderMessageID names it); an empty Emoji with Removed true is a
// reaction taken back.
type ReactionPayload struct {
	Event                   event.Type     `json:"event"`
	EventID                 string         `json:"event_id"`
	ThreadID                string         `json:"thread_id"`
	MessageID               string         `json:"message_id"`
	ThreadType              string         `json:"thread_type"`
	SenderNumber            string         `json:"sender_number"`
	SenderName              string         `json:"sender_name"`
	AccountID               string         `json:"a1_account_id"`
	PhoneNumber             string         `json:"a1_phone_number"`
	Timestamp               string         `json:"timestamp"`
	Service                 string         `json:"service"`
	MessageType             string         `json:"message_type"`
	IsFromAgent             bool           `json:"is_from_agent"`
	MessageContent          map[string]any `json:"message_content"`
	Content                 string         `json:"content"`
	Direction               string         `json:"direction"`
	TargetMessageID         string         `json:"target_message_id"`
	TargetProviderMessageID string         `json:"target_provider_message_id,omitempty"`
	Emoji                   string         `json:"emoji"`
	Removed                 bool           `json:"removed"`
}

// NewReactionPayload builds the payload of the message.reaction event
// about r in a thread of type tt whose agent number is agent, recorded at
// now under event id.
func NewReactionPayload(id string, r messaging.Reaction, tt messaging.ThreadType, agent string, now time.Time) ReactionPayload {
	dir := messaging.Inbound
	if r.FromAgent {
		dir = messaging.OutboundAPI
	}
	return ReactionPayload{
		Event: event.MessageReaction, EventID: id, ThreadID: r.ThreadID, MessageID: r.MessageID, ThreadType: string(tt),
		SenderNumber: r.Reactor, SenderName: r.ReactorName, AccountID: r.AccountID, PhoneNumber: agent,
		Timestamp: now.UTC().Format(TimeFormat), Service: string(r.Service), MessageType: ReactionType,
		IsFromAgent: r.FromAgent, Content: r.Emoji, Direction: string(dir),
		MessageContent: map[string]any{"emoji": r.Emoji, "removed": r.Removed(), "target_message_id": r.MessageID,
			"target_provider_message_id": r.TargetProviderID},
		TargetMessageID: r.MessageID, TargetProviderMessageID: r.TargetProviderID, Emoji: r.Emoji, Removed: r.Removed(),
	}
}

// JSON encodes the payload with encoding/json (every field is a string
// or a bool: it cannot fail).
func (p ReactionPayload) JSON() []byte {
	b, _ := json.Marshal(p)
	return b
}
