package tests

import (
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// Reactions and replies through the built binary, on both databases: a
// user's reaction on the WhatsApp and Telegram fakes is a message.reaction
// event on the message it targets (never a message), its removal too; the
// agent's reaction reaches each fake in the provider's wire format; a
// reply names its quoted message both ways; and the bad requests (not one
// emoji, reply_to of another thread or account) are refused.
func TestReactionsAndRepliesEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Reactions")
		f.serve(t)
		b, tg, wa, acct, other, hooks, srv, api := f.b, f.tg, f.wa, f.acct, f.other, f.hooks, f.srv, f.api
		waPost := func(body []byte) { f.waPost(t, body) }
		reactionPath := func(messageID string) string { return "/v1/messages/" + acct.AccountID + "/" + messageID + "/reaction" }

		// WhatsApp: the user writes, the agent answers.
		waPost(whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-react-q", "Do you ship to Berlin?"))
		waThread := api.thread(t, "individual", "Sheena Nelson")["thread_id"].(string)
		question := api.recent(t, waThread)[0]["message_id"].(string)
		r := api.post(t, "/v1/messages/individual/"+acct.AccountID+"/send",
			map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550111", "content": "We do.", "reply_to": question})
		require.Equal(t, http.StatusOK, r.StatusCode, "reply: %s", r.Body)
		answer := r.JSON(t)["message_id"].(string)
		api.waitStatus(t, answer, "sent")
		answerWamid := wa.LastID()
		require.Equal(t, map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "to": "14155550111",
			"type": "text", "text": map[string]any{"preview_url": false, "body": "We do."},
			"context": map[string]any{"message_id": "wamid.e2e-react-q"}}, wa.Sends()[0], "the reply quotes the question")
		sent := hooks.waitOne(t, "message.sent", answer)
		require.Equal(t, question, sent["reply_to_message_id"])
		require.Equal(t, "Do you ship to Berlin?", sent["quoted_text"])
		require.Equal(t, question, api.details(t, answer)["reply_to_message_id"])

		// The user reacts 👍 to the answer: an event on it, no message.
		waPost(whatsappfake.Reaction(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-react-r1", answerWamid, "👍"))
		ev := hooks.waitOne(t, "message.reaction", answer)
		requireFields(t, ev, map[string]any{"message_type": "reaction", "target_message_id": answer, "emoji": "👍",
			"removed": false, "sender_number": "+14155550111", "is_from_agent": false, "thread_id": waThread, "direction": "inbound"})
		recent := api.recent(t, waThread)
		require.Len(t, recent, 2, "a reaction is no message: %v", recent)
		require.Equal(t, []any{map[string]any{"emoji": "👍", "reactor": "+14155550111", "reactor_name": "Sheena Nelson",
			"is_from_agent": false, "timestamp": recent[0]["reactions"].([]any)[0].(map[string]any)["timestamp"]}}, recent[0]["reactions"])
		// WhatsApp retries its webhook: the same report again records
		// nothing.
		waPost(whatsappfake.Reaction(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-react-r1", answerWamid, "👍"))
		// Taken back: removed, and the message has no reaction left.
		waPost(whatsappfake.Reaction(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-react-r2", answerWamid, ""))
		require.Eventually(t, func() bool { return len(hooks.find("message.reaction", answer)) == 2 }, chWait, chTick)
		removed := hooks.find("message.reaction", answer)[1]
		require.Equal(t, true, removed["removed"])
		require.Equal(t, "", removed["emoji"])
		require.NotContains(t, api.details(t, answer), "reactions")
		// A reaction to a message Switchboard does not have is delivered
		// with the provider's id.
		waPost(whatsappfake.Reaction(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-react-r3", "wamid.e2e-unknown", "🔥"))
		require.Eventually(t, func() bool { return len(hooks.find("message.reaction", "")) == 1 }, chWait, chTick)
		unknown := hooks.find("message.reaction", "")[0]
		require.Equal(t, "wamid.e2e-unknown", unknown["target_provider_message_id"])
		require.Len(t, hooks.find("message.reaction", answer), 2, "the repeated report recorded no event")
		require.Equal(t, waThread, unknown["thread_id"])
		require.Len(t, api.recent(t, waThread), 2)

		// The user answers the agent's message: the quote resolves to our
		// id, with the stored text (WhatsApp sends none).
		waPost(whatsappfake.ReplyText(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-react-reply", answerWamid, "15550100120", "Great, thanks"))
		userReply := api.recent(t, waThread)[0]
		require.Equal(t, "Great, thanks", userReply["content"])
		require.Equal(t, answer, userReply["reply_to_message_id"])
		require.Equal(t, "We do.", userReply["quoted_text"])
		received := hooks.waitOne(t, "message.received", userReply["message_id"].(string))
		require.Equal(t, answer, received["reply_to_message_id"])
		require.Equal(t, "We do.", received["quoted_text"])

		// The agent reacts, again (idempotent), and takes it back.
		r = api.client.Do(http.MethodPut, reactionPath(question), map[string]any{"emoji": "❤️"}, api.headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "react: %s", r.Body)
		require.Eventually(t, func() bool { return len(wa.Reactions()) == 1 }, chWait, chTick)
		r = api.client.Do(http.MethodPut, reactionPath(question), map[string]any{"emoji": "❤️"}, api.headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "react again: %s", r.Body)
		r = api.client.Do(http.MethodDelete, reactionPath(question), nil, api.headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "un-react: %s", r.Body)
		require.Equal(t, true, r.JSON(t)["data"].(map[string]any)["removed"])
		require.Eventually(t, func() bool { return len(wa.Reactions()) == 2 }, chWait, chTick)
		require.Equal(t, []map[string]any{
			{"messaging_product": "whatsapp", "recipient_type": "individual", "to": "14155550111", "type": "reaction",
				"reaction": map[string]any{"message_id": "wamid.e2e-react-q", "emoji": "❤️"}},
			{"messaging_product": "whatsapp", "recipient_type": "individual", "to": "14155550111", "type": "reaction",
				"reaction": map[string]any{"message_id": "wamid.e2e-react-q", "emoji": ""}},
		}, wa.Reactions(), "one reaction and its removal reach the Cloud API; the repeat sends nothing")
		require.Eventually(t, func() bool { return len(hooks.find("message.reaction", question)) == 2 }, chWait, chTick)
		agentEvents := hooks.find("message.reaction", question)
		require.Equal(t, true, agentEvents[0]["is_from_agent"])
		require.Equal(t, chWAAgent, agentEvents[0]["sender_number"])

		// GraphQL: the message's quote and reactions, and react.
		gql := func(query string) map[string]any {
			var out map[string]any
			postGraphQL(t, srv.URL, acct, query, &out)
			return out
		}
		got := gql(`mutation { react(messageId: "` + userReply["message_id"].(string) + `", emoji: "🙏") { messageId emoji fromAgent reactor } }`)
		require.Equal(t, map[string]any{"react": map[string]any{"messageId": userReply["message_id"], "emoji": "🙏", "fromAgent": true,
			"reactor": chWAAgent}}, got["data"], "%v", got)
		require.Eventually(t, func() bool { return len(wa.Reactions()) == 3 }, chWait, chTick)
		require.Equal(t, map[string]any{"message_id": "wamid.e2e-react-reply", "emoji": "🙏"}, wa.Reactions()[2]["reaction"])
		got = gql(`{ message(id: "` + userReply["message_id"].(string) + `") { replyTo { messageId providerMessageId text } reactions { emoji fromAgent } } }`)
		require.Equal(t, map[string]any{"message": map[string]any{
			"replyTo":   map[string]any{"messageId": answer, "providerMessageId": answerWamid, "text": "We do."},
			"reactions": []any{map[string]any{"emoji": "🙏", "fromAgent": true}},
		}}, got["data"], "%v", got)
		got = gql(`mutation { react(messageId: "` + question + `", emoji: "no") { emoji } }`)
		require.Equal(t, "validation_error", got["errors"].([]any)[0].(map[string]any)["extensions"].(map[string]any)["code"], "%v", got)

		// Bad input.
		for _, bad := range []string{"ok", "👍👍", "", "中"} {
			r = api.client.Do(http.MethodPut, reactionPath(question), map[string]any{"emoji": bad}, api.headers...)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%q: %s", bad, r.Body)
			require.Equal(t, []any{"body", "emoji"}, r.JSON(t)["detail"].([]any)[0].(map[string]any)["loc"], "%q", bad)
		}
		otherAPI := &chAPI{client: srv.client(t), base: srv.URL, account: other.AccountID, headers: auth(other.APIKey, other.APISecret)}
		r = otherAPI.client.Do(http.MethodPut, "/v1/messages/"+other.AccountID+"/"+question+"/reaction", map[string]any{"emoji": "👍"}, otherAPI.headers...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's message: %s", r.Body)

		// Telegram: the user writes, the agent replies with
		// reply_parameters and reacts with setMessageReaction.
		tgPost := f.tgPoster(t)
		require.Contains(t, tg.Webhook()["allowed_updates"], "message_reaction")
		tgPost(telegramfake.PrivateText(9001, 31, 777000333, "Carol_T", "Carol", "Table for two?"))
		tgThread := api.thread(t, "individual", "Carol")["thread_id"].(string)
		tgQuestion := api.recent(t, tgThread)[0]["message_id"].(string)
		r = api.post(t, "/v1/send/"+acct.AccountID, map[string]any{"type": "individual", "service": "telegram", "from": chTGAgent,
			"to": "777000333", "content": map[string]any{"text": "Booked."}, "reply_to": tgQuestion})
		require.Equal(t, http.StatusOK, r.StatusCode, "reply: %s", r.Body)
		tgAnswer := r.JSON(t)["message_id"].(string)
		api.waitStatus(t, tgAnswer, "sent")
		require.Equal(t, map[string]any{"chat_id": "777000333", "text": "Booked.", "reply_parameters": map[string]any{"message_id": float64(31)}},
			tg.Calls("sendMessage")[0].Params)
		r = api.client.Do(http.MethodPut, reactionPath(tgQuestion), map[string]any{"emoji": "👍"}, api.headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "react: %s", r.Body)
		require.Eventually(t, func() bool { return len(tg.Calls("setMessageReaction")) == 1 }, chWait, chTick)
		require.Equal(t, map[string]any{"chat_id": "777000333", "message_id": float64(31),
			"reaction": []any{map[string]any{"type": "emoji", "emoji": "👍"}}}, tg.Calls("setMessageReaction")[0].Params)

		// The user reacts to the bot's answer, and takes it back.
		// The fake numbers the bot's messages from 101 on.
		const sentID = 101
		tgPost(telegramfake.PrivateReaction(9002, sentID, 777000333, "Carol", "", "🎉"))
		ev = hooks.waitOne(t, "message.reaction", tgAnswer)
		requireFields(t, ev, map[string]any{"message_type": "reaction", "emoji": "🎉", "removed": false,
			"sender_number": "777000333", "sender_name": "Carol", "thread_id": tgThread})
		tgPost(telegramfake.PrivateReaction(9003, sentID, 777000333, "Carol", "🎉", ""))
		require.Eventually(t, func() bool { return len(hooks.find("message.reaction", tgAnswer)) == 2 }, chWait, chTick)
		require.Equal(t, true, hooks.find("message.reaction", tgAnswer)[1]["removed"])
		// The user's reply carries Telegram's quoted text.
		tgPost(telegramfake.PrivateReply(9004, 33, 777000333, "Carol", "Perfect", sentID, "Booked.", true))
		tgReply := api.recent(t, tgThread)[0]
		require.Equal(t, "Perfect", tgReply["content"])
		require.Equal(t, tgAnswer, tgReply["reply_to_message_id"])
		require.Equal(t, "Booked.", tgReply["quoted_text"])
		require.Len(t, api.recent(t, tgThread), 3, "the question, the answer and the reply; no reaction is a message")

		// MCP: send_message with reply_to, and react with remove.
		cs := connectMCP(t, srv, acct)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{
			"service": "telegram", "from": chTGAgent, "to": "777000333", "text": "See you at 8.", "reply_to": tgReply["message_id"]}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		require.Eventually(t, func() bool { return len(tg.Calls("sendMessage")) == 2 }, chWait, chTick)
		require.Equal(t, map[string]any{"chat_id": "777000333", "text": "See you at 8.", "reply_parameters": map[string]any{"message_id": float64(33)}},
			tg.Calls("sendMessage")[1].Params)
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "react", Arguments: map[string]any{"message_id": tgQuestion, "remove": true}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		require.Equal(t, true, res.StructuredContent.(map[string]any)["removed"])
		require.Eventually(t, func() bool { return len(tg.Calls("setMessageReaction")) == 2 }, chWait, chTick)
		require.Equal(t, map[string]any{"chat_id": "777000333", "message_id": float64(31), "reaction": []any{}}, tg.Calls("setMessageReaction")[1].Params)
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "react", Arguments: map[string]any{"message_id": tgQuestion, "emoji": "yes"}})
		require.NoError(t, err)
		require.True(t, res.IsError, "not one emoji")
		require.Equal(t, "validation_error", res.StructuredContent.(map[string]any)["code"], "%v", res.StructuredContent)

		// reply_to of another thread is 422; another account's is 404.
		r = api.post(t, "/v1/messages/individual/"+acct.AccountID+"/send",
			map[string]any{"service": "telegram", "from": chTGAgent, "to": "777000333", "content": "x", "reply_to": question})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "another thread: %s", r.Body)
		require.Equal(t, []any{"body", "reply_to"}, r.JSON(t)["detail"].([]any)[0].(map[string]any)["loc"])
		r = api.post(t, "/v1/messages/individual/"+acct.AccountID+"/send",
			map[string]any{"service": "telegram", "from": chTGAgent, "to": "777000333", "content": "x", "reply_to": "msg_doesnotexist"})
		require.Equal(t, http.StatusNotFound, r.StatusCode, "a missing message: %s", r.Body)
		const otherAgent = "+14155550198"
		b.addNumber(t, other.AccountID, otherAgent)
		r = otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": "+14155550111", "to": otherAgent, "content": "elsewhere"})
		require.Equal(t, http.StatusOK, r.StatusCode, "other account's message: %s", r.Body)
		othersMessage := r.JSON(t)["message_id"].(string)
		r = api.post(t, "/v1/messages/individual/"+acct.AccountID+"/send",
			map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550111", "content": "x", "reply_to": othersMessage})
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's message: %s", r.Body)
		// The sandbox simulates a user's reply and reaction.
		r = otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/inbound", map[string]any{"service": "whatsapp", "from": "+14155550111",
			"to": otherAgent, "content": "about that", "reply_to": othersMessage})
		require.Equal(t, http.StatusOK, r.StatusCode, "simulated reply: %s", r.Body)
		simulated := otherAPI.details(t, r.JSON(t)["message_id"].(string))
		require.Equal(t, othersMessage, simulated["reply_to_message_id"])
		require.Equal(t, "elsewhere", simulated["quoted_text"])
		r = otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/reaction", map[string]any{"service": "whatsapp", "from": "+14155550111",
			"to": otherAgent, "message_id": othersMessage, "emoji": "👀"})
		require.Equal(t, http.StatusOK, r.StatusCode, "simulated reaction: %s", r.Body)
		require.Equal(t, map[string]any{"message_id": othersMessage, "thread_id": simulated["thread_id"], "emoji": "👀", "removed": false,
			"reactor": "+14155550111", "is_from_agent": false}, r.JSON(t)["data"])
		require.Equal(t, "👀", otherAPI.details(t, othersMessage)["reactions"].([]any)[0].(map[string]any)["emoji"])
		r = otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/reaction", map[string]any{"service": "whatsapp", "from": "+14155550111",
			"to": otherAgent, "message_id": question, "emoji": "👀"})
		require.Equal(t, http.StatusNotFound, r.StatusCode, "a message of another account: %s", r.Body)
		require.Len(t, tg.Calls("sendMessage"), 2, "refused sends reach nobody")
		require.Empty(t, hooks.rejections())
		srv.stop(t)
	})
}

// requireFields checks the wanted values of an event's fields.
func requireFields(t *testing.T, ev map[string]any, want map[string]any) {
	t.Helper()
	for field, value := range want {
		require.Equal(t, value, ev[field], "field %s of event %v", field, ev)
	}
}
