package whatsapp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

const bsuid = "US.13491208655302741918"

// deliver posts a signed notification and returns what the inbox got.
func deliver(t *testing.T, body []byte) []channels.Inbound {
	t.Helper()
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box}
	require.NoError(t, in.Webhook(context.Background(), number.ID, whatsappfake.Sign(body, appSecret), body))
	return box.messages
}

func TestInboundBusinessScopedUserIDs(t *testing.T) {
	t.Parallel()
	t.Run("phone and user id", func(t *testing.T) {
		t.Parallel()
		got := deliver(t, whatsappfake.UserTextMessage(pnid, display, "14155550111", bsuid, "@sheena", "Sheena", "wamid.b1", "hi"))
		require.Len(t, got, 1)
		require.Equal(t, channels.Sender{ChatID: "+14155550111", Phone: "+14155550111", Name: "Sheena", Username: "sheena", UserID: bsuid}, got[0].Sender)
	})
	t.Run("username-only user without from", func(t *testing.T) {
		t.Parallel()
		got := deliver(t, whatsappfake.UserTextMessage(pnid, display, "", bsuid, "sheena", "Sheena", "wamid.b2", "hi"))
		require.Len(t, got, 1, "a message without from is stored, never skipped")
		require.Equal(t, channels.Sender{ChatID: bsuid, Name: "Sheena", Username: "sheena", UserID: bsuid}, got[0].Sender,
			"the thread is kept under the user id")
		require.Equal(t, domain.Content{Kind: domain.KindText, Text: "hi"}, got[0].Content)
	})
	t.Run("neither from nor user id", func(t *testing.T) {
		t.Parallel()
		got := deliver(t, whatsappfake.UserTextMessage(pnid, display, "", "", "", "", "wamid.b3", "who am I"))
		require.Len(t, got, 1)
		require.Equal(t, channels.Sender{ChatID: domain.UnknownSender}, got[0].Sender)
	})
	t.Run("a user id that is not one", func(t *testing.T) {
		t.Parallel()
		got := deliver(t, whatsappfake.UserTextMessage(pnid, display, "", "../x", "", "", "wamid.b4", "hi"))
		require.Len(t, got, 1)
		require.Equal(t, domain.UnknownSender, got[0].Sender.ChatID)
		require.Empty(t, got[0].Sender.UserID)
	})
}

func TestInboundSystemMessages(t *testing.T) {
	t.Parallel()
	got := deliver(t, whatsappfake.SystemMessage(pnid, display, "14155550111", bsuid, "wamid.s1", "user_changed_number",
		"User Sheena changed from 14155550111 to 14155550199", "14155550199", "US.99"))
	require.Len(t, got, 1, "a system message is stored")
	require.Equal(t, domain.Content{Kind: domain.KindSystem, Text: "User Sheena changed from 14155550111 to 14155550199"}, got[0].Content)
	require.Equal(t, "+14155550111", got[0].Sender.ChatID, "kept in the thread of the number the user had")
	require.Equal(t, &channels.IdentityChange{Type: "user_changed_number", Phone: "+14155550199", UserID: "US.99", PreviousUserID: bsuid}, got[0].IdentityChange)

	got = deliver(t, whatsappfake.SystemMessage(pnid, display, "", bsuid, "wamid.s2", "user_changed_user_id", "", "", "US.98"))
	require.Len(t, got, 1)
	require.Equal(t, bsuid, got[0].Sender.ChatID)
	require.Equal(t, domain.Content{Kind: domain.KindSystem, Text: "[user_changed_user_id]"}, got[0].Content)
	require.Equal(t, &channels.IdentityChange{Type: "user_changed_user_id", UserID: "US.98", PreviousUserID: bsuid}, got[0].IdentityChange)
}

func TestSendToUserID(t *testing.T) {
	t.Parallel()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	p := &whatsapp.Provider{Client: whatsapp.NewClient()}
	r, err := p.Send(context.Background(), messaging.Outbound{MessageID: "msg_x", Number: number, Settings: fake.Settings(appSecret, verify),
		ThreadTyp: domain.Individual, To: bsuid, Content: domain.Content{Kind: domain.KindText, Text: "hello"}})
	require.NoError(t, err)
	require.Equal(t, fake.LastID(), r.ProviderMessageID)
	s := fake.Sends()
	require.Len(t, s, 1)
	require.Equal(t, map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "recipient": bsuid, "type": "text",
		"text": map[string]any{"preview_url": false, "body": "hello"}}, s[0], "a user known by user id only is the send's recipient, with no to")
}
