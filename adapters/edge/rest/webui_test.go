package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// A1Base's save/web-ui records the messages of the customer's own web chat
// in a web-ui thread per chat, once per external message id, visible in
// the thread APIs and sent nowhere; a send cannot address that thread.
func TestSaveWebUI(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		path := "/v1/messages/" + b.account + "/save/web-ui"
		// As A1Base's template sends it (lib/a1base-chat-context/web-ui-sync.ts).
		user := map[string]any{"external_thread_id": "chat-42", "content": "What are your hours?", "service": "web-ui",
			"phone_number": agentA, "external_message_id": "m-1", "from_agent": false, "sender_number": "",
			"message_type": "text", "timestamp": 1764320000000}
		before := b.counts(t)
		r := b.post(path, user)
		require.Equal(t, http.StatusOK, r.StatusCode, "save: %s", r.Body)
		saved := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, "web-ui", saved["service"])
		require.Equal(t, "inbound", saved["direction"])
		require.Equal(t, "chat-42", saved["from"])
		require.Equal(t, "2025-11-28T08:53:20Z", saved["date_sent"], "the chat's timestamp is kept")
		thread := saved["thread_id"].(string)

		r = b.post(path, user)
		require.Equal(t, http.StatusOK, r.StatusCode, "again: %s", r.Body)
		require.Equal(t, saved["message_id"], r.JSON(t)["data"].(map[string]any)["message_id"], "recorded once")

		agent := edit(user, "external_message_id", "m-2", "from_agent", true, "sender_number", agentA, "content", "Nine to five.", "timestamp", nil)
		r = b.post(path, agent)
		require.Equal(t, http.StatusOK, r.StatusCode, "agent: %s", r.Body)
		reply := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, thread, reply["thread_id"], "the same chat, the same thread")
		require.Equal(t, "outbound-api", reply["direction"])
		require.Equal(t, "sent", reply["status"])
		require.Equal(t, agentA, reply["from"])

		after := b.counts(t)
		require.Equal(t, before.messages+2, after.messages)
		require.Equal(t, before.jobs, after.jobs, "nothing is queued: the web chat showed the messages itself")
		msgs := b.recent(t, thread)
		require.Len(t, msgs, 2)
		r = b.get("/v1/messages/threads/" + b.account + "/get-details/" + thread)
		require.Equal(t, http.StatusOK, r.StatusCode, "thread: %s", r.Body)
		require.Contains(t, string(r.Body), `"web-ui"`)

		// Another chat is another thread; another account sees none of it.
		r = b.post(path, edit(user, "external_thread_id", "chat-43", "external_message_id", "m-3"))
		require.Equal(t, http.StatusOK, r.StatusCode, "another chat: %s", r.Body)
		require.NotEqual(t, thread, r.JSON(t)["data"].(map[string]any)["thread_id"])
		r = b.client.Do(http.MethodGet, "/v1/messages/threads/"+b.other+"/get-details/"+thread, nil, b.otherAuth()...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account: %s", r.Body)
		r = b.client.Do(http.MethodPost, "/v1/messages/"+b.other+"/save/web-ui", user, b.otherAuth()...)
		require.Equal(t, http.StatusOK, r.StatusCode, "the other account's own chat: %s", r.Body)
		require.NotEqual(t, saved["message_id"], r.JSON(t)["data"].(map[string]any)["message_id"], "ids are per account")

		// Nothing sends on web-ui.
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentA, "to": "chat-42", "service": "web-ui", "content": "hi"})
		requireInvalid(t, r, "body", "service")

		// Bad input.
		requireInvalid(t, b.post(path, edit(user, "external_thread_id", nil)), "body", "external_thread_id")
		requireInvalid(t, b.post(path, edit(user, "external_message_id", "")), "body", "external_message_id")
		requireInvalid(t, b.post(path, edit(user, "content", "  ")), "body", "content")
		requireInvalid(t, b.post(path, edit(user, "content", strings.Repeat("x", 4097))), "body", "content")
		requireInvalid(t, b.post(path, edit(user, "service", "whatsapp")), "body", "service")
		requireInvalid(t, b.post(path, edit(user, "phone_number", "agent")), "body", "phone_number")
		requireInvalid(t, b.post(path, edit(user, "timestamp", -5)), "body", "timestamp")
		requireInvalid(t, b.post(path, edit(user, "from_agent", "yes")), "body", "from_agent")
		requireInvalid(t, b.post(path, edit(user, "external_thread_id", strings.Repeat("c", 201))), "body", "external_thread_id")
	})
}
