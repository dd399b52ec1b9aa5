package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

const contactsBSUID = "US.13491208655302741918"

// WhatsApp users known by their business-scoped user id, through the
// built binary on both databases: a username-only user (no from) writes,
// the customer's webhook gets the message with user_id and username, the
// agent answers and the Cloud API fake receives the send with the user
// id as its recipient; a notification with neither from nor user id, one
// with a 300-character name and a system message are stored and
// delivered, never dropped; a send to the unknown sender is refused.
func TestWhatsAppUserIDsEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Contacts")
		f.serve(t)
		wa, acct, hooks, api := f.wa, f.acct, f.hooks, f.api
		sendPath := "/v1/messages/individual/" + acct.AccountID + "/send"

		// A username-only user writes: no from, no wa_id.
		f.waPost(t, whatsappfake.UserTextMessage(chWAPNID, chWADisplay, "", contactsBSUID, "sheena", "Sheena Nelson", "wamid.c-1", "Do you ship to Lyon?"))
		th := api.thread(t, "individual", "Sheena Nelson")
		threadID := th["thread_id"].(string)
		msg := api.recent(t, threadID)[0]
		requireFields(t, msg, map[string]any{"content": "Do you ship to Lyon?", "from": contactsBSUID, "user_id": contactsBSUID, "username": "sheena"})
		received := hooks.waitOne(t, "message.received", msg["message_id"].(string))
		requireFields(t, received, map[string]any{"sender_number": contactsBSUID, "user_id": contactsBSUID, "username": "sheena",
			"sender_name": "Sheena Nelson", "thread_id": threadID, "content": "Do you ship to Lyon?"})

		// The agent answers the user id: the Cloud API gets recipient, not to.
		r := api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": contactsBSUID, "content": "We do!"})
		require.Equal(t, http.StatusOK, r.StatusCode, "answer: %s", r.Body)
		answer := r.JSON(t)["message_id"].(string)
		api.waitStatus(t, answer, "sent")
		sends := wa.Sends()
		require.Equal(t, map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "recipient": contactsBSUID,
			"type": "text", "text": map[string]any{"preview_url": false, "body": "We do!"}}, sends[len(sends)-1])
		require.Equal(t, threadID, api.details(t, answer)["thread_id"], "the answer is in the user's thread")

		// Neither from nor user id: stored as from the unknown sender.
		f.waPost(t, whatsappfake.UserTextMessage(chWAPNID, chWADisplay, "", "", "", "", "wamid.c-2", "anonymous"))
		unknown := api.thread(t, "individual", "unknown")
		anon := api.recent(t, unknown["thread_id"].(string))[0]
		requireFields(t, anon, map[string]any{"content": "anonymous", "from": "unknown"})
		requireFields(t, hooks.waitOne(t, "message.received", anon["message_id"].(string)), map[string]any{"sender_number": "unknown"})
		r = api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "unknown", "content": "who?"})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "the unknown sender cannot be answered: %s", r.Body)

		// A name longer than Switchboard keeps: stored with the name cut.
		long := strings.Repeat("é", 300)
		f.waPost(t, whatsappfake.UserTextMessage(chWAPNID, chWADisplay, "14155550131", "US.77", "", long, "wamid.c-3", "long name"))
		longMsg := api.recent(t, api.thread(t, "individual", strings.Repeat("é", 100))["thread_id"].(string))[0]
		requireFields(t, longMsg, map[string]any{"content": "long name", "from": "+14155550131", "user_id": "US.77"})
		hooks.waitOne(t, "message.received", longMsg["message_id"].(string))

		// A text longer than any message may be: kept as unsupported, with
		// the reason, and delivered.
		f.waPost(t, whatsappfake.UserTextMessage(chWAPNID, chWADisplay, "14155550131", "US.77", "", long, "wamid.c-5", strings.Repeat("x", 5000)))
		tooLong := api.recent(t, longMsg["thread_id"].(string))[0]
		require.True(t, strings.HasPrefix(tooLong["content"].(string), "[unsupported message: "), "kept with the reason: %v", tooLong["content"])
		require.Contains(t, tooLong["content"], "4096")
		hooks.waitOne(t, "message.received", tooLong["message_id"].(string))

		// A system message is stored (kind system) and delivered.
		f.waPost(t, whatsappfake.SystemMessage(chWAPNID, chWADisplay, "14155550131", "US.77", "wamid.c-4", "user_changed_number",
			"User changed from 14155550131 to 14155550132", "14155550132", "US.78"))
		sys := api.recent(t, longMsg["thread_id"].(string))[0]
		requireFields(t, sys, map[string]any{"message_type": "system", "content": "User changed from 14155550131 to 14155550132"})
		requireFields(t, hooks.waitOne(t, "message.received", sys["message_id"].(string)), map[string]any{"message_type": "system",
			"message_content": map[string]any{"text": "User changed from 14155550131 to 14155550132"}})
	})
}

// One person writing on Telegram and on WhatsApp, through the built
// binary on both databases: two contacts, each with its thread, until a
// merge (REST) makes them one contact with both threads, which MCP's
// get_contact and list_contacts show too; messages name the contact; a
// number change adds the new number to the contact; and the bad inputs:
// merging with itself (422), another account's contact (404), a cursor
// that is not one (422), an empty name (422).
func TestContactsMergeEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Merge")
		f.serve(t)
		acct, api, srv := f.acct, f.api, f.srv
		tgPost := f.tgPoster(t)
		base := "/v1/contacts/" + acct.AccountID

		tgPost(telegramfake.PrivateText(9001, 21, 777000222, "Ann_W", "Ann Weber", "hallo from telegram"))
		f.waPost(t, whatsappfake.UserTextMessage(chWAPNID, chWADisplay, "4917012345678", "DE.5550001", "annw", "Ann W.", "wamid.m-1", "hi from whatsapp"))
		waThread := api.thread(t, "individual", "Ann W.")["thread_id"].(string)
		tgThread := api.thread(t, "individual", "Ann Weber")["thread_id"].(string)

		r := api.get(t, base)
		require.Equal(t, http.StatusOK, r.StatusCode, "list: %s", r.Body)
		list := r.JSON(t)["data"].([]any)
		require.Len(t, list, 2, "two contacts before the merge: %s", r.Body)
		wa, tg := list[0].(map[string]any), list[1].(map[string]any)
		requireFields(t, wa, map[string]any{"name": "Ann W.", "phones": []any{"+4917012345678"}, "whatsapp_user_id": "DE.5550001", "whatsapp_username": "annw"})
		requireFields(t, tg, map[string]any{"name": "Ann Weber", "telegram_user_id": "777000222", "telegram_username": "ann_w", "phones": []any{}})
		waID, tgID := wa["contact_id"].(string), tg["contact_id"].(string)
		waMsg := api.recent(t, waThread)[0]
		require.Equal(t, waID, waMsg["contact_id"], "a message names its contact")
		requireFields(t, f.hooks.waitOne(t, "message.received", waMsg["message_id"].(string)), map[string]any{"contact_id": waID, "user_id": "DE.5550001"})

		// A send naming the user id reaches the thread of the number the
		// user wrote from, and goes out to that number.
		r = api.post(t, "/v1/messages/individual/"+acct.AccountID+"/send", map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "DE.5550001", "content": "Hallo Ann"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send to the user id: %s", r.Body)
		byUserID := r.JSON(t)["message_id"].(string)
		api.waitStatus(t, byUserID, "sent")
		require.Equal(t, waThread, api.details(t, byUserID)["thread_id"])
		sends := f.wa.Sends()
		require.Equal(t, "4917012345678", sends[len(sends)-1]["to"])

		// Pages and search.
		r = api.get(t, base+"?limit=1")
		require.Equal(t, http.StatusOK, r.StatusCode, "page: %s", r.Body)
		next := r.JSON(t)["next_cursor"].(string)
		r = api.get(t, base+"?limit=1&cursor="+next)
		require.Equal(t, tgID, r.JSON(t)["data"].([]any)[0].(map[string]any)["contact_id"], "the next page")
		require.Nil(t, r.JSON(t)["next_cursor"], "the last page")
		r = api.get(t, base+"?search=ANN_W")
		require.Len(t, r.JSON(t)["data"], 1)

		// The merge: the WhatsApp contact stays, with both threads.
		r = api.post(t, base+"/"+waID+"/merge", map[string]any{"other_contact_id": tgID})
		require.Equal(t, http.StatusOK, r.StatusCode, "merge: %s", r.Body)
		merged := r.JSON(t)["data"].(map[string]any)
		requireFields(t, merged, map[string]any{"contact_id": waID, "name": "Ann W.", "telegram_user_id": "777000222", "whatsapp_user_id": "DE.5550001"})
		threadIDs := []string{}
		for _, th := range merged["threads"].([]any) {
			threadIDs = append(threadIDs, th.(map[string]any)["thread_id"].(string))
		}
		require.ElementsMatch(t, []string{waThread, tgThread}, threadIDs, "both threads stay, linked to the contact")
		r = api.get(t, base+"/"+tgID)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "the merged contact is gone: %s", r.Body)
		require.Equal(t, waID, api.recent(t, tgThread)[0]["contact_id"], "the Telegram messages are the contact's now")
		r = api.get(t, base)
		require.Len(t, r.JSON(t)["data"], 1, "one person, one contact")

		// A send may name the contact: it reaches the contact's thread with
		// the sending number, on either service, and answers the contact.
		sendPath := "/v1/messages/individual/" + acct.AccountID + "/send"
		r = api.post(t, sendPath, map[string]any{"service": "telegram", "from": chTGAgent, "to": waID, "content": "Hallo on Telegram"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send to the contact on Telegram: %s", r.Body)
		requireFields(t, r.JSON(t), map[string]any{"to": "777000222", "contact_id": waID, "thread_id": tgThread})
		api.waitStatus(t, r.JSON(t)["message_id"].(string), "sent")
		calls := f.tg.Calls("sendMessage")
		require.EqualValues(t, "777000222", fmt.Sprint(calls[len(calls)-1].Params["chat_id"]), "the bot writes to the contact's chat")
		r = api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": waID, "content": "Hallo on WhatsApp"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send to the contact on WhatsApp: %s", r.Body)
		requireFields(t, r.JSON(t), map[string]any{"to": "+4917012345678", "contact_id": waID, "thread_id": waThread})
		r = api.post(t, sendPath, map[string]any{"service": "whatsapp", "from": chWAAgent, "to": tgID, "content": "gone"})
		require.Equal(t, http.StatusNotFound, r.StatusCode, "a merged-away contact: %s", r.Body)

		// MCP sees the same.
		cs := connectMCP(t, srv, acct)
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "get_contact", Arguments: map[string]any{"contact_id": waID}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		var got struct {
			ContactID string `json:"contact_id"`
			Threads   []struct {
				ThreadID string `json:"thread_id"`
				Service  string `json:"service"`
			} `json:"threads"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		require.NoError(t, json.Unmarshal(raw, &got))
		require.Equal(t, waID, got.ContactID)
		require.Len(t, got.Threads, 2)
		res, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "list_contacts", Arguments: map[string]any{"search": "777000222"}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		raw, _ = json.Marshal(res.StructuredContent)
		require.Contains(t, string(raw), waID)

		// GraphQL sees the same.
		var gq map[string]any
		postGraphQL(t, srv.URL, acct, `{ contacts(first: 5) { nodes { id telegramUserId whatsappUserId threads { id } } pageInfo { hasNextPage } }
			contact(id: "`+waID+`") { name phones } }`, &gq)
		require.Nil(t, gq["errors"])
		gq = gq["data"].(map[string]any)
		nodes := gq["contacts"].(map[string]any)["nodes"].([]any)
		require.Len(t, nodes, 1)
		requireFields(t, nodes[0].(map[string]any), map[string]any{"id": waID, "telegramUserId": "777000222", "whatsappUserId": "DE.5550001"})
		require.Len(t, nodes[0].(map[string]any)["threads"], 2)
		require.Equal(t, map[string]any{"name": "Ann W.", "phones": []any{"+4917012345678"}}, gq["contact"])

		// Renaming.
		r = api.client.Do(http.MethodPatch, base+"/"+waID, map[string]any{"name": "Ann Weber"}, api.headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "rename: %s", r.Body)
		require.Equal(t, "Ann Weber", r.JSON(t)["data"].(map[string]any)["name"])

		// A number change adds the new number; the new number's thread is
		// the same contact's.
		f.waPost(t, whatsappfake.SystemMessage(chWAPNID, chWADisplay, "4917012345678", "DE.5550001", "wamid.m-2", "user_changed_number",
			"User Ann W. changed from 4917012345678 to 4917099999999", "4917099999999", "DE.5550002"))
		r = api.get(t, base+"/"+waID)
		requireFields(t, r.JSON(t)["data"].(map[string]any), map[string]any{"phones": []any{"+4917012345678", "+4917099999999"}, "whatsapp_user_id": "DE.5550002"})
		f.waPost(t, whatsappfake.UserTextMessage(chWAPNID, chWADisplay, "4917099999999", "DE.5550002", "", "Ann W.", "wamid.m-3", "new phone"))
		r = api.get(t, base+"/"+waID)
		require.Len(t, r.JSON(t)["data"].(map[string]any)["threads"], 3, "the new number's thread is the same person's")

		// Bad inputs.
		r = api.post(t, base+"/"+waID+"/merge", map[string]any{"other_contact_id": waID})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "merge with itself: %s", r.Body)
		require.Contains(t, string(r.Body), "other_contact_id")
		r = api.post(t, base+"/"+waID+"/merge", map[string]any{})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "no other_contact_id: %s", r.Body)
		otherAPI := &chAPI{client: api.client, base: api.base, account: f.other.AccountID, headers: auth(f.other.APIKey, f.other.APISecret)}
		r = otherAPI.post(t, "/v1/contacts/"+f.other.AccountID+"/con_23ockggvsyoioz5tuixb2okrfc/merge", map[string]any{"other_contact_id": waID})
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's contact: %s", r.Body)
		r = otherAPI.get(t, "/v1/contacts/"+f.other.AccountID+"/"+waID)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's contact: %s", r.Body)
		r = api.get(t, base+"?cursor=not-a-cursor")
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "a cursor that is not one: %s", r.Body)
		r = api.client.Do(http.MethodPatch, base+"/"+waID, map[string]any{"name": "  "}, api.headers...)
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "an empty name: %s", r.Body)
	})
}
