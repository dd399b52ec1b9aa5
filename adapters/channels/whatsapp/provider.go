package whatsapp

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// Name is the provider name agent numbers use.
const Name = account.ProviderWhatsAppCloud

// Provider sends through the Cloud API, to users and to the groups of
// the Groups API (groups.go).
type Provider struct {
	Client *Client
	// Chats says which Cloud API group a group thread is.
	Chats Chats
}

var _ messaging.Provider = (*Provider)(nil)

// Capabilities: every kind to users; text and media to groups.
func (p *Provider) Capabilities() messaging.Capabilities {
	return messaging.Capabilities{
		Kinds:   []domain.Kind{domain.KindText, domain.KindImage, domain.KindVideo, domain.KindAudio, domain.KindDocument, domain.KindLocation},
		Buttons: true,
		Groups:  true,
	}
}

// sendResult is the answer to a send.
type sendResult struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
}

// Send delivers one message.
func (p *Provider) Send(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return messaging.Receipt{}, err
	}
	body := map[string]any{"messaging_product": "whatsapp", "type": string(m.Content.Kind)}
	if m.ThreadTyp == domain.Group {
		if err := p.addressGroup(ctx, m, body); err != nil {
			return messaging.Receipt{}, err
		}
	} else {
		body["recipient_type"] = "individual"
		addressed(m.To, body)
	}
	c := m.Content
	switch {
	case c.Kind == domain.KindText && len(c.Buttons) > 0:
		body["type"], body["interactive"] = "interactive", interactiveButtons(c)
	case c.Kind == domain.KindText:
		body["text"] = map[string]any{"preview_url": false, "body": c.Text}
	case c.Kind == domain.KindImage, c.Kind == domain.KindVideo, c.Kind == domain.KindDocument:
		media := map[string]any{"link": c.MediaURL}
		if c.Caption != "" {
			media["caption"] = c.Caption
		}
		body[string(c.Kind)] = media
	case c.Kind == domain.KindAudio:
		body["audio"] = map[string]any{"link": c.MediaURL} // audio has no caption
	case c.Kind == domain.KindLocation:
		loc := map[string]any{"latitude": c.Latitude, "longitude": c.Longitude}
		if c.PlaceName != "" {
			loc["name"] = c.PlaceName
		}
		if c.Address != "" {
			loc["address"] = c.Address
		}
		body["location"] = loc
	default:
		return messaging.Receipt{}, &messaging.ProviderError{Code: "not_supported_by_provider", Message: "whatsapp cannot send " + string(c.Kind), Permanent: true}
	}
	return p.postMessage(ctx, m, body)
}

// interactiveButtons is the interactive object of a text with reply
// buttons:
//
//	{"type":"button","body":{"text":"…"},"action":{"buttons":[{"type":"reply","reply":{"id":"…","title":"…"}}]}}
func interactiveButtons(c domain.Content) map[string]any {
	buttons := make([]any, len(c.Buttons))
	for i, b := range c.Buttons {
		buttons[i] = map[string]any{"type": "reply", "reply": map[string]any{"id": b.ID, "title": b.Title}}
	}
	return map[string]any{"type": "button", "body": map[string]any{"text": c.Text}, "action": map[string]any{"buttons": buttons}}
}

// TypingWindow is how long the Cloud API shows a typing indicator: 25
// seconds, or until the business's next message.
const TypingWindow = 25 * time.Second

var _ messaging.Indicator = (*Provider)(nil)

// Indicators: read receipts and typing, in one-to-one chats; the typing
// indicator marks the message it answers read.
func (p *Provider) Indicators() messaging.Indicators {
	return messaging.Indicators{ReadReceipts: true, TypingWindow: TypingWindow, TypingMarksRead: true}
}

// MarkRead marks the latest inbound message read (and with it every
// earlier one): a status update of that message.
func (p *Provider) MarkRead(ctx context.Context, in messaging.Indication) error {
	return p.readStatus(ctx, in, false)
}

// Typing marks the latest inbound message read and shows the typing
// indicator in answer to it.
func (p *Provider) Typing(ctx context.Context, in messaging.Indication) error {
	return p.readStatus(ctx, in, true)
}

// readStatus posts the read status of the latest inbound message, with
// the typing indicator when typing is set:
//
//	{"messaging_product":"whatsapp","status":"read","message_id":"wamid…","typing_indicator":{"type":"text"}}
//
// The Cloud API answers {"success": true}.
func (p *Provider) readStatus(ctx context.Context, in messaging.Indication, typing bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if in.ThreadType == domain.Group {
		return &messaging.ProviderError{Code: "not_supported_by_provider", Message: "WhatsApp Cloud API groups have no read receipts or typing indicators", Permanent: true}
	}
	wamid := in.Latest.ProviderMessageID
	if wamid == "" {
		return &messaging.ProviderError{Code: "provider_rejected", Message: "the latest inbound message has no WhatsApp message id", Permanent: true}
	}
	body := map[string]any{"messaging_product": "whatsapp", "status": "read", "message_id": wamid}
	if typing {
		body["typing_indicator"] = map[string]any{"type": "text"}
	}
	var out struct {
		Success bool `json:"success"`
	}
	if err := p.Client.call(ctx, in.Settings, http.MethodPost, "/"+in.Settings[SettingPhoneNumberID]+"/messages", body, &out); err != nil {
		return err
	}
	if !out.Success {
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "the Cloud API answered the read status without success"}
	}
	return nil
}

var _ messaging.Reactor = (*Provider)(nil)

// React sends a reaction message to the user; an empty emoji takes the
// reaction back:
//
//	{"messaging_product":"whatsapp","recipient_type":"individual","to":"14155550111","type":"reaction","reaction":{"message_id":"wamid…","emoji":"👍"}}
func (p *Provider) React(ctx context.Context, in messaging.OutboundReaction) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if in.ThreadType == domain.Group {
		return &messaging.ProviderError{Code: "not_supported_by_provider", Message: "WhatsApp Cloud API groups take no reactions", Permanent: true}
	}
	if in.Target.ProviderMessageID == "" {
		return &messaging.ProviderError{Code: "provider_rejected", Message: "WhatsApp never had the message reacted to", Permanent: true}
	}
	body := addressed(in.To, map[string]any{
		"messaging_product": "whatsapp", "recipient_type": "individual", "type": "reaction",
		"reaction": map[string]any{"message_id": in.Target.ProviderMessageID, "emoji": in.Emoji},
	})
	var out sendResult
	return p.Client.call(ctx, in.Settings, http.MethodPost, "/"+in.Settings[SettingPhoneNumberID]+"/messages", body, &out)
}

// addressed sets the user a send body goes to: "to", their phone number
// without the +, or, for a user known only by their business-scoped user
// id, "recipient", that id (the Cloud API takes one or the other; "to"
// wins when both are set, so only one is).
func addressed(user string, body map[string]any) map[string]any {
	if domain.ValidWhatsAppUserID(user) {
		body["recipient"] = user
	} else {
		body["to"] = strings.TrimPrefix(user, "+")
	}
	return body
}
