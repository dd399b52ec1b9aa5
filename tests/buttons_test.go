package tests

import (
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// Reply buttons through the built binary, on both databases: the agent
// offers buttons on the WhatsApp fake (REST) and the Telegram fake (MCP's
// send_message through the official SDK), each checked at the fake in the
// provider's wire format; the users press them, and the customer's
// webhook gets a button_reply naming the button and the message it was
// on; Telegram's callback query is answered; and the bad requests (four
// buttons on WhatsApp, a 40-character title, repeated ids, a 65-byte
// Telegram id, buttons with media) are refused at once naming the field.
func TestButtonsEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Buttons")
		f.serve(t)
		tg, wa, acct, hooks, srv, api := f.tg, f.wa, f.acct, f.hooks, f.srv, f.api
		waPost := func(body []byte) { f.waPost(t, body) }
		sendPath := "/v1/messages/individual/" + acct.AccountID + "/send"

		// WhatsApp: the user writes, the agent offers two buttons.
		waPost(whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550112", "Omar Haddad", "wamid.e2e-btn-q", "Can you deliver tomorrow?"))
		waThread := api.thread(t, "individual", "Omar Haddad")["thread_id"].(string)
		r := api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550112", "content": "Morning or afternoon?",
			"buttons": []any{map[string]any{"id": "slot-am", "title": "Morning 🌅"}, map[string]any{"id": "slot-pm", "title": "Afternoon"}}})
		require.Equal(t, http.StatusOK, r.StatusCode, "offer: %s", r.Body)
		offer := r.JSON(t)["message_id"].(string)
		api.waitStatus(t, offer, "sent")
		offerWamid := wa.LastID()
		require.Equal(t, []map[string]any{{
			"messaging_product": "whatsapp", "recipient_type": "individual", "to": "14155550112", "type": "interactive",
			"interactive": map[string]any{
				"type": "button", "body": map[string]any{"text": "Morning or afternoon?"},
				"action": map[string]any{"buttons": []any{
					map[string]any{"type": "reply", "reply": map[string]any{"id": "slot-am", "title": "Morning 🌅"}},
					map[string]any{"type": "reply", "reply": map[string]any{"id": "slot-pm", "title": "Afternoon"}},
				}},
			},
		}}, wa.Interactive(), "an interactive reply-button message, as the Cloud API takes it")
		wantButtons := []any{map[string]any{"id": "slot-am", "title": "Morning 🌅"}, map[string]any{"id": "slot-pm", "title": "Afternoon"}}
		sent := hooks.waitOne(t, "message.sent", offer)
		require.Equal(t, wantButtons, sent["buttons"])
		require.Equal(t, map[string]any{"text": "Morning or afternoon?", "buttons": wantButtons}, sent["message_content"])
		require.Equal(t, wantButtons, api.details(t, offer)["buttons"])

		// The user presses "Afternoon": a button_reply on the offer.
		waPost(whatsappfake.ButtonReply(chWAPNID, chWADisplay, "14155550112", "Omar Haddad", "wamid.e2e-btn-press", offerWamid, "slot-pm", "Afternoon"))
		press := api.recent(t, waThread)[0]
		requireFields(t, press, map[string]any{"message_type": "button_reply", "button_id": "slot-pm", "button_title": "Afternoon",
			"content": "Afternoon", "reply_to_message_id": offer, "quoted_text": "Morning or afternoon?", "direction": "inbound"})
		received := hooks.waitOne(t, "message.received", press["message_id"].(string))
		requireFields(t, received, map[string]any{"message_type": "button_reply", "button_id": "slot-pm", "button_title": "Afternoon",
			"reply_to_message_id": offer, "sender_number": "+14155550112", "thread_id": waThread, "is_from_agent": false,
			"message_content": map[string]any{"button_id": "slot-pm", "button_title": "Afternoon"}})
		// The same notification again is stored once.
		waPost(whatsappfake.ButtonReply(chWAPNID, chWADisplay, "14155550112", "Omar Haddad", "wamid.e2e-btn-press", offerWamid, "slot-pm", "Afternoon"))
		require.Len(t, api.recent(t, waThread), 3)

		// GraphQL shows the offer's buttons and the press.
		var got map[string]any
		postGraphQL(t, srv.URL, acct, `{ offer: message(id: "`+offer+`") { buttons { id title } }
			press: message(id: "`+press["message_id"].(string)+`") { content { kind text buttonId } replyTo { messageId } buttons { id } } }`, &got)
		require.Equal(t, map[string]any{
			"offer": map[string]any{"buttons": wantButtons},
			"press": map[string]any{"content": map[string]any{"kind": "BUTTON_REPLY", "text": "Afternoon", "buttonId": "slot-pm"},
				"replyTo": map[string]any{"messageId": offer}, "buttons": []any{}},
		}, got["data"], "%v", got)

		// Telegram: the user writes; the agent offers buttons through MCP.
		tgPost := f.tgPoster(t)
		require.Contains(t, tg.Webhook()["allowed_updates"], "callback_query", "the bot asks for button presses")
		tgPost(telegramfake.PrivateText(9101, 41, 777000444, "dana_k", "Dana", "Which size?"))
		tgThread := api.thread(t, "individual", "Dana")["thread_id"].(string)
		cs := connectMCP(t, srv, acct)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
			"service": "telegram", "from": chTGAgent, "to": "777000444", "text": "Pick a size",
			"buttons": []any{map[string]any{"id": "size:s", "title": "Small"}, map[string]any{"id": "size:m", "title": "Medium"},
				map[string]any{"id": "size:l", "title": "Large"}, map[string]any{"id": "size:xl", "title": "Extra large"}}}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		tgOffer := res.StructuredContent.(map[string]any)["message_id"].(string)
		api.waitStatus(t, tgOffer, "sent")
		require.Equal(t, map[string]any{"chat_id": "777000444", "text": "Pick a size", "reply_markup": map[string]any{"inline_keyboard": []any{
			[]any{map[string]any{"text": "Small", "callback_data": "size:s"}},
			[]any{map[string]any{"text": "Medium", "callback_data": "size:m"}},
			[]any{map[string]any{"text": "Large", "callback_data": "size:l"}},
			[]any{map[string]any{"text": "Extra large", "callback_data": "size:xl"}},
		}}}, tg.Calls("sendMessage")[0].Params, "an inline keyboard, one button per row")

		// Dana presses "Medium": the update shows no keyboard, so the
		// title comes from the stored message; the query is answered.
		const sentID = 101 // the fake numbers the bot's messages from 101 on
		update, query := tg.ButtonPress(9102, sentID, 777000444, "Dana", "size:m", false)
		tgPost(update)
		tgPress := api.recent(t, tgThread)[0]
		requireFields(t, tgPress, map[string]any{"message_type": "button_reply", "button_id": "size:m", "button_title": "Medium",
			"reply_to_message_id": tgOffer, "sender_number": "777000444"})
		ev := hooks.waitOne(t, "message.received", tgPress["message_id"].(string))
		requireFields(t, ev, map[string]any{"message_type": "button_reply", "button_id": "size:m", "button_title": "Medium",
			"reply_to_message_id": tgOffer, "sender_name": "Dana", "thread_id": tgThread})
		require.Eventually(t, func() bool { return len(tg.Answered()) == 1 }, chWait, chTick, "the callback query is answered")
		require.Equal(t, []string{query}, tg.Answered())
		tgPost(update) // Telegram's retry of the same update changes nothing
		require.Len(t, api.recent(t, tgThread), 3)
		require.Len(t, tg.Calls("answerCallbackQuery"), 1, "answered once")

		// MCP get_messages shows the offer's buttons and the press.
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get_messages", Arguments: map[string]any{"thread_id": tgThread, "limit": 2}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		msgs := res.StructuredContent.(map[string]any)["messages"].([]any)
		requireFields(t, msgs[0].(map[string]any), map[string]any{"type": "button_reply", "button_id": "size:m", "button_title": "Medium", "reply_to_message_id": tgOffer})
		require.Len(t, msgs[1].(map[string]any)["buttons"], 4)

		// Bad input: refused at once, naming the field; nothing is sent.
		loc := func(r openapitest.Response) []any {
			return r.JSON(t)["detail"].([]any)[0].(map[string]any)["loc"].([]any)
		}
		button := func(id, title string) map[string]any { return map[string]any{"id": id, "title": title} }
		for name, tc := range map[string]struct {
			body map[string]any
			loc  []any
		}{
			"four on WhatsApp": {map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550112", "content": "x",
				"buttons": []any{button("a", "A"), button("b", "B"), button("c", "C"), button("d", "D")}}, []any{"body", "buttons", float64(3)}},
			"a 40-character title": {map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550112", "content": "x",
				"buttons": []any{button("a", strings.Repeat("t", 40))}}, []any{"body", "buttons", float64(0), "title"}},
			"repeated ids": {map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550112", "content": "x",
				"buttons": []any{button("a", "A"), button("a", "B")}}, []any{"body", "buttons", float64(1), "id"}},
			"a 65-byte Telegram id": {map[string]any{"service": "telegram", "from": chTGAgent, "to": "777000444", "content": "x",
				"buttons": []any{button(strings.Repeat("i", 65), "A")}}, []any{"body", "buttons", float64(0), "id"}},
			"buttons with media": {map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550112", "message_type": "media",
				"media_url": "https://media.example.com/cat.png", "media_type": "image", "buttons": []any{button("a", "A")}}, []any{"body", "buttons"}},
		} {
			r := api.post(t, sendPath, tc.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", name, r.Body)
			require.Equal(t, tc.loc, loc(r), name)
		}
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
			"service": "whatsapp", "from": chWAAgent, "to": "+14155550112", "text": "x",
			"buttons": []any{button("a", "A"), button("b", "B"), button("c", "C"), button("d", "D")}}})
		require.NoError(t, err)
		require.True(t, res.IsError, "four buttons on WhatsApp through MCP")
		require.Equal(t, "validation_error", res.StructuredContent.(map[string]any)["code"], "%v", res.StructuredContent)
		require.Len(t, wa.Sends(), 1, "refused sends reach nobody")
		require.Len(t, tg.Calls("sendMessage"), 1, "refused sends reach nobody")

		// The sandbox simulates a press on a button its message has, and
		// refuses one it does not.
		const sandboxAgent = "+14155550197"
		f.b.addNumber(t, acct.AccountID, sandboxAgent)
		r = api.post(t, "/v1/sandbox/"+acct.AccountID+"/inbound", map[string]any{"service": "whatsapp", "from": "+14155550113", "to": sandboxAgent, "content": "Hi"})
		require.Equal(t, http.StatusOK, r.StatusCode, "simulated message: %s", r.Body)
		r = api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": sandboxAgent, "to": "+14155550113", "content": "Confirm?",
			"buttons": []any{button("ok", "Confirm"), button("no", "Cancel")}})
		require.Equal(t, http.StatusOK, r.StatusCode, "sandbox offer: %s", r.Body)
		sandboxOffer := r.JSON(t)["message_id"].(string)
		pressPath := "/v1/sandbox/" + acct.AccountID + "/button-press"
		r = api.post(t, pressPath, map[string]any{"service": "whatsapp", "from": "+14155550113", "to": sandboxAgent, "message_id": sandboxOffer, "button_id": "ok"})
		require.Equal(t, http.StatusOK, r.StatusCode, "simulated press: %s", r.Body)
		requireFields(t, api.details(t, r.JSON(t)["message_id"].(string)), map[string]any{"message_type": "button_reply", "button_id": "ok",
			"button_title": "Confirm", "reply_to_message_id": sandboxOffer})
		r = api.post(t, pressPath, map[string]any{"service": "whatsapp", "from": "+14155550113", "to": sandboxAgent, "message_id": sandboxOffer, "button_id": "maybe"})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "a button the message does not have: %s", r.Body)
		require.Equal(t, []any{"body", "button_id"}, loc(r))
		r = api.post(t, pressPath, map[string]any{"service": "whatsapp", "from": "+14155550113", "to": sandboxAgent, "message_id": "msg_doesnotexist", "button_id": "ok"})
		require.Equal(t, http.StatusNotFound, r.StatusCode, "a missing message: %s", r.Body)
		require.Empty(t, hooks.rejections())
		srv.stop(t)
	})
}
