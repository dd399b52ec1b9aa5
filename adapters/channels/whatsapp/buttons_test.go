package whatsapp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/application/messaging"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// A text with reply buttons is an interactive message of type button in
// the Cloud API's exact shape, which the fake accepts; a shape the Cloud
// API refuses (4 buttons, a 21-character title, repeated ids) the fake
// refuses too.
func TestSendButtons(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	require.True(t, p.Capabilities().Buttons)
	send := func(c domain.Content, reply string) error {
		_, err := p.Send(context.Background(), messaging.Outbound{MessageID: "msg_b", Number: number, Settings: fake.Settings(appSecret, verify),
			ThreadTyp: domain.Individual, To: "+14155550111", Content: c, ReplyTo: domain.Reply{ProviderMessageID: reply}})
		return err
	}
	require.NoError(t, send(domain.Content{Kind: domain.KindText, Text: "Deliver tomorrow?",
		Buttons: []domain.Button{{ID: "yes", Title: "Yes please"}, {ID: "no", Title: "🇩🇪 Nein"}}}, "wamid.q1"))
	require.Equal(t, []map[string]any{{
		"messaging_product": "whatsapp", "recipient_type": "individual", "to": "14155550111", "type": "interactive",
		"interactive": map[string]any{
			"type": "button", "body": map[string]any{"text": "Deliver tomorrow?"},
			"action": map[string]any{"buttons": []any{
				map[string]any{"type": "reply", "reply": map[string]any{"id": "yes", "title": "Yes please"}},
				map[string]any{"type": "reply", "reply": map[string]any{"id": "no", "title": "🇩🇪 Nein"}},
			}},
		},
		"context": map[string]any{"message_id": "wamid.q1"},
	}}, fake.Interactive())

	for name, buttons := range map[string][]domain.Button{
		"four":      {{ID: "a", Title: "A"}, {ID: "b", Title: "B"}, {ID: "c", Title: "C"}, {ID: "d", Title: "D"}},
		"long":      {{ID: "a", Title: "123456789012345678901"}},
		"duplicate": {{ID: "a", Title: "A"}, {ID: "a", Title: "B"}},
	} {
		var pe *messaging.ProviderError
		require.ErrorAs(t, send(domain.Content{Kind: domain.KindText, Text: "x", Buttons: buttons}, ""), &pe, name)
	}
	require.Len(t, fake.Interactive(), 1)
}

// A press of a reply button is a button reply naming the button and, by
// its context, the message it was on.
func TestInboundButtonReply(t *testing.T) {
	t.Parallel()
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box}
	body := whatsappfake.ButtonReply(pnid, display, "14155550111", "Sheena Nelson", "wamid.press1", "wamid.q1", "yes", "Yes please")
	require.NoError(t, in.Webhook(context.Background(), number.ID, whatsappfake.Sign(body, appSecret), body))
	require.Len(t, box.messages, 1)
	got := box.messages[0]
	require.Equal(t, domain.Content{Kind: domain.KindButtonReply, ButtonID: "yes", Text: "Yes please"}, got.Content)
	require.Equal(t, domain.Reply{ProviderMessageID: "wamid.q1"}, got.ReplyTo)
	require.Equal(t, "wamid.press1", got.ProviderMessageID)
	require.False(t, got.Acknowledge, "WhatsApp wants no acknowledgement")
}
