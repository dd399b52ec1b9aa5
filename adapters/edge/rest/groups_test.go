package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/ident"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// More numbers of the group tests: a third user, and agent numbers on
// providers other than the sandbox, added by the tests that need them.
const (
	userC      = "+14155550113"
	agentCloud = "+14155550105" // whatsapp, provider whatsapp-cloud
	agentTGBot = "+14155550106" // telegram, provider telegram
)

// groupPaths are the two paths of the group-management route.
func (b *msgBundle) groupPaths() []string {
	return []string{"/v1/whatsapp/" + b.account + "/group-management", "/v1/group-management/" + b.account}
}

// manage posts a group action on the path with index i (mod 2), so that
// consecutive calls use both paths. A body the server accepts must be
// one the document's request schema accepts too.
func (b *msgBundle) manage(t *testing.T, i int, body map[string]any, extra ...string) openapitest.Response {
	t.Helper()
	r := b.post(b.groupPaths()[i%2], body, extra...)
	if r.StatusCode == http.StatusOK {
		require.NoError(t, checkGroupRequestSchema(t, body), "the server accepted a body the document refuses")
	}
	return r
}

// groupOK checks a successful group action and returns its data.
func groupOK(t *testing.T, r openapitest.Response, message string) map[string]any {
	t.Helper()
	require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
	body := r.JSON(t)
	require.Equal(t, "success", body["status"])
	require.Equal(t, message, body["message"])
	return body["data"].(map[string]any)
}

// checkGroupRequestSchema validates a body against the documented
// GroupManagementRequest schema, as JSON Schema 2020-12.
func checkGroupRequestSchema(t *testing.T, body map[string]any) error {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	schema := openapitest.Document(t).Components.Schemas["GroupManagementRequest"].Value
	return schema.VisitJSON(v, openapi3.EnableJSONSchema2020())
}

// threadInfo reads a thread's details through the API.
func (b *msgBundle) threadInfo(t *testing.T, id string) map[string]any {
	t.Helper()
	r := b.get("/v1/messages/threads/" + b.account + "/get-details/" + id)
	require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
	return r.JSON(t)
}

// eventTypes lists the types of a thread's group events, in order (its
// message events are the webhooks' business).
func (b *msgBundle) eventTypes(t *testing.T, threadID string) []string {
	t.Helper()
	var types []string
	require.NoError(t, b.db.Bun().NewRaw("SELECT type FROM events WHERE thread_id = ? AND type LIKE 'group.%' ORDER BY seq", threadID).Scan(context.Background(), &types))
	return types
}

// lastEvent decodes the payload of a thread's newest group event.
func (b *msgBundle) lastEvent(t *testing.T, threadID string) map[string]any {
	t.Helper()
	var payload string
	require.NoError(t, b.db.Bun().NewRaw("SELECT payload FROM events WHERE thread_id = ? AND type LIKE 'group.%' ORDER BY seq DESC LIMIT 1", threadID).Scan(context.Background(), &payload))
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(payload), &v))
	return v
}

// groupRow and memberRow are what a group change may alter.
type groupRow struct {
	ID           string    `bun:"id"`
	Name         string    `bun:"name"`
	Description  string    `bun:"description"`
	PictureURL   string    `bun:"picture_url"`
	InviteCode   string    `bun:"invite_code"`
	Announcement bool      `bun:"announcement"`
	Locked       bool      `bun:"locked"`
	UpdatedAt    time.Time `bun:"updated_at"`
}

type memberRow struct {
	ThreadID string `bun:"thread_id"`
	Address  string `bun:"address"`
	Admin    bool   `bun:"admin"`
	IsAgent  bool   `bun:"is_agent"`
}

// groupSnapshot is everything group management may change: every group's
// columns, every member, the event log, messages and delivery jobs.
type groupSnapshot struct {
	groups  []groupRow
	members []memberRow
	events  int
	counts  counts
}

func (b *msgBundle) snapshot(t *testing.T) groupSnapshot {
	t.Helper()
	ctx := context.Background()
	var s groupSnapshot
	require.NoError(t, b.db.Bun().NewRaw("SELECT id, name, description, picture_url, COALESCE(invite_code, '') AS invite_code, announcement, locked, updated_at FROM threads WHERE type = 'group' ORDER BY id").Scan(ctx, &s.groups))
	require.NoError(t, b.db.Bun().NewRaw("SELECT thread_id, address, admin, is_agent FROM thread_participants ORDER BY thread_id, address").Scan(ctx, &s.members))
	require.NoError(t, b.db.Bun().NewRaw("SELECT COUNT(*) FROM events").Scan(ctx, &s.events))
	s.counts = b.counts(t)
	return s
}

// inviteCodeOf reads a group's invite code from the database.
func (b *msgBundle) inviteCodeOf(t *testing.T, threadID string) string {
	t.Helper()
	var code string
	require.NoError(t, b.db.Bun().NewRaw("SELECT invite_code FROM threads WHERE id = ?", threadID).Scan(context.Background(), &code))
	return code
}

func TestGroupManagementActions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		grpSend := func(from, thread, text string) openapitest.Response {
			return b.post("/v1/messages/group/"+b.account+"/send", map[string]any{"from": from, "thread_id": thread, "content": text})
		}
		var wantEvents []string
		step := 0
		act := func(body map[string]any, message string) map[string]any {
			t.Helper()
			step++
			return groupOK(t, b.manage(t, step, body), message)
		}

		// create, without a first message, with an Idempotency-Key.
		create := map[string]any{"action": "create", "agent_number": agentA, "title": " Team ", "participants": []string{userA, userB}}
		r := b.manage(t, 0, create, "Idempotency-Key", "create-team")
		data := groupOK(t, r, "group created")
		group := data["thread_id"].(string)
		require.True(t, ident.Valid(ident.Thread, group), group)
		invite := data["invite_code"].(string)
		require.Len(t, invite, 22)
		require.Equal(t, map[string]any{
			"thread_id": group, "title": "Team", "participants": []any{agentA, userA, userB}, "admins": []any{agentA},
			"description": "", "picture_url": "", "invite_code": invite, "announcement": false, "locked": false, "service": "whatsapp",
			"invite_link": nil, "creating": false,
		}, data)
		wantEvents = append(wantEvents, "group.created")
		info := b.threadInfo(t, group)
		require.Equal(t, "group", info["thread_type"])
		require.Equal(t, "Team", info["chat_name"])
		require.Equal(t, []any{agentA, userA, userB}, info["participants"])
		require.Empty(t, b.recent(t, group), "no first message was asked for")

		// The same key and body answer the first response again and
		// store nothing; the key with another body or path is refused.
		again := b.manage(t, 0, create, "Idempotency-Key", "create-team")
		require.Equal(t, http.StatusOK, again.StatusCode, "body: %s", again.Body)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Equal(t, string(r.Body), string(again.Body))
		requireError(t, b.manage(t, 0, edit(create, "title", "Other"), "Idempotency-Key", "create-team"), 409, "idempotency_key_reused")
		requireError(t, b.manage(t, 1, create, "Idempotency-Key", "create-team"), 409, "idempotency_key_reused")
		var teams int
		require.NoError(t, b.db.Bun().NewRaw("SELECT COUNT(*) FROM threads WHERE type = 'group' AND account_id = ?", b.account).Scan(context.Background(), &teams))
		require.Equal(t, 1, teams, "one group stored")

		// create with a first message, on the other path: it is the
		// group's first message, and it is delivered.
		data = groupOK(t, b.manage(t, 1, map[string]any{"action": "create", "agent_number": agentA, "title": "Launch",
			"participants": []string{userC}, "initial_message": "Welcome aboard"}), "group created")
		launch := data["thread_id"].(string)
		require.NotEqual(t, group, launch)
		require.NotEqual(t, invite, data["invite_code"], "each group has its own invite code")
		msgs := b.recent(t, launch)
		require.Len(t, msgs, 1)
		first := msgs[0].(map[string]any)
		require.Equal(t, "Welcome aboard", first["content"])
		require.Equal(t, agentA, first["from"])
		require.Equal(t, "outbound-api", first["direction"])
		details := b.waitStatus(t, first["message_id"].(string), "delivered")
		require.Equal(t, launch, details["chat_id"])
		require.Equal(t, "Launch", details["chat_name"])
		require.Equal(t, "", details["to"])
		require.Equal(t, []string{"group.created"}, b.eventTypes(t, launch))

		// update_name, update_description, update_picture.
		data = act(map[string]any{"action": "update_name", "agent_number": agentA, "thread_id": group, "name": " Team A "}, "group name updated")
		require.Equal(t, "Team A", data["title"])
		require.Equal(t, "Team A", b.threadInfo(t, group)["chat_name"])
		wantEvents = append(wantEvents, "group.updated")

		data = act(map[string]any{"action": "update_description", "agent_number": agentA, "thread_id": group, "description": "Where the team talks"}, "group description updated")
		require.Equal(t, "Where the team talks", data["description"])
		wantEvents = append(wantEvents, "group.updated")

		picture := b.media.URL + "/image.png"
		data = act(map[string]any{"action": "update_picture", "agent_number": agentA, "thread_id": group, "image_url": picture}, "group picture updated")
		require.Equal(t, picture, data["picture_url"])
		require.Equal(t, "Team A", data["title"], "other fields are kept")
		require.Equal(t, "Where the team talks", data["description"])
		wantEvents = append(wantEvents, "group.updated")

		// add_participants and remove_participants.
		data = act(map[string]any{"action": "add_participants", "agent_number": agentA, "thread_id": group, "participants": []string{userC}}, "participants added")
		require.ElementsMatch(t, []any{agentA, userA, userB, userC}, data["participants"])
		require.Equal(t, []any{agentA, userA, userB, userC}, b.threadInfo(t, group)["participants"])
		require.Equal(t, []any{userC}, b.lastEvent(t, group)["participants"])
		wantEvents = append(wantEvents, "group.participants_added")

		data = act(map[string]any{"action": "remove_participants", "agent_number": agentA, "thread_id": group, "participants": []string{userB}}, "participants removed")
		require.ElementsMatch(t, []any{agentA, userA, userC}, data["participants"])
		require.Equal(t, []any{agentA, userA, userC}, b.threadInfo(t, group)["participants"])
		wantEvents = append(wantEvents, "group.participants_removed")

		// promote_admin and demote_admin.
		data = act(map[string]any{"action": "promote_admin", "agent_number": agentA, "thread_id": group, "participants": []string{userA, userC}}, "participants promoted to admin")
		require.ElementsMatch(t, []any{agentA, userA, userC}, data["admins"])
		wantEvents = append(wantEvents, "group.admins_changed")
		data = act(map[string]any{"action": "demote_admin", "agent_number": agentA, "thread_id": group, "participants": []string{userA, userC}}, "participants demoted from admin")
		require.Equal(t, []any{agentA}, data["admins"])
		wantEvents = append(wantEvents, "group.admins_changed")

		// join_group by invite code, with the account's second number: it
		// is a member, not an admin, and may send.
		data = act(map[string]any{"action": "join_group", "agent_number": agentB, "invite_code": invite}, "joined the group")
		require.Equal(t, group, data["thread_id"])
		require.ElementsMatch(t, []any{agentA, agentB, userA, userC}, data["participants"])
		require.Equal(t, []any{agentA}, data["admins"])
		require.Equal(t, []any{agentA, agentB, userA, userC}, b.threadInfo(t, group)["participants"])
		ev := b.lastEvent(t, group)
		require.Equal(t, "group.participants_added", ev["event"])
		require.Equal(t, agentB, ev["a1_phone_number"])
		require.Equal(t, []any{agentB}, ev["participants"])
		wantEvents = append(wantEvents, "group.participants_added")
		r = grpSend(agentB, group, "hi from B")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		requireError(t, b.manage(t, 0, map[string]any{"action": "join", "agent_number": agentB, "thread_id": group}), 409, "already_member")

		// join with a thread id, the other spelling.
		data = act(map[string]any{"action": "join", "agent_number": agentB, "thread_id": launch}, "joined the group")
		require.Equal(t, launch, data["thread_id"])
		require.ElementsMatch(t, []any{agentA, agentB, userC}, data["participants"])
		require.Equal(t, []string{"group.created", "group.participants_added"}, b.eventTypes(t, launch))

		// A member that is not an admin manages no members.
		requireError(t, b.manage(t, 0, map[string]any{"action": "add_participants", "agent_number": agentB, "thread_id": group, "participants": []string{userB}}), 403, "not_group_admin")
		requireError(t, b.manage(t, 1, map[string]any{"action": "promote_admin", "agent_number": agentB, "thread_id": group, "participants": []string{agentB}}), 403, "not_group_admin")

		// announcement: only admins send.
		data = act(map[string]any{"action": "update_settings", "agent_number": agentA, "thread_id": group, "setting": "announcement"}, "group setting announcement applied")
		require.Equal(t, true, data["announcement"])
		require.Equal(t, false, data["locked"])
		wantEvents = append(wantEvents, "group.updated")
		requireError(t, grpSend(agentB, group, "may I?"), 403, "admins_only")
		requireError(t, b.post("/v1/group/"+b.account+"/send", map[string]any{"from": agentB, "thread_id": group, "message": "may I?"}), 403, "admins_only")
		requireError(t, b.post("/v1/send/"+b.account, map[string]any{"from": agentB, "type": "group", "thread_id": group, "content": map[string]any{"text": "may I?"}}), 403, "admins_only")
		r = grpSend(agentA, group, "admins may")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		b.waitStatus(t, r.JSON(t)["message_id"].(string), "delivered")

		// locked: only admins edit.
		data = act(map[string]any{"action": "update_settings", "agent_number": agentA, "thread_id": group, "setting": "locked"}, "group setting locked applied")
		require.Equal(t, true, data["locked"])
		require.Equal(t, true, data["announcement"], "settings are independent")
		wantEvents = append(wantEvents, "group.updated")
		for i, body := range []map[string]any{
			{"action": "update_name", "agent_number": agentB, "thread_id": group, "name": "Hijacked"},
			{"action": "update_description", "agent_number": agentB, "thread_id": group, "description": "x"},
			{"action": "update_picture", "agent_number": agentB, "thread_id": group, "image_url": picture},
			{"action": "update_settings", "agent_number": agentB, "thread_id": group, "setting": "unlocked"},
		} {
			requireError(t, b.manage(t, i, body), 403, "group_locked")
		}
		require.Equal(t, "Team A", b.threadInfo(t, group)["chat_name"])

		// not_announcement and unlocked restore what members may do.
		data = act(map[string]any{"action": "update_settings", "agent_number": agentA, "thread_id": group, "setting": "not_announcement"}, "group setting not_announcement applied")
		require.Equal(t, false, data["announcement"])
		data = act(map[string]any{"action": "update_settings", "agent_number": agentA, "thread_id": group, "setting": "unlocked"}, "group setting unlocked applied")
		require.Equal(t, false, data["locked"])
		wantEvents = append(wantEvents, "group.updated", "group.updated")
		r = grpSend(agentB, group, "back again")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		data = act(map[string]any{"action": "update_name", "agent_number": agentB, "thread_id": group, "name": "Team B"}, "group name updated")
		require.Equal(t, "Team B", data["title"])
		require.Equal(t, "Team B", b.threadInfo(t, group)["chat_name"])
		wantEvents = append(wantEvents, "group.updated")

		// leave: the agent number can no longer send or act; it can
		// join again with the invite code.
		data = act(map[string]any{"action": "leave", "agent_number": agentB, "thread_id": group}, "left the group")
		require.ElementsMatch(t, []any{agentA, userA, userC}, data["participants"])
		require.Equal(t, []any{agentA, userA, userC}, b.threadInfo(t, group)["participants"])
		wantEvents = append(wantEvents, "group.left")
		requireError(t, grpSend(agentB, group, "still here?"), 409, "not_group_member")
		requireError(t, b.manage(t, 0, map[string]any{"action": "update_name", "agent_number": agentB, "thread_id": group, "name": "x"}), 409, "not_group_member")
		requireError(t, b.manage(t, 1, map[string]any{"action": "leave", "agent_number": agentB, "thread_id": group}), 409, "not_group_member")
		r = grpSend(agentA, group, "the admin stays")
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)

		require.Equal(t, wantEvents, b.eventTypes(t, group))
		ev = b.lastEvent(t, group)
		require.Equal(t, "leave", ev["action"])
		require.Equal(t, group, ev["thread_id"])
		require.Equal(t, "group", ev["thread_type"])
		require.Equal(t, b.account, ev["a1_account_id"])
		require.Equal(t, "Team B", ev["group"].(map[string]any)["title"])
	})
}

// badGroupInput is a group action that must be refused and change nothing.
type badGroupInput struct {
	name   string
	body   any
	status int
	// code is the error code; for a 422, loc is where the error is, after
	// "body".
	code string
	loc  []any
	// schema: the document's request schema refuses the body too.
	schema bool
}

func TestGroupManagementBadInput(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		r := b.manage(t, 0, map[string]any{"action": "create", "agent_number": agentA, "title": "Team", "participants": []string{userA, userB}})
		group := groupOK(t, r, "group created")["thread_id"].(string)
		r = b.manage(t, 1, map[string]any{"action": "create", "agent_number": agentA, "title": "Solo", "participants": []string{userA}})
		solo := groupOK(t, r, "group created")["thread_id"].(string)
		// agentB is a member of group, not an admin; not a member of solo.
		groupOK(t, b.manage(t, 0, map[string]any{"action": "join", "agent_number": agentB, "thread_id": group}), "joined the group")
		individual := b.inbound(t, "whatsapp", userA, agentA, "hi")
		r = b.client.Do(http.MethodPost, "/v1/sandbox/"+b.other+"/groups", map[string]any{"service": "whatsapp", "agent_number": agentOther, "title": "Theirs", "participants": []string{userA}}, b.otherAuth()...)
		require.Equal(t, http.StatusCreated, r.StatusCode, "body: %s", r.Body)
		theirs := r.JSON(t)["data"].(map[string]any)["thread_id"].(string)
		theirCode := b.inviteCodeOf(t, theirs)
		missing := "thr_" + strings.Repeat("a", 26)
		// A full group: the agent number and 1023 others.
		var others []string
		for i := range domain.MaxGroupMembers - 1 {
			others = append(others, fmt.Sprintf("+1415800%04d", i))
		}
		r = b.post(b.groupPaths()[0], map[string]any{"action": "create", "agent_number": agentA, "title": "Full", "participants": others})
		full := groupOK(t, r, "group created")
		require.Len(t, full["participants"], domain.MaxGroupMembers)

		var many []string
		for i := range domain.MaxGroupMembers + 1 {
			many = append(many, fmt.Sprintf("+1415600%04d", i))
		}
		name := map[string]any{"action": "update_name", "agent_number": agentA, "thread_id": group, "name": "New"}
		add := map[string]any{"action": "add_participants", "agent_number": agentA, "thread_id": group, "participants": []string{userC}}
		create := map[string]any{"action": "create", "agent_number": agentA, "title": "T", "participants": []string{userC}}
		picture := map[string]any{"action": "update_picture", "agent_number": agentA, "thread_id": group, "image_url": b.media.URL + "/image.png"}
		settings := map[string]any{"action": "update_settings", "agent_number": agentA, "thread_id": group, "setting": "locked"}
		invalid := func(name string, body any, schema bool, loc ...any) badGroupInput {
			return badGroupInput{name: name, body: body, status: 422, loc: loc, schema: schema}
		}
		refused := func(name string, body any, status int, code string) badGroupInput {
			return badGroupInput{name: name, body: body, status: status, code: code}
		}
		cases := []badGroupInput{
			invalid("unknown action", edit(name, "action", "rename"), true, "action"),
			invalid("missing action", edit(name, "action", nil), true, "action"),
			invalid("action not a string", edit(name, "action", 3), true, "action"),
			invalid("missing agent_number", edit(name, "agent_number", nil), true, "agent_number"),
			invalid("agent_number without +", edit(name, "agent_number", strings.TrimPrefix(agentA, "+")), true, "agent_number"),
			invalid("missing thread_id", edit(name, "thread_id", nil), true, "thread_id"),
			invalid("empty thread_id", edit(name, "thread_id", ""), true, "thread_id"),
			invalid("leave without thread_id", map[string]any{"action": "leave", "agent_number": agentA}, true, "thread_id"),
			invalid("join without thread_id or invite_code", map[string]any{"action": "join_group", "agent_number": agentB}, true, "thread_id"),
			invalid("unknown field", edit(name, "admins", []string{agentA}), true, "admins"),
			invalid("missing name", edit(name, "name", nil), true, "name"),
			invalid("blank name", edit(name, "name", "  "), false, "name"),
			invalid("name too long", edit(name, "name", strings.Repeat("n", 101)), true, "name"),
			invalid("description too long", map[string]any{"action": "update_description", "agent_number": agentA, "thread_id": group, "description": strings.Repeat("d", 2049)}, true, "description"),
			invalid("missing participants", edit(add, "participants", nil), true, "participants"),
			invalid("empty participants", edit(add, "participants", []string{}), true, "participants"),
			invalid("duplicate participants", edit(add, "participants", []string{userC, userC}), true, "participants", 1),
			invalid("more than 1024 participants", edit(add, "participants", many), true, "participants"),
			invalid("participant not E.164", edit(add, "participants", []string{userC, "4155550113"}), true, "participants", 1),
			invalid("participants not a list", edit(add, "participants", userC), true, "participants"),
			invalid("adding a member", edit(add, "participants", []string{userA}), false, "participants", 0),
			invalid("removing a non-member", edit(add, "action", "remove_participants"), false, "participants", 0),
			invalid("promoting a non-member", edit(add, "action", "promote_admin"), false, "participants", 0),
			invalid("demoting a non-member", edit(add, "action", "demote_admin"), false, "participants", 0),
			invalid("invalid setting", edit(settings, "setting", "public"), true, "setting"),
			invalid("missing setting", edit(settings, "setting", nil), true, "setting"),
			invalid("create without title", edit(create, "title", nil), true, "title"),
			invalid("create with a blank title", edit(create, "title", " "), false, "title"),
			invalid("create without participants", edit(create, "participants", nil), true, "participants"),
			invalid("create with empty participants", edit(create, "participants", []string{}), true, "participants"),
			invalid("create with more than 1024 participants", edit(create, "participants", many), true, "participants"),
			invalid("create listing the agent number", edit(create, "participants", []string{agentA}), false, "participants", 0),
			invalid("create with duplicates", edit(create, "participants", []string{userC, userA, userC}), true, "participants", 2),
			invalid("initial_message too long", edit(create, "initial_message", strings.Repeat("m", 4097)), true, "initial_message"),
			invalid("blank initial_message", edit(create, "initial_message", "  "), false, "initial_message"),
			invalid("image_url not http", edit(picture, "image_url", "ftp://cdn.example.com/a.png"), false, "image_url"),
			invalid("image_url not an image", edit(picture, "image_url", b.media.URL+"/notes.png"), false, "image_url"),
			invalid("image_url over 5 MB", edit(picture, "image_url", b.media.URL+"/big.png"), false, "image_url"),
			invalid("image_url missing", edit(picture, "image_url", b.media.URL+"/missing.png"), false, "image_url"),
			invalid("malformed JSON", `{"action": "create",`, true, nil...),
			refused("another account's thread", edit(name, "thread_id", theirs), 404, "not_found"),
			refused("a missing thread", edit(name, "thread_id", missing), 404, "not_found"),
			refused("a malformed thread id", edit(name, "thread_id", "nope"), 404, "not_found"),
			refused("an individual thread", edit(name, "thread_id", individual), 404, "not_found"),
			refused("an unknown invite code", map[string]any{"action": "join_group", "agent_number": agentB, "invite_code": "nope"}, 404, "not_found"),
			refused("another account's invite code", map[string]any{"action": "join_group", "agent_number": agentB, "invite_code": theirCode}, 404, "not_found"),
			refused("a non-admin adds participants", edit(add, "agent_number", agentB), 403, "not_group_admin"),
			refused("a non-admin removes participants", edit(add, "agent_number", agentB, "action", "remove_participants", "participants", []string{userA}), 403, "not_group_admin"),
			refused("a non-admin demotes the admin", edit(add, "agent_number", agentB, "action", "demote_admin", "participants", []string{agentA}), 403, "not_group_admin"),
			refused("another account's agent number", edit(name, "agent_number", agentOther), 403, "number_not_permitted"),
			refused("another account's agent number creates", edit(create, "agent_number", agentOther), 403, "number_not_permitted"),
			refused("a disabled agent number", edit(name, "agent_number", agentDisabled), 403, "number_not_permitted"),
			refused("an unknown agent number", edit(name, "agent_number", "+14155550177"), 403, "number_not_permitted"),
			refused("a number on another service", edit(name, "agent_number", agentTG), 403, "number_not_permitted"),
			refused("a Telegram number creates", edit(create, "agent_number", agentTG), 403, "number_not_permitted"),
			refused("a non-member acts", edit(name, "agent_number", agentB, "thread_id", solo), 409, "not_group_member"),
			refused("a non-member leaves", map[string]any{"action": "leave", "agent_number": agentB, "thread_id": solo}, 409, "not_group_member"),
			refused("a member joins", map[string]any{"action": "join", "agent_number": agentA, "thread_id": group}, 409, "already_member"),
			refused("a non-member adds participants", edit(add, "agent_number", agentB, "thread_id", solo), 409, "not_group_member"),
			refused("joining a full group", map[string]any{"action": "join_group", "agent_number": agentB, "invite_code": full["invite_code"]}, 409, "group_full"),
			invalid("adding to a full group", edit(add, "thread_id", full["thread_id"]), false, "participants"),
		}

		before := b.snapshot(t)
		for i, c := range cases {
			r := b.post(b.groupPaths()[i%2], c.body)
			require.Equal(t, c.status, r.StatusCode, "%s: %s", c.name, r.Body)
			if c.status == http.StatusUnprocessableEntity {
				requireInvalid(t, r, append([]any{"body"}, c.loc...)...)
			} else {
				requireError(t, r, c.status, c.code)
			}
			if m, ok := c.body.(map[string]any); ok && c.schema {
				require.Error(t, checkGroupRequestSchema(t, m), "%s: the document's schema refuses it too", c.name)
			}
		}

		// Another account's group answers exactly like a missing one.
		for i, body := range []map[string]any{name, add, {"action": "leave", "agent_number": agentA}} {
			got := b.manage(t, i, edit(body, "thread_id", theirs))
			want := b.manage(t, i, edit(body, "thread_id", missing))
			requireError(t, got, 404, "not_found")
			require.Equal(t, string(want.Body), string(got.Body))
		}

		// Credentials, media type and size of the body.
		for _, path := range b.groupPaths() {
			requireError(t, b.client.Do(http.MethodPost, path, name, b.otherAuth()...), 403, "account_mismatch")
			requireError(t, b.client.Do(http.MethodPost, path, name), 401, "unauthorized")
			requireError(t, b.client.Do(http.MethodPost, path, `{"action":"leave"}`, b.auth("Content-Type", "text/plain")...), 415, "unsupported_media_type")
			requireError(t, b.post(path, edit(name, "name", strings.Repeat("x", 2<<20))), 413, "payload_too_large")
		}

		// Pictures on private addresses, through a server whose guard
		// (unlike the bundle's) does not allow 127.0.0.1 and whose dialer
		// records every connection: refused, and nothing is dialled.
		dialer := &recordingDialer{}
		strict, _ := withService(t, b, messaging.ProviderSet{sandbox.Name: sandbox.Provider{}},
			httpguard.New(httpguard.Options{Resolver: &flipResolver{}, Dialer: dialer}))
		for i, url := range []string{
			b.media.URL + "/image.png", // 127.0.0.1, where the test server is
			"http://10.0.0.1/image.png",
			"http://localhost/image.png",
			"http://[::1]/image.png",
			"http://169.254.169.254/latest/meta-data",
			"http://2130706433/image.png",
		} {
			item := requireInvalid(t, strict.manage(t, i, edit(picture, "image_url", url)), "body", "image_url")
			require.Equal(t, "url_forbidden", item["type"], url)
		}
		require.Empty(t, dialer.seen(), "no forbidden address was ever dialled")
		require.Equal(t, before, b.snapshot(t), "refused actions change nothing")
	})
}

// noGroupProvider is a channel that sends messages but cannot manage
// groups: it wraps the sandbox without its ApplyGroupChange (a field, not
// an embedded value, so that the method is not promoted).
type noGroupProvider struct{ inner sandbox.Provider }

func (p noGroupProvider) Send(ctx context.Context, m messaging.Outbound) (messaging.Receipt, error) {
	return p.inner.Send(ctx, m)
}

// Capabilities: what the sandbox sends, but not into groups.
func (p noGroupProvider) Capabilities() messaging.Capabilities {
	caps := p.inner.Capabilities()
	caps.Groups = false
	return caps
}

// refusingGroupProvider manages groups, but its platform refuses: it
// cannot change descriptions and rejects every other change.
type refusingGroupProvider struct {
	noGroupProvider
	mu      *sync.Mutex
	changes *[]messaging.GroupChange
}

func (p refusingGroupProvider) ApplyGroupChange(_ context.Context, c messaging.GroupChange) error {
	p.mu.Lock()
	*p.changes = append(*p.changes, c)
	p.mu.Unlock()
	if c.Action == domain.ActionUpdateDescription {
		return messaging.ErrNotSupported
	}
	return &messaging.ProviderError{Code: "group_refused", Message: "the platform refused the change"}
}

// withService serves the bundle's database through a second handler whose
// messaging use cases have the given providers and SSRF guard (none when
// nil), and returns a copy of the bundle that talks to it, with the
// account use cases (on the same server key as setupMessaging) to add
// agent numbers with. It shares the bundle's database and job runner, so
// tests that need another guard or provider cost no second setup.
func withService(t *testing.T, b *msgBundle, providers messaging.ProviderSet, guard *httpguard.Guard) (*msgBundle, *accounts.Service) {
	t.Helper()
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	acc := accounts.NewService(b.db.AccountStore(), keys, accounts.Options{})
	deps := messaging.Deps{
		Committer: b.db, Store: b.db.MessagingStore(),
		Providers: providers, Opener: acc, Logger: quiet,
	}
	if guard != nil {
		deps.URLs, deps.Media = guard, guard.NewProber(5*time.Second)
	}
	svc := messaging.NewService(deps)
	h, err := rest.NewHandler(edge.Deps{
		Accounts: acc, Idempotency: edge.NewIdempotency(b.db.IdempotencyKeys(), 0, nil, quiet), Ready: b.db.Ready, Registry: prometheus.NewRegistry(), Logger: quiet, Limits: unlimited,
	}, rest.Deps{Accounts: acc, Messaging: svc})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	out := *b
	out.client = openapitest.New(t, srv.URL)
	return &out, acc
}

// insertGroup stores a group with agent as its admin directly, for agent
// numbers whose provider could not create one.
func (b *msgBundle) insertGroup(t *testing.T, service account.Service, agent string, users ...string) string {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	g := domain.GroupState{
		Thread: domain.Thread{ID: ident.New(ident.Thread), AccountID: b.account, Service: service, Type: domain.Group,
			AgentNumber: agent, Name: "Direct", CreatedAt: now, UpdatedAt: now},
		Members: []domain.Participant{{Address: agent, IsAgent: true, Admin: true}},
	}
	g.InviteCode = "code" + strings.TrimPrefix(g.Thread.ID, "thr_")
	for _, u := range users {
		g.Members = append(g.Members, domain.Participant{Address: u})
	}
	require.NoError(t, b.db.Commit(context.Background(), writes.Batch{Groups: []domain.GroupState{g}}))
	return g.Thread.ID
}

func TestGroupManagementProviderSupport(t *testing.T) {
	t.Parallel()
	_, isGroupProvider := any(noGroupProvider{}).(messaging.GroupProvider)
	require.False(t, isGroupProvider, "the test provider must not manage groups")
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		base := setupMessaging(t, dialect, msgOptions{})
		var mu sync.Mutex
		var changes []messaging.GroupChange
		b, acc := withService(t, base, messaging.ProviderSet{
			sandbox.Name:                  sandbox.Provider{},
			account.ProviderWhatsAppCloud: noGroupProvider{},
			account.ProviderTelegram:      refusingGroupProvider{mu: &mu, changes: &changes},
		}, nil)
		ctx := context.Background()
		for _, n := range []accounts.NumberInput{
			{AccountID: b.account, Number: agentCloud, Service: "whatsapp", Provider: "whatsapp-cloud", Enabled: true, Settings: map[string]string{"phone_number_id": "123"}},
			{AccountID: b.account, Number: agentTGBot, Service: "telegram", Provider: "telegram", Enabled: true, Settings: map[string]string{"bot_token": "t"}},
		} {
			_, err := acc.AddNumber(ctx, n)
			require.NoError(t, err)
		}
		// A sandbox group, and groups whose admin is on each provider.
		r := b.manage(t, 0, map[string]any{"action": "create", "agent_number": agentA, "title": "Sandbox", "participants": []string{userA}})
		sandboxGroup := groupOK(t, r, "group created")
		cloudGroup := b.insertGroup(t, account.WhatsApp, agentCloud, userA)
		tgGroup := b.insertGroup(t, account.Telegram, agentTGBot, userA)

		before := b.snapshot(t)
		for i, c := range []struct {
			name   string
			body   map[string]any
			status int
			code   string
		}{
			{"create", map[string]any{"action": "create", "agent_number": agentCloud, "title": "T", "participants": []string{userA}, "initial_message": "hi"}, 501, "not_supported_by_provider"},
			{"update_name", map[string]any{"action": "update_name", "agent_number": agentCloud, "thread_id": cloudGroup, "name": "N"}, 501, "not_supported_by_provider"},
			{"add_participants", map[string]any{"action": "add_participants", "agent_number": agentCloud, "thread_id": cloudGroup, "participants": []string{userB}}, 501, "not_supported_by_provider"},
			{"update_settings", map[string]any{"action": "update_settings", "agent_number": agentCloud, "thread_id": cloudGroup, "setting": "announcement"}, 501, "not_supported_by_provider"},
			{"leave", map[string]any{"action": "leave", "agent_number": agentCloud, "thread_id": cloudGroup}, 501, "not_supported_by_provider"},
			{"join by invite code", map[string]any{"action": "join_group", "agent_number": agentCloud, "invite_code": sandboxGroup["invite_code"]}, 501, "not_supported_by_provider"},
			{"join by thread id", map[string]any{"action": "join", "agent_number": agentCloud, "thread_id": sandboxGroup["thread_id"]}, 501, "not_supported_by_provider"},
			{"an action the platform cannot do", map[string]any{"action": "update_description", "agent_number": agentTGBot, "thread_id": tgGroup, "description": "d"}, 501, "not_supported_by_provider"},
			{"a change the platform refuses", map[string]any{"action": "update_name", "agent_number": agentTGBot, "thread_id": tgGroup, "name": "N"}, 503, "provider_refused"},
		} {
			requireError(t, b.manage(t, i, c.body, "Idempotency-Key", "provider-"+c.name), c.status, c.code)
		}
		require.Equal(t, before, b.snapshot(t), "refused actions change nothing")

		// The provider was asked with the number's opened settings.
		mu.Lock()
		require.Len(t, changes, 2)
		require.Equal(t, "t", changes[1].Settings["bot_token"])
		require.Equal(t, agentTGBot, changes[1].Number.Number)
		require.Equal(t, "N", changes[1].Group.Thread.Name, "the provider sees the state after the change")
		mu.Unlock()

		// The sandbox numbers of the account are unaffected.
		groupOK(t, b.manage(t, 0, map[string]any{"action": "update_name", "agent_number": agentA, "thread_id": sandboxGroup["thread_id"], "name": "Still works"}), "group name updated")

		// Without any provider registered for the number (the first
		// handler knows only the sandbox), the answer is the same 501.
		requireError(t, base.manage(t, 1, map[string]any{"action": "update_name", "agent_number": agentCloud, "thread_id": cloudGroup, "name": "N"}), 501, "not_supported_by_provider")
	})
}

// Concurrent changes of one group must all be kept: each action reads the
// group and writes it back, so without a lock on the group the last writer
// silently undoes the others.
func TestConcurrentGroupChanges(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupMessaging(t, dialect, msgOptions{})
		r := b.manage(t, 0, map[string]any{"action": "create", "agent_number": agentA, "title": "Team", "participants": []string{userA}})
		group := groupOK(t, r, "group created")["thread_id"].(string)
		const n = 6
		results := make([]openapitest.Response, n)
		want := []any{agentA, userA}
		var wg sync.WaitGroup
		for i := range n {
			user := fmt.Sprintf("+1415700000%d", i)
			want = append(want, user)
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = b.post(b.groupPaths()[i%2], map[string]any{"action": "add_participants", "agent_number": agentA, "thread_id": group, "participants": []string{user}})
			}()
		}
		wg.Wait()
		for _, r := range results {
			groupOK(t, r, "participants added")
		}
		require.ElementsMatch(t, want, b.threadInfo(t, group)["participants"], "every addition is kept")
		require.Len(t, b.eventTypes(t, group), n+1)
	})
}

// Agent numbers of the account join groups; they are never added as plain
// participants, where they could neither send nor join.
func TestOwnAgentNumbersJoinRatherThanBeAdded(t *testing.T) {
	t.Parallel()
	b := setupMessaging(t, store.SQLite, msgOptions{})
	r := b.manage(t, 0, map[string]any{"action": "create", "agent_number": agentA, "title": "Team", "participants": []string{userA, agentB}})
	requireInvalid(t, r, "body", "participants", 1)
	r = b.manage(t, 1, map[string]any{"action": "create", "agent_number": agentA, "title": "Team", "participants": []string{userA}})
	group := groupOK(t, r, "group created")["thread_id"].(string)
	r = b.manage(t, 0, map[string]any{"action": "add_participants", "agent_number": agentA, "thread_id": group, "participants": []string{agentB}})
	requireInvalid(t, r, "body", "participants", 0)
	r = b.manage(t, 0, map[string]any{"action": "join_group", "agent_number": agentB, "thread_id": group})
	groupOK(t, r, "joined the group")
	r = b.post("/v1/messages/group/"+b.account+"/send", map[string]any{"from": agentB, "thread_id": group, "content": "hi"})
	require.Equal(t, http.StatusOK, r.StatusCode, "a joined agent sends: %s", r.Body)
}

// Fields of other actions are refused, not silently ignored.
func TestGroupActionsRefuseOtherActionsFields(t *testing.T) {
	t.Parallel()
	b := setupMessaging(t, store.SQLite, msgOptions{})
	r := b.manage(t, 0, map[string]any{"action": "create", "agent_number": agentA, "title": "Team", "participants": []string{userA}})
	group := groupOK(t, r, "group created")["thread_id"].(string)
	item := requireInvalid(t, b.manage(t, 0, map[string]any{"action": "update_description", "agent_number": agentA, "thread_id": group,
		"description": "d", "image_url": "nope"}), "body", "image_url")
	require.Equal(t, "extra_forbidden", item["type"])
	item = requireInvalid(t, b.manage(t, 1, map[string]any{"action": "create", "agent_number": agentA, "title": "T",
		"participants": []string{userA}, "setting": "locked"}), "body", "setting")
	require.Equal(t, "extra_forbidden", item["type"])
}
