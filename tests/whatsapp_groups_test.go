package tests

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The second WhatsApp Cloud API number of the groups test: a number whose
// business is no Official Business Account.
const (
	cgAgent   = "+14155550125"
	cgPNID    = "106540352242999"
	cgDisplay = "+1 415-555-0125"
)

// A group on the WhatsApp Cloud API's Groups API through the built binary
// on both databases, against the Cloud API fake: created (the answer says
// it is being created; Meta's group_lifecycle_update webhook makes it
// ready and group.created brings its invite link), read with its invite
// link, renamed and described, a person asks to join and is approved
// (their join seen as group.participants_added), writes in the group
// (message.received in the group thread), gets the agent's group send
// (recipient_type group on the wire), is removed, and the group deleted.
// What Meta does not offer (adding a participant, promoting an admin) is
// answered 403 with the reason and the invite link, nine participants are
// a 422, and a number that is no Official Business Account gets Meta's
// error named.
func TestWhatsAppCloudGroupsEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		f := setupChannels(t, dialect, "Groups")
		plain := whatsappfake.New(t, cgPNID, chWAToken, cgDisplay)
		plain.RefuseGroups()
		var plainNum numberOut
		f.b.cliJSON(t, &plainNum, "numbers", "add", "--account", f.acct.AccountID, "--number", cgAgent,
			"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", cgPNID,
			"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", plain.URL)
		f.serve(t)
		wa, api, hooks := f.wa, f.api, f.hooks
		manage := func(body map[string]any) openapitest.Response {
			t.Helper()
			return api.post(t, "/v1/whatsapp/"+f.acct.AccountID+"/group-management", body)
		}
		sendGroup := func(threadID, text string) openapitest.Response {
			t.Helper()
			return api.post(t, "/v1/messages/group/"+f.acct.AccountID+"/send", map[string]any{"from": chWAAgent, "thread_id": threadID, "content": text})
		}
		postGroupWebhooks := func() {
			t.Helper()
			for _, h := range wa.TakeGroupWebhooks() {
				f.waPost(t, h)
			}
		}

		// Nine participants, or a first message for a group that starts
		// empty: refused before Meta is asked.
		nine := []string{}
		for i := range 9 {
			nine = append(nine, "+1415555020"+string(rune('0'+i)))
		}
		r := manage(map[string]any{"action": "create", "agent_number": chWAAgent, "title": "Too many", "participants": nine})
		requireInvalid(t, r, "participants")
		r = manage(map[string]any{"action": "create", "agent_number": chWAAgent, "title": "Hello", "participants": nine[:1], "initial_message": "hi"})
		requireInvalid(t, r, "initial_message")
		require.Empty(t, wa.GroupCalls(), "Meta was asked nothing")

		// Create: Meta makes the group later.
		r = manage(map[string]any{"action": "create", "agent_number": chWAAgent, "title": "Launch team", "description": "Ships on Friday",
			"participants": nine[:2], "join_approval_mode": "approval_required"})
		require.Equal(t, http.StatusOK, r.StatusCode, "create: %s", r.Body)
		created := r.JSON(t)["data"].(map[string]any)
		requireFields(t, created, map[string]any{"creating": true, "invite_link": nil, "invited": []any{nine[0], nine[1]},
			"participants": []any{chWAAgent}, "admins": []any{chWAAgent}, "title": "Launch team", "description": "Ships on Friday"})
		group := created["thread_id"].(string)
		require.Equal(t, "POST", wa.GroupCalls()[0].Method)
		require.Equal(t, map[string]any{"messaging_product": "whatsapp", "subject": "Launch team", "description": "Ships on Friday",
			"join_approval_mode": "approval_required"}, wa.GroupCalls()[0].Body)
		r = sendGroup(group, "too early")
		requireCode(t, r, http.StatusConflict, "group_not_ready")
		r = manage(map[string]any{"action": "info", "agent_number": chWAAgent, "thread_id": group})
		require.Equal(t, http.StatusOK, r.StatusCode, "info while creating: %s", r.Body)
		require.Equal(t, true, r.JSON(t)["data"].(map[string]any)["creating"])

		// Meta's webhook: the group is made, with its invite link.
		postGroupWebhooks()
		createdEvent := waitGroupEvent(t, hooks, "group.created", group, "created")
		r = manage(map[string]any{"action": "info", "agent_number": chWAAgent, "thread_id": group})
		require.Equal(t, http.StatusOK, r.StatusCode, "info: %s", r.Body)
		info := r.JSON(t)["data"].(map[string]any)
		waGroupID := info["provider_group"].(map[string]any)["group_id"].(string)
		waGroup, ok := wa.Group(waGroupID)
		require.True(t, ok, "the group's Cloud API id: %s", waGroupID)
		link := waGroup.InviteLink
		require.True(t, strings.HasPrefix(link, "https://chat.whatsapp.com/"), link)
		require.Equal(t, link, createdEvent["group"].(map[string]any)["invite_link"], "group.created brings the invite link")
		requireFields(t, info, map[string]any{"creating": false, "invite_link": link})
		requireFields(t, info["provider_group"].(map[string]any), map[string]any{"group_id": waGroupID, "thread_id": group, "subject": "Launch team",
			"description": "Ships on Friday", "join_approval_mode": "approval_required", "participant_count": float64(0), "invite_link": link})
		r = manage(map[string]any{"action": "list", "agent_number": chWAAgent})
		require.Equal(t, http.StatusOK, r.StatusCode, "list: %s", r.Body)
		listed := r.JSON(t)["data"].(map[string]any)["groups"].([]any)
		require.Len(t, listed, 1)
		requireFields(t, listed[0].(map[string]any), map[string]any{"group_id": waGroupID, "thread_id": group, "subject": "Launch team"})

		// Subject and description.
		r = manage(map[string]any{"action": "update_name", "agent_number": chWAAgent, "thread_id": group, "name": "Launch crew"})
		require.Equal(t, http.StatusOK, r.StatusCode, "update_name: %s", r.Body)
		r = manage(map[string]any{"action": "update_description", "agent_number": chWAAgent, "thread_id": group, "description": "Ships on Monday"})
		require.Equal(t, http.StatusOK, r.StatusCode, "update_description: %s", r.Body)
		waGroup, _ = wa.Group(waGroupID)
		require.Equal(t, "Launch crew", waGroup.Subject)
		require.Equal(t, "Ships on Monday", waGroup.Description)
		waitGroupEvent(t, hooks, "group.updated", group, "update_name")
		waitGroupEvent(t, hooks, "group.updated", group, "update_description")

		// A person asks to join; the agent lists and approves the request.
		requestID, asked, err := wa.UserRequestsToJoin(waGroupID, whatsappfake.Person{WaID: "14155550201", UserID: "US.201", Username: "ann"})
		require.NoError(t, err)
		f.waPost(t, asked)
		requested := waitGroupEvent(t, hooks, "group.updated", group, "join_requested")
		requireFields(t, requested["join_request"].(map[string]any), map[string]any{"join_request_id": requestID, "number": "+14155550201", "user_id": "US.201"})
		r = manage(map[string]any{"action": "join_requests", "agent_number": chWAAgent, "thread_id": group})
		require.Equal(t, http.StatusOK, r.StatusCode, "join_requests: %s", r.Body)
		open := r.JSON(t)["data"].(map[string]any)["join_requests"].([]any)
		require.Len(t, open, 1)
		requireFields(t, open[0].(map[string]any), map[string]any{"join_request_id": requestID, "number": "+14155550201", "user_id": "US.201", "username": "ann"})
		r = manage(map[string]any{"action": "approve_join_requests", "agent_number": chWAAgent, "thread_id": group, "join_requests": []string{requestID}})
		require.Equal(t, http.StatusOK, r.StatusCode, "approve: %s", r.Body)
		postGroupWebhooks()
		joined := waitGroupEvent(t, hooks, "group.participants_added", group, "joined")
		require.Equal(t, []any{"+14155550201"}, joined["participants"])
		require.Contains(t, api.threadParticipants(t, group), "+14155550201")

		// She writes in the group; the agent answers the group.
		f.waPost(t, whatsappfake.GroupMessage(chWAPNID, chWADisplay, waGroupID, "14155550201", "Ann", "wamid.grp-1", "Hi all"))
		inGroup := api.recent(t, group)[0]
		requireFields(t, inGroup, map[string]any{"content": "Hi all", "from": "+14155550201", "thread_id": group})
		hooks.waitOne(t, "message.received", inGroup["message_id"].(string))
		r = sendGroup(group, "Welcome, Ann")
		require.Equal(t, http.StatusOK, r.StatusCode, "group send: %s", r.Body)
		api.waitStatus(t, r.JSON(t)["message_id"].(string), "sent")
		sends := wa.Sends()
		require.Equal(t, map[string]any{"messaging_product": "whatsapp", "recipient_type": "group", "to": waGroupID, "type": "text",
			"text": map[string]any{"preview_url": false, "body": "Welcome, Ann"}}, sends[len(sends)-1])

		// What Meta does not offer, with what to do instead.
		r = manage(map[string]any{"action": "add_participants", "agent_number": chWAAgent, "thread_id": group, "participants": []string{"+14155550202"}})
		requireCode(t, r, http.StatusForbidden, "use_invite_link")
		require.Contains(t, r.JSON(t)["message"], link, "the refusal hands out the invite link")
		require.Equal(t, link, r.JSON(t)["invite_link"])
		r = manage(map[string]any{"action": "promote_admin", "agent_number": chWAAgent, "thread_id": group, "participants": []string{"+14155550201"}})
		requireCode(t, r, http.StatusForbidden, "admin_roles_fixed")
		r = manage(map[string]any{"action": "add_participants", "agent_number": chWAAgent, "thread_id": group, "participants": nine[1:]})
		requireInvalid(t, r, "participants")

		// Removed, then the group deleted.
		r = manage(map[string]any{"action": "remove_participants", "agent_number": chWAAgent, "thread_id": group, "participants": []string{"+14155550201"}})
		require.Equal(t, http.StatusOK, r.StatusCode, "remove: %s", r.Body)
		waGroup, _ = wa.Group(waGroupID)
		require.Empty(t, waGroup.Participants)
		require.Equal(t, []any{"+14155550201"}, waitGroupEvent(t, hooks, "group.participants_removed", group, "remove_participants")["participants"])
		r = manage(map[string]any{"action": "delete", "agent_number": chWAAgent, "thread_id": group})
		require.Equal(t, http.StatusOK, r.StatusCode, "delete: %s", r.Body)
		waGroup, _ = wa.Group(waGroupID)
		require.True(t, waGroup.Deleted)
		postGroupWebhooks()
		waitGroupEvent(t, hooks, "group.left", group, "delete")
		r = sendGroup(group, "anyone?")
		requireCode(t, r, http.StatusConflict, "not_group_member")
		for _, ev := range hooks.all() {
			require.False(t, ev["thread_id"] == group && (ev["action"] == "settings" || ev["action"] == "deleted" || ev["action"] == "removed"),
				"Meta's reports of the agent's own changes add no second event: %v", ev)
		}

		// A number that is no Official Business Account: Meta's error, named.
		r = manage(map[string]any{"action": "create", "agent_number": cgAgent, "title": "Not allowed", "participants": nine[:1]})
		requireCode(t, r, http.StatusForbidden, "provider_refused")
		msg := r.JSON(t)["message"].(string)
		require.True(t, strings.Contains(msg, "whatsapp 10") && strings.Contains(msg, "Official Business Account"), msg)
	})
}

// requireInvalid requires a 422 naming the body field.
func requireInvalid(t *testing.T, r openapitest.Response, field string) {
	t.Helper()
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "want a 422 at %s: %s", field, r.Body)
	for _, it := range r.JSON(t)["detail"].([]any) {
		if loc := it.(map[string]any)["loc"].([]any); len(loc) >= 2 && loc[1] == field {
			return
		}
	}
	t.Fatalf("no error at %s: %s", field, r.Body)
}

// requireCode requires an error answer of status and code.
func requireCode(t *testing.T, r openapitest.Response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.StatusCode, "want %d %s: %s", status, code, r.Body)
	require.Equal(t, code, r.JSON(t)["code"], "body: %s", r.Body)
}

// waitGroupEvent waits for the event of type typ about the group thread
// with the action, and requires it to be the only one.
func waitGroupEvent(t *testing.T, hooks *hookReceiver, typ, thread, action string) map[string]any {
	t.Helper()
	find := func() []map[string]any {
		var out []map[string]any
		for _, ev := range hooks.all() {
			if ev["event"] == typ && ev["thread_id"] == thread && ev["action"] == action {
				out = append(out, ev)
			}
		}
		return out
	}
	ok := assertEventually(func() bool { return len(find()) > 0 })
	require.True(t, ok, "the webhook should receive %s (%s) for %s; it has %v", typ, action, thread, hooks.all())
	got := find()
	require.Len(t, got, 1, "one %s (%s) event", typ, action)
	return got[0]
}

// threadParticipants are a thread's participants, as its details list them.
func (a *chAPI) threadParticipants(t *testing.T, threadID string) []any {
	t.Helper()
	r := a.get(t, "/v1/messages/threads/"+a.account+"/get-details/"+threadID)
	require.Equal(t, http.StatusOK, r.StatusCode, "thread: %s", r.Body)
	return r.JSON(t)["data"].(map[string]any)["participants"].([]any)
}
