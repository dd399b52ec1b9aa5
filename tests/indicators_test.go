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

// Read receipts and typing through the built binary, on both databases:
// REST, GraphQL and MCP reach the WhatsApp and Telegram fakes in the
// providers' wire formats; one typing window per thread holds across the
// three; Telegram answers honestly that bots have no read receipts; and
// the bad requests (another account's or an unknown thread, a thread
// without a user's message, a provider error) are refused without a 500.
func TestTypingAndReadEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Indicators")
		const sandboxAgent = "+14155550122"
		f.b.addNumber(t, f.acct.AccountID, sandboxAgent)
		f.serve(t)
		tg, wa, acct, other, tgNum, waNum, hooks, srv, api := f.tg, f.wa, f.acct, f.other, f.tgNum, f.waNum, f.hooks, f.srv, f.api
		waRoute := "/v1/providers/whatsapp/" + waNum.NumberID + "/webhook"
		waInbound := func(wamid, text string) string {
			body := whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", wamid, text)
			r := api.client.Do(http.MethodPost, waRoute, body, "X-Hub-Signature-256", whatsappfake.Sign(body, chWASecret))
			require.Equal(t, http.StatusOK, r.StatusCode, "notification: %s", r.Body)
			return api.recent(t, api.thread(t, "individual", "Sheena Nelson")["thread_id"].(string))[0]["message_id"].(string)
		}
		readPath := func(threadID string) string { return "/v1/messages/threads/" + acct.AccountID + "/read/" + threadID }
		typingPath := func(threadID string) string { return "/v1/messages/threads/" + acct.AccountID + "/typing/" + threadID }
		data := func(r interface {
			JSON(testing.TB) map[string]any
		}) map[string]any {
			return r.JSON(t)["data"].(map[string]any)
		}

		// WhatsApp over REST: typing marks the user's message read and
		// shows the indicator; a repeat inside 25 s calls nothing.
		first := waInbound("wamid.e2e-typing-1", "Is it in stock?")
		waThread := api.thread(t, "individual", "Sheena Nelson")["thread_id"].(string)
		r := api.post(t, typingPath(waThread), nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "typing: %s", r.Body)
		require.Equal(t, map[string]any{"thread_id": waThread, "service": "whatsapp", "sent": true, "window_seconds": float64(25),
			"message_id": first, "marked_read": float64(1)}, data(r))
		require.Equal(t, []map[string]any{{"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.e2e-typing-1",
			"typing_indicator": map[string]any{"type": "text"}}}, wa.Statuses())
		require.Equal(t, "read", api.details(t, first)["status"])
		r = api.post(t, typingPath(waThread), map[string]any{})
		require.Equal(t, http.StatusOK, r.StatusCode, "typing again: %s", r.Body)
		require.Equal(t, false, data(r)["sent"])
		require.Greater(t, data(r)["retry_after_seconds"], float64(0))
		require.Len(t, wa.Statuses(), 1, "no second provider call inside the window")

		// Read over REST names the latest inbound message.
		second := waInbound("wamid.e2e-typing-2", "Hello?")
		r = api.post(t, readPath(waThread), nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "read: %s", r.Body)
		require.Equal(t, map[string]any{"thread_id": waThread, "service": "whatsapp", "read_receipts": true,
			"message_id": second, "marked_read": float64(1)}, data(r))
		require.Equal(t, map[string]any{"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.e2e-typing-2"}, wa.Statuses()[1])
		require.Equal(t, "read", api.details(t, second)["status"])
		// Each message that moved to read is a message.status event.
		hooks.waitStatuses(t, first, "read")
		hooks.waitStatuses(t, second, "read")
		requireEventFields(t, hooks.find("message.status", second)[0], map[string]any{
			"thread_id": waThread, "message_id": second, "direction": "inbound", "status": "read", "is_from_agent": false,
			"sender_number": "+14155550111", "service": "whatsapp",
		})

		// GraphQL: the same receipt; typing shares REST's window.
		gql := func(query string) map[string]any {
			var out map[string]any
			postGraphQL(t, srv.URL, acct, query, &out)
			return out
		}
		got := gql(`mutation { markThreadRead(threadId: "` + waThread + `") { threadId service readReceipts messageId markedRead note } }`)
		require.Equal(t, map[string]any{"markThreadRead": map[string]any{"threadId": waThread, "service": "WHATSAPP", "readReceipts": true,
			"messageId": second, "markedRead": float64(0), "note": nil}}, got["data"], "%v", got)
		require.Len(t, wa.Statuses(), 3)
		require.Equal(t, "wamid.e2e-typing-2", wa.Statuses()[2]["message_id"])
		got = gql(`mutation { sendTyping(threadId: "` + waThread + `") { sent retryAfterSeconds windowSeconds } }`)
		typing := got["data"].(map[string]any)["sendTyping"].(map[string]any)
		require.Equal(t, false, typing["sent"], "REST's window holds for GraphQL: %v", got)
		require.Len(t, wa.Statuses(), 3)
		got = gql(`mutation { markThreadRead(threadId: "thr_doesnotexist") { markedRead } }`)
		require.Equal(t, "not_found", got["errors"].([]any)[0].(map[string]any)["extensions"].(map[string]any)["code"], "%v", got)

		// MCP, with the official Go SDK's client.
		cs := connectMCP(t, srv, acct)
		call := func(name, threadID string) *sdk.CallToolResult {
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"thread_id": threadID}})
			require.NoError(t, err)
			return res
		}
		res := call("mark_read", waThread)
		require.False(t, res.IsError, "%v", res.Content)
		require.Equal(t, true, res.StructuredContent.(map[string]any)["read_receipts"])
		require.Len(t, wa.Statuses(), 4)
		res = call("send_typing", waThread)
		require.False(t, res.IsError, "%v", res.Content)
		require.Equal(t, false, res.StructuredContent.(map[string]any)["sent"], "the window holds for MCP too")
		require.Len(t, wa.Statuses(), 4)

		// A provider error is a 503 provider_refused, and moves nothing.
		third := waInbound("wamid.e2e-typing-3", "Anyone?")
		wa.Fail("wamid.e2e-typing-3", 131000)
		r = api.post(t, readPath(waThread), nil)
		require.Equal(t, http.StatusServiceUnavailable, r.StatusCode, "provider error: %s", r.Body)
		require.Equal(t, "provider_refused", r.JSON(t)["code"])
		require.Equal(t, "received", api.details(t, third)["status"])
		res = call("mark_read", waThread)
		require.True(t, res.IsError)
		require.Equal(t, "provider_refused", res.StructuredContent.(map[string]any)["code"])

		// Another account's thread and an unknown one are 404, as for
		// other thread routes.
		otherAPI := &chAPI{client: srv.client(t), base: srv.URL, account: other.AccountID, headers: auth(other.APIKey, other.APISecret)}
		for _, path := range []string{
			"/v1/messages/threads/" + other.AccountID + "/read/" + waThread,
			"/v1/messages/threads/" + other.AccountID + "/typing/" + waThread,
		} {
			r = otherAPI.post(t, path, nil)
			require.Equal(t, http.StatusNotFound, r.StatusCode, "%s: %s", path, r.Body)
		}
		r = api.post(t, typingPath("thr_doesnotexist"), nil)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "unknown thread: %s", r.Body)
		r = api.post(t, readPath(waThread), map[string]any{"message_id": "x"})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "the body takes no fields: %s", r.Body)

		// A thread whose user never wrote is refused at once.
		r = api.post(t, "/v1/sandbox/"+acct.AccountID+"/groups",
			map[string]any{"service": "whatsapp", "agent_number": sandboxAgent, "title": "Quiet", "participants": []string{"+14155550111"}})
		require.Equal(t, http.StatusCreated, r.StatusCode, "group: %s", r.Body)
		quiet := data(r)["thread_id"].(string)
		for _, path := range []string{readPath(quiet), typingPath(quiet)} {
			r = api.post(t, path, nil)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%s: %s", path, r.Body)
			require.Equal(t, "no_inbound_message", r.JSON(t)["detail"].([]any)[0].(map[string]any)["type"])
		}

		// Telegram: typing is sendChatAction; read says bots have none.
		tgRoute := "/v1/providers/telegram/" + tgNum.NumberID + "/webhook"
		var secret string
		require.Eventually(t, func() bool {
			secret, _ = tg.Webhook()["secret_token"].(string)
			return secret != ""
		}, chWait, chTick, "the server sets the bot's webhook")
		update := telegramfake.PrivateText(8001, 21, 777000222, "Bob_T", "Bob", "typing test")
		r = api.client.Do(http.MethodPost, tgRoute, update, "X-Telegram-Bot-Api-Secret-Token", secret)
		require.Equal(t, http.StatusOK, r.StatusCode, "update: %s", r.Body)
		tgThread := api.thread(t, "individual", "Bob")["thread_id"].(string)
		r = api.post(t, typingPath(tgThread), nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "typing: %s", r.Body)
		require.Equal(t, true, data(r)["sent"])
		require.Equal(t, float64(5), data(r)["window_seconds"])
		require.Equal(t, []telegramfake.Call{{Method: "sendChatAction", Params: map[string]any{"chat_id": "777000222", "action": "typing"}}},
			tg.Calls("sendChatAction"))
		r = api.post(t, typingPath(tgThread), nil)
		require.Equal(t, false, data(r)["sent"])
		require.Len(t, tg.Calls("sendChatAction"), 1, "no second call inside 5 s")
		before := len(tg.Calls(""))
		r = api.post(t, readPath(tgThread), nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "read: %s", r.Body)
		require.Equal(t, false, data(r)["read_receipts"])
		require.Contains(t, data(r)["note"], "no read receipts")
		require.Len(t, tg.Calls(""), before, "nothing is sent to Telegram")
		require.Equal(t, "received", api.recent(t, tgThread)[0]["status"], "nothing is faked")
		require.Empty(t, hooks.rejections())
		srv.stop(t)
	})
}
