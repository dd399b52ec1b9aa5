package whatsapp_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// groupChats is the group directory: group threads and their Cloud API
// groups.
type groupChats struct {
	mu     sync.Mutex
	chats  map[string]string // thread → chat
	lookup []string
}

func (c *groupChats) ChatOfThread(_ context.Context, _ account.Number, threadID string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookup = append(c.lookup, threadID)
	chat, ok := c.chats[threadID]
	if !ok {
		return "", failure.NotFound("group chat")
	}
	return chat, nil
}

func (c *groupChats) ThreadOfChat(_ context.Context, _ account.Number, chat string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for thread, ch := range c.chats {
		if ch == chat {
			return thread, nil
		}
	}
	return "", failure.NotFound("group thread")
}

type groupBundle struct {
	fake     *whatsappfake.Server
	p        *whatsapp.Provider
	chats    *groupChats
	settings map[string]string
	group    string // the Cloud API id of thr_team's group
	team     domain.GroupState
}

// setupGroup makes a group on the fake (thread thr_team, its group) and a
// provider that knows it.
func setupGroup(t *testing.T) groupBundle {
	t.Helper()
	fake := whatsappfake.New(t, pnid, "EAAtoken", display)
	chats := &groupChats{chats: map[string]string{}}
	b := groupBundle{fake: fake, p: &whatsapp.Provider{Client: whatsapp.NewClient(), Chats: chats}, chats: chats, settings: fake.Settings(appSecret, verify)}
	b.team = domain.GroupState{Thread: domain.Thread{ID: "thr_team", Name: "Launch team", Type: domain.Group}, Description: "Ships on Friday",
		Members: []domain.Participant{{Address: number.Number, IsAgent: true, Admin: true}}}
	request, err := b.p.CreateGroup(context.Background(), messaging.GroupChange{Number: number, Settings: b.settings, Action: domain.ActionCreate,
		Group: b.team, JoinApprovalMode: domain.JoinApprovalRequired})
	require.NoError(t, err)
	b.group = fake.GroupOf(request)
	require.NotEmpty(t, b.group, "the fake made the group of request %s", request)
	chats.chats["thr_team"] = b.group
	return b
}

func (b groupBundle) change(c messaging.GroupChange) error {
	c.Number, c.Settings = number, b.settings
	if c.Group.Thread.ID == "" {
		c.Group = b.team
	}
	return b.p.ApplyGroupChange(context.Background(), c)
}

func (b groupBundle) lastCall(t *testing.T) whatsappfake.GroupCall {
	t.Helper()
	calls := b.fake.GroupCalls()
	require.NotEmpty(t, calls)
	return calls[len(calls)-1]
}

// Every Groups API call the provider makes, as it reaches the Cloud API.
func TestGroupCallsOnTheWire(t *testing.T) {
	t.Parallel()
	b := setupGroup(t)
	ctx := context.Background()
	path := "/" + whatsappfake.Version + "/" + b.group

	create := b.fake.GroupCalls()[0]
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodPost, Path: "/" + whatsappfake.Version + "/" + pnid + "/groups",
		Body: map[string]any{"messaging_product": "whatsapp", "subject": "Launch team", "description": "Ships on Friday", "join_approval_mode": "approval_required"}}, create)

	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionUpdateName, Group: withName(b.team, "Launch crew")}))
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodPost, Path: path, Body: map[string]any{"messaging_product": "whatsapp", "subject": "Launch crew"}}, b.lastCall(t))
	described := b.team
	described.Description = "Ships on Monday"
	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionUpdateDescription, Group: described}))
	require.Equal(t, map[string]any{"messaging_product": "whatsapp", "description": "Ships on Monday"}, b.lastCall(t).Body)
	g, _ := b.fake.Group(b.group)
	require.Equal(t, "Launch crew", g.Subject)
	require.Equal(t, "Ships on Monday", g.Description)

	// People join with the link, or ask to; the business lists the
	// requests, approves one, rejects one, removes people.
	_, err := b.fake.UserJoins(b.group, whatsappfake.Person{WaID: "14155550111", UserID: "US.111"})
	require.Error(t, err, "a group that needs approval takes nobody straight in")
	ann, _, err := b.fake.UserRequestsToJoin(b.group, whatsappfake.Person{WaID: "14155550111", UserID: "US.111"})
	require.NoError(t, err)
	bob, _, err := b.fake.UserRequestsToJoin(b.group, whatsappfake.Person{UserID: "US.222", Username: "bob"})
	require.NoError(t, err)
	requests, err := b.p.JoinRequests(ctx, messaging.GroupQuery{Number: number, Settings: b.settings, Group: b.team})
	require.NoError(t, err)
	require.Equal(t, http.MethodGet, b.lastCall(t).Method)
	require.Equal(t, path+"/join_requests", b.lastCall(t).Path)
	require.Len(t, requests, 2)
	require.Equal(t, ann, requests[0].ID)
	require.Equal(t, messaging.GroupPerson{Address: "+14155550111", UserID: "US.111"}, requests[0].Person)
	require.Equal(t, messaging.GroupPerson{Address: "US.222", UserID: "US.222", Username: "bob"}, requests[1].Person, "a user without a number is named by user id")
	require.False(t, requests[0].CreatedAt.IsZero())

	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionApproveJoinRequests, JoinRequests: []string{ann}}))
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodPost, Path: path + "/join_requests",
		Body: map[string]any{"messaging_product": "whatsapp", "join_requests": []any{ann}}}, b.lastCall(t))
	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionRejectJoinRequests, JoinRequests: []string{bob}}))
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodDelete, Path: path + "/join_requests",
		Body: map[string]any{"messaging_product": "whatsapp", "join_requests": []any{bob}}}, b.lastCall(t))
	_, _, err = b.fake.UserRequestsToJoin(b.group, whatsappfake.Person{UserID: "US.333"})
	require.NoError(t, err)
	g, _ = b.fake.Group(b.group)
	require.Equal(t, []whatsappfake.Person{{WaID: "14155550111", UserID: "US.111"}}, g.Participants, "the approved one joined")

	info, err := b.p.GroupInfo(ctx, messaging.GroupQuery{Number: number, Settings: b.settings, Group: b.team})
	require.NoError(t, err)
	calls := b.fake.GroupCalls()
	read, link := calls[len(calls)-2], calls[len(calls)-1]
	require.Equal(t, http.MethodGet, read.Method)
	require.Equal(t, path, read.Path)
	q, _ := url.ParseQuery(read.Query)
	require.Equal(t, "subject,description,participants,total_participant_count,join_approval_mode,suspended,creation_timestamp", q.Get("fields"))
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodGet, Path: path + "/invite_link"}, link)
	require.Equal(t, b.group, info.ChatID)
	require.Equal(t, "Launch crew", info.Subject)
	require.Equal(t, "Ships on Monday", info.Description)
	require.Equal(t, domain.JoinApprovalRequired, info.JoinApprovalMode)
	require.Equal(t, 1, info.ParticipantCount)
	require.Equal(t, []messaging.GroupPerson{{Address: "+14155550111", UserID: "US.111"}}, info.Participants)
	require.Equal(t, g.InviteLink, info.InviteLink)
	require.True(t, strings.HasPrefix(info.InviteLink, "https://chat.whatsapp.com/"), info.InviteLink)
	require.False(t, info.CreatedAt.IsZero())

	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionRemoveParticipants, Participants: []string{"+14155550111", "US.999"}}))
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodDelete, Path: path + "/participants",
		Body: map[string]any{"messaging_product": "whatsapp", "participants": []any{map[string]any{"user": "14155550111"}, map[string]any{"user_id": "US.999"}}}}, b.lastCall(t))

	groups, err := b.p.ActiveGroups(ctx, number, b.settings)
	require.NoError(t, err)
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodGet, Path: "/" + whatsappfake.Version + "/" + pnid + "/groups"}, b.lastCall(t))
	require.Len(t, groups, 1)
	require.Equal(t, messaging.ProviderGroup{ChatID: b.group, ThreadID: "thr_team", Subject: "Launch crew", CreatedAt: groups[0].CreatedAt}, groups[0])
	require.False(t, groups[0].CreatedAt.IsZero())

	// A group send: recipient_type group, to the group's id.
	r, err := b.p.Send(ctx, messaging.Outbound{MessageID: "msg_g", Number: number, Settings: b.settings, ThreadTyp: domain.Group, To: "thr_team",
		Content: domain.Content{Kind: domain.KindText, Text: "Welcome, all"}})
	require.NoError(t, err)
	require.Equal(t, b.fake.LastID(), r.ProviderMessageID)
	sends := b.fake.Sends()
	require.Equal(t, map[string]any{"messaging_product": "whatsapp", "recipient_type": "group", "to": b.group, "type": "text",
		"text": map[string]any{"preview_url": false, "body": "Welcome, all"}}, sends[len(sends)-1])
	_, err = b.p.Send(ctx, messaging.Outbound{Number: number, Settings: b.settings, ThreadTyp: domain.Group, To: "thr_team",
		Content: domain.Content{Kind: domain.KindLocation, Latitude: 1, Longitude: 2}})
	var pe *messaging.ProviderError
	require.ErrorAs(t, err, &pe, "groups take text and media only")
	require.Equal(t, "not_supported_by_provider", pe.Code)
	require.True(t, pe.Permanent)
	require.True(t, b.p.Capabilities().Groups)

	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionDelete}))
	require.Equal(t, whatsappfake.GroupCall{Method: http.MethodDelete, Path: path}, b.lastCall(t))
	_, err = b.p.Send(ctx, messaging.Outbound{Number: number, Settings: b.settings, ThreadTyp: domain.Group, To: "thr_team",
		Content: domain.Content{Kind: domain.KindText, Text: "anyone?"}})
	require.ErrorAs(t, err, &pe, "a deleted group takes no message")
	require.Equal(t, "provider_rejected", pe.Code)
}

func withName(g domain.GroupState, name string) domain.GroupState {
	g.Thread.Name = name
	return g
}

// What the Groups API does not offer is refused with what to do instead;
// a number that is no Official Business Account gets Meta's error, named.
func TestGroupRefusals(t *testing.T) {
	t.Parallel()
	b := setupGroup(t)
	linked := b.team
	linked.InviteLink = "https://chat.whatsapp.com/AbCdEfGhIjKlMnOpQrStUv"
	calls := len(b.fake.GroupCalls())
	for action, code := range map[domain.GroupAction]string{
		domain.ActionAddParticipants: "use_invite_link", domain.ActionPromoteAdmin: "admin_roles_fixed", domain.ActionDemoteAdmin: "admin_roles_fixed",
		domain.ActionJoinGroup: "one_business_per_group", domain.ActionJoin: "one_business_per_group", domain.ActionLeave: "use_delete",
		domain.ActionUpdateSettings: "settings_not_offered",
	} {
		err := b.change(messaging.GroupChange{Action: action, Group: linked, Participants: []string{"+14155550111"}})
		fe := failure.As(err)
		require.Equal(t, failure.KindForbidden, fe.Kind, "%s: %v", action, err)
		require.Equal(t, code, fe.Code, "%s", action)
	}
	err := b.change(messaging.GroupChange{Action: domain.ActionAddParticipants, Group: linked, Participants: []string{"+14155550111"}})
	require.Contains(t, err.Error(), linked.InviteLink, "the refusal hands out the invite link")
	require.Equal(t, map[string]string{domain.InviteLinkDetail: linked.InviteLink}, failure.As(err).Details)
	require.Len(t, b.fake.GroupCalls(), calls, "nothing was asked of the Cloud API")
	require.Equal(t, whatsapp.MaxGroupParticipants, b.p.MaxGroupParticipants())

	creating := b.team
	creating.Creating = true
	err = b.change(messaging.GroupChange{Action: domain.ActionUpdateName, Group: creating})
	require.Equal(t, "group_not_ready", failure.As(err).Code)

	b.fake.RefuseGroups()
	_, err = b.p.CreateGroup(context.Background(), messaging.GroupChange{Number: number, Settings: b.settings, Action: domain.ActionCreate, Group: b.team})
	var pe *messaging.ProviderError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "provider_auth_failed", pe.Code)
	require.True(t, pe.Permanent)
	require.Contains(t, pe.Message, "whatsapp 10: (#10) Application does not have permission for this action")
	require.Contains(t, pe.Message, "Official Business Accounts")
}

// The group webhooks and group messages, as the inbox gets them.
func TestGroupWebhooks(t *testing.T) {
	t.Parallel()
	b := setupGroup(t)
	box := newInbox()
	in := &whatsapp.Inbound{Inbox: box}
	ctx := context.Background()
	post := func(body []byte) {
		t.Helper()
		require.NoError(t, in.Webhook(ctx, number.ID, whatsappfake.Sign(body, appSecret), body))
	}
	hooks := b.fake.TakeGroupWebhooks()
	require.Len(t, hooks, 1, "the creation's webhook")
	post(hooks[0])
	g, _ := b.fake.Group(b.group)
	created := box.groups[0]
	require.Equal(t, messaging.GroupReportCreated, created.Kind)
	require.Equal(t, b.group, created.ChatID)
	require.NotEmpty(t, created.Request)
	require.Equal(t, b.group, b.fake.GroupOf(created.Request))
	require.Equal(t, "Launch team", created.Title)
	require.Equal(t, g.InviteLink, created.InviteLink)

	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionUpdateName, Group: withName(b.team, "Crew")}))
	id, joinHook, err := b.fake.UserRequestsToJoin(b.group, whatsappfake.Person{WaID: "14155550111", UserID: "US.111", Username: "ann"})
	require.NoError(t, err)
	post(joinHook)
	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionApproveJoinRequests, JoinRequests: []string{id}}))
	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionRemoveParticipants, Participants: []string{"+14155550111"}}))
	require.NoError(t, b.change(messaging.GroupChange{Action: domain.ActionDelete}))
	for _, h := range b.fake.TakeGroupWebhooks() {
		post(h)
	}
	post(whatsappfake.GroupMessage(pnid, display, b.group, "14155550112", "Cy", "wamid.g1", "hello group"))

	require.Len(t, box.groups, 6)
	request2, settings, joined, removed, deleted := box.groups[1], box.groups[2], box.groups[3], box.groups[4], box.groups[5]
	require.Equal(t, messaging.GroupReportSettings, settings.Kind)
	require.Equal(t, "Crew", settings.Title)
	require.Nil(t, settings.Description)
	require.Equal(t, messaging.GroupReportJoinRequested, request2.Kind)
	require.Equal(t, &messaging.JoinRequest{ID: id, Person: messaging.GroupPerson{Address: "+14155550111", UserID: "US.111", Username: "ann"}, CreatedAt: request2.JoinRequest.CreatedAt}, request2.JoinRequest)
	require.Equal(t, messaging.GroupReportJoined, joined.Kind)
	require.Equal(t, []messaging.GroupPerson{{Address: "+14155550111", UserID: "US.111", Username: "ann"}}, joined.People)
	require.Equal(t, messaging.GroupReportRemoved, removed.Kind)
	require.Equal(t, []messaging.GroupPerson{{Address: "+14155550111", UserID: "US.111", Username: "ann"}}, removed.People)
	require.Equal(t, messaging.GroupReportDeleted, deleted.Kind)
	require.Equal(t, b.group, deleted.ChatID)

	require.Len(t, box.messages, 1)
	msg := box.messages[0]
	require.Equal(t, b.group, msg.GroupChatID, "a group message names its group")
	require.Equal(t, "+14155550112", msg.Sender.ChatID)
	require.Equal(t, domain.Content{Kind: domain.KindText, Text: "hello group"}, msg.Content)

	// A failed creation is reported with Meta's error; a failed settings
	// change and a suspension are not acted on.
	failed := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"group_lifecycle_update","value":{"messaging_product":"whatsapp",` +
		`"metadata":{"display_phone_number":"14155550100","phone_number_id":"` + pnid + `"},"groups":[{"timestamp":"1763800200","type":"group_create",` +
		`"subject":"Nope","request_id":"77","errors":[{"code":131215,"title":"Group creation failed","message":"Group creation failed","error_data":{"details":"Too many groups"}}]}]}},` +
		`{"field":"group_settings_update","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"` + pnid + `"},"groups":[{"group_id":"G","type":"group_settings_update",` +
		`"group_subject":{"text":"x","update_successful":false,"errors":[{"code":131000}]}}]}},` +
		`{"field":"group_status_update","value":{"messaging_product":"whatsapp","metadata":{"phone_number_id":"` + pnid + `"},"groups":[{"group_id":"G","type":"group_suspend"}]}}]}]}`)
	post(failed)
	require.Len(t, box.groups, 7)
	fail := box.groups[6]
	require.Equal(t, channels.GroupUpdate{Request: "77", Kind: messaging.GroupReportCreateFailed, Title: "Nope", Failure: fail.Failure,
		At: time.Unix(1763800200, 0).UTC()}, fail)
	require.Contains(t, fail.Failure.Message, "131215")
	require.Contains(t, fail.Failure.Message, "Too many groups")
}
