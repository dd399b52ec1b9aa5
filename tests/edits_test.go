package tests

import (
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// Edits and deletions through the built binary, on both databases: a
// user's edit on the Telegram fake (edited_message) and deletion on the
// WhatsApp fake (a revoke) change the stored message and reach the
// customer's webhook as message.edited and message.deleted, once however
// often the provider repeats them; a change of a message Switchboard never
// had is stored from the report; the reads show the state; the sandbox
// simulates both.
func TestEditsAndDeletionsEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Edits")
		f.serve(t)
		b, tg, acct, other, tgNum, waNum, hooks, srv, api := f.b, f.tg, f.acct, f.other, f.tgNum, f.waNum, f.hooks, f.srv, f.api
		unix := func(sec int64) string { return time.Unix(sec, 0).UTC().Format(webhook.TimeFormat) }
		byProvider := func(typ, providerID string) []map[string]any {
			var out []map[string]any
			for _, ev := range hooks.all() {
				if ev["event"] == typ && ev["provider_message_id"] == providerID {
					out = append(out, ev)
				}
			}
			return out
		}

		// Telegram: the user writes, then edits the message twice; the
		// first edit arrives twice under its update_id and once more under
		// another.
		tgRoute := "/v1/providers/telegram/" + tgNum.NumberID + "/webhook"
		var secret string
		require.Eventually(t, func() bool {
			secret, _ = tg.Webhook()["secret_token"].(string)
			return secret != ""
		}, chWait, chTick, "the server sets the bot's webhook")
		require.Contains(t, tg.Webhook()["allowed_updates"], "edited_message", "the Bot API sends edits only when asked")
		tgPost := func(update []byte) {
			r := api.client.Do(http.MethodPost, tgRoute, update, "X-Telegram-Bot-Api-Secret-Token", secret)
			require.Equal(t, http.StatusOK, r.StatusCode, "update: %s", r.Body)
		}
		tgPost(telegramfake.PrivateText(9101, 41, 777000444, "Dana_T", "Dana", "Meet at 5?"))
		tgThread := api.thread(t, "individual", "Dana")["thread_id"].(string)
		tgMsg := api.recent(t, tgThread)[0]["message_id"].(string)
		firstEdit := telegramfake.PrivateEdit(9102, 41, 777000444, "Dana", "Meet at 6?", 1763800300)
		tgPost(firstEdit)
		tgPost(firstEdit)
		tgPost(telegramfake.PrivateEdit(9103, 41, 777000444, "Dana", "Meet at 6?", 1763800300))
		ev := hooks.waitOne(t, "message.edited", tgMsg)
		requireFields(t, ev, map[string]any{"thread_id": tgThread, "content": "Meet at 6?", "previous_text": "Meet at 5?",
			"edited_at": unix(1763800300), "deleted": false, "previously_stored": true, "sender_number": "777000444",
			"provider_message_id": tgNum.NumberID + ":777000444:41", "message_content": map[string]any{"text": "Meet at 6?"}, "direction": "inbound"})
		tgPost(telegramfake.PrivateEdit(9104, 41, 777000444, "Dana", "Meet at 7?", 1763800400))
		require.Eventually(t, func() bool { return len(hooks.find("message.edited", tgMsg)) >= 2 }, chWait, chTick)
		edits := hooks.find("message.edited", tgMsg)
		require.Len(t, edits, 2, "one event per edit: the repeats record none")
		requireFields(t, edits[1], map[string]any{"content": "Meet at 7?", "previous_text": "Meet at 6?", "edited_at": unix(1763800400)})
		details := api.details(t, tgMsg)
		requireFields(t, details, map[string]any{"body": "Meet at 7?", "previous_text": "Meet at 6?",
			"edited_at": time.Unix(1763800400, 0).UTC().Format("2006-01-02T15:04:05Z")})
		require.NotContains(t, details, "deleted")
		require.Len(t, api.recent(t, tgThread), 1, "an edit is no message")

		// An edit of a message Switchboard never had is stored from the
		// report, with its event.
		tgPost(telegramfake.PrivateEdit(9105, 40, 777000444, "Dana", "written before the bot was connected", 1763800500))
		require.Eventually(t, func() bool { return len(byProvider("message.edited", tgNum.NumberID+":777000444:40")) == 1 }, chWait, chTick)
		unseen := byProvider("message.edited", tgNum.NumberID+":777000444:40")[0]
		requireFields(t, unseen, map[string]any{"previously_stored": false, "previous_text": "", "thread_id": tgThread,
			"content": "written before the bot was connected"})
		recent := api.recent(t, tgThread)
		require.Len(t, recent, 2)
		require.Equal(t, unseen["message_id"], recent[0]["message_id"])
		require.Equal(t, "written before the bot was connected", recent[0]["content"])

		// WhatsApp: the user writes, then deletes the message for
		// everyone; Meta repeats the revoke.
		waRoute := "/v1/providers/whatsapp/" + waNum.NumberID + "/webhook"
		waPost := func(body []byte) {
			r := api.client.Do(http.MethodPost, waRoute, body, "X-Hub-Signature-256", whatsappfake.Sign(body, chWASecret))
			require.Equal(t, http.StatusOK, r.StatusCode, "notification: %s", r.Body)
		}
		waPost(whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550122", "Eve Adams", "wamid.e2e-edit-1", "my card is 4242"))
		waThread := api.thread(t, "individual", "Eve Adams")["thread_id"].(string)
		waMsg := api.recent(t, waThread)[0]["message_id"].(string)
		revoke := whatsappfake.Revoke(chWAPNID, chWADisplay, "14155550122", "Eve Adams", "wamid.e2e-revoke-1", "wamid.e2e-edit-1")
		waPost(revoke)
		waPost(revoke)
		ev = hooks.waitOne(t, "message.deleted", waMsg)
		requireFields(t, ev, map[string]any{"thread_id": waThread, "content": "", "previous_text": "", "deleted": true,
			"deleted_at": unix(1763800100), "previously_stored": true, "provider_message_id": "wamid.e2e-edit-1",
			"sender_number": "+14155550122", "message_type": "text"})
		details = api.details(t, waMsg)
		requireFields(t, details, map[string]any{"body": "", "deleted": true, "deleted_at": time.Unix(1763800100, 0).UTC().Format("2006-01-02T15:04:05Z")})
		require.NotContains(t, details, "previous_text", "a deleted message keeps no text")
		// An edit of the deleted message changes nothing; an edit of a
		// message it still has is one (Business app numbers report edits).
		waPost(whatsappfake.EditText(chWAPNID, chWADisplay, "14155550122", "Eve Adams", "wamid.e2e-edit-2", "wamid.e2e-edit-1", "back again"))
		waPost(whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550122", "Eve Adams", "wamid.e2e-edit-3", "see you"))
		waMsg2 := api.recent(t, waThread)[0]["message_id"].(string)
		waPost(whatsappfake.EditText(chWAPNID, chWADisplay, "14155550122", "Eve Adams", "wamid.e2e-edit-4", "wamid.e2e-edit-3", "see you soon"))
		ev = hooks.waitOne(t, "message.edited", waMsg2)
		requireFields(t, ev, map[string]any{"content": "see you soon", "previous_text": "see you", "edited_at": unix(1763800050)})
		require.Len(t, hooks.find("message.deleted", waMsg), 1, "the repeated revoke recorded nothing")
		require.Empty(t, hooks.find("message.edited", waMsg), "a deleted message is not edited")
		require.Equal(t, "", api.details(t, waMsg)["body"])

		// A revoke of a message Switchboard never had: stored deleted, and
		// the original arriving late is a repeat.
		waPost(whatsappfake.Revoke(chWAPNID, chWADisplay, "14155550122", "Eve Adams", "wamid.e2e-revoke-2", "wamid.e2e-never"))
		require.Eventually(t, func() bool { return len(byProvider("message.deleted", "wamid.e2e-never")) == 1 }, chWait, chTick)
		requireFields(t, byProvider("message.deleted", "wamid.e2e-never")[0], map[string]any{"previously_stored": false, "deleted": true,
			"thread_id": waThread})
		waPost(whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550122", "Eve Adams", "wamid.e2e-never", "too late"))
		recent = api.recent(t, waThread)
		require.Len(t, recent, 3, "the first message, the second, and the deleted one never seen")
		require.Equal(t, true, recent[0]["deleted"])
		require.Equal(t, "", recent[0]["content"])

		// GraphQL and MCP show the same state.
		var gql map[string]any
		postGraphQL(t, srv.URL, acct, `{ a: message(id: "`+tgMsg+`") { editedAt previousText deleted deletedAt content { text } }
			b: message(id: "`+waMsg+`") { editedAt previousText deleted deletedAt content { text } } }`, &gql)
		require.Equal(t, map[string]any{
			"a": map[string]any{"editedAt": time.Unix(1763800400, 0).UTC().Format(time.RFC3339), "previousText": "Meet at 6?", "deleted": false,
				"deletedAt": nil, "content": map[string]any{"text": "Meet at 7?"}},
			"b": map[string]any{"editedAt": nil, "previousText": "", "deleted": true,
				"deletedAt": time.Unix(1763800100, 0).UTC().Format(time.RFC3339), "content": map[string]any{"text": ""}},
		}, gql["data"], "%v", gql)
		cs := connectMCP(t, srv, acct)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get_messages", Arguments: map[string]any{"thread_id": waThread}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		items := map[string]map[string]any{}
		for _, it := range res.StructuredContent.(map[string]any)["messages"].([]any) {
			items[it.(map[string]any)["message_id"].(string)] = it.(map[string]any)
		}
		requireFields(t, items[waMsg], map[string]any{"deleted": true, "text": nil})
		requireFields(t, items[waMsg2], map[string]any{"text": "see you soon", "previous_text": "see you"})
		require.NotEmpty(t, items[waMsg2]["edited_at"])

		// The sandbox simulates both.
		const sandboxAgent = "+14155550197"
		b.addNumber(t, other.AccountID, sandboxAgent)
		otherAPI := &chAPI{client: srv.client(t), base: srv.URL, account: other.AccountID, headers: auth(other.APIKey, other.APISecret)}
		r := otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": "+14155550133", "to": sandboxAgent, "content": "first draft"})
		require.Equal(t, http.StatusOK, r.StatusCode, "simulated message: %s", r.Body)
		simulated := r.JSON(t)["message_id"].(string)
		change := func(route string, body map[string]any) map[string]any {
			r := otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/"+route, body)
			require.Equal(t, http.StatusOK, r.StatusCode, "%s: %s", route, r.Body)
			return r.JSON(t)["data"].(map[string]any)
		}
		edited := change("edit", map[string]any{"service": "whatsapp", "from": "+14155550133", "to": sandboxAgent, "message_id": simulated, "text": "final"})
		requireFields(t, edited, map[string]any{"message_id": simulated, "content": "final", "previous_text": "first draft"})
		require.NotEmpty(t, edited["edited_at"])
		deleted := change("delete", map[string]any{"service": "whatsapp", "from": "+14155550133", "to": sandboxAgent, "message_id": simulated})
		requireFields(t, deleted, map[string]any{"message_id": simulated, "content": "", "deleted": true})
		require.Equal(t, true, otherAPI.details(t, simulated)["deleted"])

		// Refusals: no text, a message of another account, a message the
		// user did not send.
		r = otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/edit",
			map[string]any{"service": "whatsapp", "from": "+14155550133", "to": sandboxAgent, "message_id": simulated})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "no text: %s", r.Body)
		require.Equal(t, []any{"body", "text"}, r.JSON(t)["detail"].([]any)[0].(map[string]any)["loc"])
		r = otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/delete",
			map[string]any{"service": "whatsapp", "from": "+14155550133", "to": sandboxAgent, "message_id": waMsg2})
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's message: %s", r.Body)
		r = otherAPI.post(t, "/v1/messages/individual/"+other.AccountID+"/send",
			map[string]any{"service": "whatsapp", "from": sandboxAgent, "to": "+14155550133", "content": "agent's"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
		r = otherAPI.post(t, "/v1/sandbox/"+other.AccountID+"/edit", map[string]any{"service": "whatsapp", "from": "+14155550133",
			"to": sandboxAgent, "message_id": r.JSON(t)["message_id"], "text": "not mine"})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "the agent's message: %s", r.Body)
		require.Equal(t, []any{"body", "message_id"}, r.JSON(t)["detail"].([]any)[0].(map[string]any)["loc"])
		require.Empty(t, hooks.rejections())
		srv.stop(t)
	})
}
