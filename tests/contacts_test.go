package tests

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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

		// A system message is stored (kind system) and delivered.
		f.waPost(t, whatsappfake.SystemMessage(chWAPNID, chWADisplay, "14155550131", "US.77", "wamid.c-4", "user_changed_number",
			"User changed from 14155550131 to 14155550132", "14155550132", "US.78"))
		sys := api.recent(t, longMsg["thread_id"].(string))[0]
		requireFields(t, sys, map[string]any{"message_type": "system", "content": "User changed from 14155550131 to 14155550132"})
		requireFields(t, hooks.waitOne(t, "message.received", sys["message_id"].(string)), map[string]any{"message_type": "system",
			"message_content": map[string]any{"text": "User changed from 14155550131 to 14155550132"}})
	})
}
