package telegram_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/application/messaging"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// A text with reply buttons is a sendMessage with an inline keyboard of
// one callback button per row; the fake refuses callback_data over 64
// bytes, as the Bot API does.
func TestSendButtons(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t)
	require.True(t, p.Capabilities().Buttons)
	send := func(buttons []domain.Button) error {
		_, err := p.Send(context.Background(), messaging.Outbound{MessageID: "msg_b", Number: number, Settings: fake.Settings(),
			ThreadTyp: domain.Individual, To: "987654321", Content: domain.Content{Kind: domain.KindText, Text: "Deliver tomorrow?", Buttons: buttons}})
		return err
	}
	require.NoError(t, send([]domain.Button{{ID: "yes", Title: "Yes please"}, {ID: "no", Title: "No"}}))
	calls := fake.Calls("sendMessage")
	require.Len(t, calls, 1)
	require.Equal(t, map[string]any{"chat_id": "987654321", "text": "Deliver tomorrow?", "reply_markup": map[string]any{"inline_keyboard": []any{
		[]any{map[string]any{"text": "Yes please", "callback_data": "yes"}},
		[]any{map[string]any{"text": "No", "callback_data": "no"}},
	}}}, calls[0].Params)
	require.Error(t, send([]domain.Button{{ID: strings.Repeat("x", 65), Title: "Long"}}), "the fake checks callback_data")
}

// A callback query is a button reply on the bot's message, to be
// acknowledged: its title from the message's keyboard when the update
// shows it, left to the stored message otherwise; Acknowledge answers
// the query once.
func TestButtonPress(t *testing.T) {
	t.Parallel()
	p, fake := newProvider(t)
	ctx := context.Background()
	r, err := p.Send(ctx, messaging.Outbound{MessageID: "msg_b", Number: number, Settings: fake.Settings(), ThreadTyp: domain.Individual,
		To: "987654321", Content: domain.Content{Kind: domain.KindText, Text: "Deliver?", Buttons: []domain.Button{{ID: "yes", Title: "Yes please"}}}})
	require.NoError(t, err)
	parts := strings.Split(r.ProviderMessageID, ":")
	sentID, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
	require.NoError(t, err)

	box := &inbox{seen: map[string]bool{}}
	in := &telegram.Inbound{Inbox: box}
	handle := func(raw []byte) {
		var u telegram.Update
		require.NoError(t, json.Unmarshal(raw, &u))
		require.NoError(t, in.Handle(ctx, number, u))
	}
	shown, shownQuery := fake.ButtonPress(70, sentID, 987654321, "Alice", "yes", true)
	bare, _ := fake.ButtonPress(71, sentID, 987654321, "Alice", "yes", false)
	handle(shown)
	handle(bare)
	handle(shown) // a retry
	require.Equal(t, 2, box.count())
	press := box.received[0]
	require.Equal(t, domain.Content{Kind: domain.KindButtonReply, ButtonID: "yes", Text: "Yes please"}, press.Content)
	require.Equal(t, domain.Reply{ProviderMessageID: r.ProviderMessageID}, press.ReplyTo)
	require.Equal(t, "num_tg:callback:"+shownQuery, press.ProviderMessageID)
	require.Equal(t, telegram.CallbackMessageID(number.ID, shownQuery), press.ProviderMessageID)
	require.True(t, press.Acknowledge)
	require.Equal(t, "987654321", press.Sender.ChatID)
	require.Equal(t, "", box.received[1].Content.Text, "no keyboard shown: the stored message names the title")

	ack := messaging.InboundAck{Number: number, Settings: fake.Settings(), Message: domain.Message{ProviderMessageID: press.ProviderMessageID}}
	require.NoError(t, p.Acknowledge(ctx, ack))
	require.Equal(t, []string{shownQuery}, fake.Answered())
	require.Error(t, p.Acknowledge(ctx, ack), "a query is answered once")
	require.NoError(t, p.Acknowledge(ctx, messaging.InboundAck{Number: number, Settings: fake.Settings(), Message: domain.Message{ProviderMessageID: "num_tg:1:2"}}),
		"a message that is no callback query needs no answer")
	require.Equal(t, []string{shownQuery}, fake.Answered())
}
