package whatsapp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// The Cloud API's Groups API (open to Official Business Accounts), as
// its reference documents it
// (developers.facebook.com/documentation/business-messaging/whatsapp/groups/reference):
//
//	POST   /{phone-number-id}/groups         create: subject, description, join_approval_mode → {request_id}
//	GET    /{phone-number-id}/groups         active groups: {data: {groups: [{id, subject, created_at}]}, paging}
//	GET    /{group-id}?fields=…              a group: subject, description, participants, total_participant_count, …
//	POST   /{group-id}                       subject, description → {request_id}
//	DELETE /{group-id}                       delete → {request_id}
//	GET    /{group-id}/invite_link           {invite_link}
//	DELETE /{group-id}/participants          participants: [{user} | {user_id}] → {request_id}
//	GET    /{group-id}/join_requests         {data: [{join_request_id, user_id, wa_id, creation_timestamp}], paging}
//	POST   /{group-id}/join_requests         approve join_requests: [id] → {request_id}
//	DELETE /{group-id}/join_requests         reject join_requests: [id] → {request_id}
//
// Changes are asynchronous: Meta answers the request's id and reports the
// outcome in the group webhooks (GroupWebhook). A group has the business
// and at most MaxGroupParticipants people, who join with its invite link;
// the business adds nobody, promotes nobody and cannot leave.

// MaxGroupParticipants is how many people a Cloud API group has at most
// besides the business.
const MaxGroupParticipants = 8

// groupFields are the fields a group read asks for.
const groupFields = "subject,description,participants,total_participant_count,join_approval_mode,suspended,creation_timestamp"

// Chats says which Cloud API group a group thread is, and which group
// thread a group is.
type Chats interface {
	ChatOfThread(ctx context.Context, n account.Number, threadID string) (string, error)
	ThreadOfChat(ctx context.Context, n account.Number, chat string) (string, error)
}

var (
	_ messaging.GroupProvider  = (*Provider)(nil)
	_ messaging.GroupCreator   = (*Provider)(nil)
	_ messaging.GroupInspector = (*Provider)(nil)
	_ messaging.GroupLimits    = (*Provider)(nil)
)

// MaxGroupParticipants: a Cloud API group has at most 8 people besides
// the business.
func (p *Provider) MaxGroupParticipants() int { return MaxGroupParticipants }

// groupRequest is Meta's answer to a group change: the id of the request
// whose outcome a webhook reports.
type groupRequest struct {
	MessagingProduct string `json:"messaging_product"`
	RequestID        string `json:"request_id"`
}

// CreateGroup asks for a new group named after the group thread, with
// its description and join approval mode; Meta makes it later and
// reports it (group_lifecycle_update, type group_create, with the same
// request_id).
func (p *Provider) CreateGroup(ctx context.Context, c messaging.GroupChange) (string, error) {
	body := map[string]any{"messaging_product": "whatsapp", "subject": c.Group.Thread.Name}
	if c.Group.Description != "" {
		body["description"] = c.Group.Description
	}
	if c.JoinApprovalMode != "" {
		body["join_approval_mode"] = string(c.JoinApprovalMode)
	}
	var out groupRequest
	if err := p.Client.call(ctx, c.Settings, http.MethodPost, "/"+c.Settings[SettingPhoneNumberID]+"/groups", body, &out); err != nil {
		return "", err
	}
	if out.RequestID == "" {
		return "", &messaging.ProviderError{Code: "provider_unavailable", Message: "the Cloud API accepted the group without a request id"}
	}
	return out.RequestID, nil
}

// ApplyGroupChange makes a change Meta offers (subject, description,
// removing people, join requests, deleting the group) and refuses, with
// what to do instead, those it does not.
func (p *Provider) ApplyGroupChange(ctx context.Context, c messaging.GroupChange) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if refusal := notOffered(c); refusal != nil {
		return refusal
	}
	var (
		method, path string
		body         = map[string]any{"messaging_product": "whatsapp"}
	)
	switch c.Action {
	case domain.ActionUpdateName:
		method, path, body["subject"] = http.MethodPost, "", c.Group.Thread.Name
	case domain.ActionUpdateDescription:
		method, path, body["description"] = http.MethodPost, "", c.Group.Description
	case domain.ActionRemoveParticipants:
		people := make([]any, len(c.Participants))
		for i, a := range c.Participants {
			people[i] = groupUser(a)
		}
		method, path, body["participants"] = http.MethodDelete, "/participants", people
	case domain.ActionApproveJoinRequests:
		method, path, body["join_requests"] = http.MethodPost, "/join_requests", c.JoinRequests
	case domain.ActionRejectJoinRequests:
		method, path, body["join_requests"] = http.MethodDelete, "/join_requests", c.JoinRequests
	case domain.ActionDelete:
		method, path, body = http.MethodDelete, "", nil
	default:
		return messaging.ErrNotSupported
	}
	group, err := p.groupID(ctx, c.Number, c.Group)
	if err != nil {
		return err
	}
	var out groupRequest
	return p.Client.call(ctx, c.Settings, method, "/"+group+path, body, &out)
}

// notOffered is the refusal of an action the Groups API does not offer,
// saying what to do instead; nil for the others.
func notOffered(c messaging.GroupChange) error {
	switch c.Action {
	case domain.ActionAddParticipants:
		how := "send them the group's invite link"
		if c.Group.InviteLink != "" {
			how += ", " + c.Group.InviteLink
		}
		refusal := failure.Forbidden("use_invite_link", "a WhatsApp Cloud API group takes nobody in directly: "+how+
			"; they join with it (or ask to join, when the group needs approval: approve_join_requests)")
		if c.Group.InviteLink != "" {
			refusal.Details = map[string]string{domain.InviteLinkDetail: c.Group.InviteLink}
		}
		return refusal
	case domain.ActionPromoteAdmin, domain.ActionDemoteAdmin:
		return failure.Forbidden("admin_roles_fixed",
			"in a WhatsApp Cloud API group the business is the only admin: participants cannot be promoted or demoted")
	case domain.ActionJoin, domain.ActionJoinGroup:
		return failure.Forbidden("one_business_per_group",
			"a WhatsApp Cloud API group has one business, the number that created it: another agent number cannot join it")
	case domain.ActionLeave:
		return failure.Forbidden("use_delete",
			"the business cannot leave a WhatsApp Cloud API group it runs: delete the group (action delete), or remove participants")
	case domain.ActionUpdateSettings:
		return failure.Forbidden("settings_not_offered",
			"WhatsApp Cloud API groups have no announcement or locked setting: only the business manages them")
	}
	return nil
}

// groupUser names a participant to the Groups API: "user", the phone
// number (digits), or "user_id", the business-scoped user id of someone
// known without one.
func groupUser(address string) map[string]any {
	if domain.ValidWhatsAppUserID(address) {
		return map[string]any{"user_id": address}
	}
	return map[string]any{"user": strings.TrimPrefix(address, "+")}
}

// groupChat is the Cloud API id of the group thread threadID.
func (p *Provider) groupChat(ctx context.Context, n account.Number, threadID string) (string, error) {
	if p.Chats == nil {
		return "", &messaging.ProviderError{Code: "provider_misconfigured", Message: "the WhatsApp provider has no group directory", Permanent: true}
	}
	chat, err := p.Chats.ChatOfThread(ctx, n, threadID)
	switch {
	case failure.Is(err, failure.KindNotFound):
		return "", &messaging.ProviderError{Code: "group_unknown_to_provider", Message: "this group thread has no WhatsApp group", Permanent: true}
	case err != nil:
		return "", err
	case strings.HasPrefix(chat, messaging.PendingGroupChat("")):
		return "", &messaging.ProviderError{Code: "group_not_ready", Message: "WhatsApp has not created this group yet", Permanent: true}
	}
	return chat, nil
}

// groupID is the Cloud API id of a group, as one path segment.
func (p *Provider) groupID(ctx context.Context, n account.Number, g domain.GroupState) (string, error) {
	if g.Creating {
		return "", domain.ErrGroupCreating
	}
	chat, err := p.groupChat(ctx, n, g.Thread.ID)
	return url.PathEscape(chat), err
}

// groupKinds are the kinds a Cloud API group takes: text and media.
var groupKinds = map[domain.Kind]bool{domain.KindText: true, domain.KindImage: true, domain.KindVideo: true, domain.KindAudio: true, domain.KindDocument: true}

// addressGroup addresses a send to the Cloud API group of the group
// thread m.To: recipient_type "group", to the group's id.
func (p *Provider) addressGroup(ctx context.Context, m messaging.Outbound, body map[string]any) error {
	if !groupKinds[m.Content.Kind] || len(m.Content.Buttons) > 0 {
		return &messaging.ProviderError{Code: "not_supported_by_provider", Permanent: true,
			Message: "WhatsApp Cloud API groups take text and media messages only (no locations, no buttons)"}
	}
	chat, err := p.groupChat(ctx, m.Number, m.To)
	if err != nil {
		return err
	}
	body["recipient_type"], body["to"] = "group", chat
	return nil
}

// graphPaging is the paging of a Cloud API list: the cursor after the
// page, and the next page's URL when there is one.
type graphPaging struct {
	Cursors struct {
		After string `json:"after"`
	} `json:"cursors"`
	Next string `json:"next"`
}

// rawPage is one page of a Cloud API list: its items in data (a list,
// or an object whose groups are the list) and its paging.
type rawPage struct {
	Data   json.RawMessage `json:"data"`
	Paging graphPaging     `json:"paging"`
}

// items decodes the page's items into v.
func (r rawPage) items(v any) error {
	d := bytes.TrimSpace(r.Data)
	if len(d) > 0 && d[0] == '{' {
		var wrapped struct {
			Groups json.RawMessage `json:"groups"`
		}
		if err := json.Unmarshal(d, &wrapped); err != nil {
			return &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API list is not one: " + err.Error()}
		}
		d = bytes.TrimSpace(wrapped.Groups)
	}
	if len(d) == 0 || string(d) == "null" {
		return nil
	}
	if err := json.Unmarshal(d, v); err != nil {
		return &messaging.ProviderError{Code: "provider_unavailable", Message: "the Graph API list is not one: " + err.Error()}
	}
	return nil
}

// maxPages bounds how many pages a list follows.
const maxPages = 50

// pages reads the list at path page after page, handing each to each.
func (p *Provider) pages(ctx context.Context, settings map[string]string, path string, each func(rawPage) error) error {
	after := ""
	for range maxPages {
		target := path
		if after != "" {
			target += "?after=" + url.QueryEscape(after)
		}
		var page rawPage
		if err := p.Client.call(ctx, settings, http.MethodGet, target, nil, &page); err != nil {
			return err
		}
		if err := each(page); err != nil {
			return err
		}
		if page.Paging.Next == "" || page.Paging.Cursors.After == "" || page.Paging.Cursors.After == after {
			return nil
		}
		after = page.Paging.Cursors.After
	}
	return nil
}

// graphGroup is a group as the Cloud API reads it.
type graphGroup struct {
	ID                    string        `json:"id"`
	Subject               string        `json:"subject"`
	Description           string        `json:"description"`
	CreationTimestamp     flexibleInt   `json:"creation_timestamp"`
	CreatedAt             string        `json:"created_at"`
	Suspended             bool          `json:"suspended"`
	TotalParticipantCount int           `json:"total_participant_count"`
	JoinApprovalMode      string        `json:"join_approval_mode"`
	Participants          []graphPerson `json:"participants"`
}

// graphPerson is a participant or a requester as the Cloud API names
// them: their business-scoped user id, and their phone number (wa_id) and
// username where they show them.
type graphPerson struct {
	UserID   string `json:"user_id"`
	WaID     string `json:"wa_id"`
	Username string `json:"username"`
}

func (g graphPerson) person() messaging.GroupPerson {
	p := messaging.GroupPerson{UserID: g.UserID, Username: strings.TrimPrefix(g.Username, "@")}
	switch {
	case g.WaID != "":
		p.Address = "+" + Digits(g.WaID)
	case domain.ValidWhatsAppUserID(g.UserID):
		p.Address = g.UserID
	}
	return p
}

// flexibleInt reads a Unix time the Cloud API writes as a number or as a
// string of digits.
type flexibleInt int64

func (f *flexibleInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a Unix time: %s", b)
	}
	*f = flexibleInt(v)
	return nil
}

func (f flexibleInt) time() time.Time {
	if f <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(f), 0).UTC()
}

// GroupInfo reads the group and its invite link.
func (p *Provider) GroupInfo(ctx context.Context, q messaging.GroupQuery) (messaging.ProviderGroup, error) {
	group, err := p.groupID(ctx, q.Number, q.Group)
	if err != nil {
		return messaging.ProviderGroup{}, err
	}
	var g graphGroup
	if err := p.Client.call(ctx, q.Settings, http.MethodGet, "/"+group+"?fields="+groupFields, nil, &g); err != nil {
		return messaging.ProviderGroup{}, err
	}
	var link struct {
		InviteLink string `json:"invite_link"`
	}
	if err := p.Client.call(ctx, q.Settings, http.MethodGet, "/"+group+"/invite_link", nil, &link); err != nil {
		return messaging.ProviderGroup{}, err
	}
	out := messaging.ProviderGroup{
		ChatID: firstNonEmpty(g.ID, q.Group.Thread.ID), Subject: g.Subject, Description: g.Description, CreatedAt: g.CreationTimestamp.time(),
		Suspended: g.Suspended, JoinApprovalMode: domain.JoinApprovalMode(g.JoinApprovalMode), ParticipantCount: g.TotalParticipantCount,
		InviteLink: link.InviteLink, Participants: []messaging.GroupPerson{},
	}
	if g.ID == "" {
		out.ChatID, _ = url.PathUnescape(group)
	}
	for _, person := range g.Participants {
		out.Participants = append(out.Participants, person.person())
	}
	return out, nil
}

// JoinRequests lists the group's open join requests (every page).
func (p *Provider) JoinRequests(ctx context.Context, q messaging.GroupQuery) ([]messaging.JoinRequest, error) {
	group, err := p.groupID(ctx, q.Number, q.Group)
	if err != nil {
		return nil, err
	}
	var out []messaging.JoinRequest
	err = p.pages(ctx, q.Settings, "/"+group+"/join_requests", func(raw rawPage) error {
		var items []struct {
			graphPerson
			JoinRequestID     string      `json:"join_request_id"`
			CreationTimestamp flexibleInt `json:"creation_timestamp"`
		}
		if err := raw.items(&items); err != nil {
			return err
		}
		for _, it := range items {
			out = append(out, messaging.JoinRequest{ID: it.JoinRequestID, Person: it.person(), CreatedAt: it.CreationTimestamp.time()})
		}
		return nil
	})
	return out, err
}

// ActiveGroups lists the number's groups (every page), each with its
// group thread where Switchboard keeps one.
func (p *Provider) ActiveGroups(ctx context.Context, n account.Number, settings map[string]string) ([]messaging.ProviderGroup, error) {
	var out []messaging.ProviderGroup
	err := p.pages(ctx, settings, "/"+settings[SettingPhoneNumberID]+"/groups", func(raw rawPage) error {
		var groups []graphGroup
		if err := raw.items(&groups); err != nil {
			return err
		}
		for _, g := range groups {
			pg := messaging.ProviderGroup{ChatID: g.ID, Subject: g.Subject, CreatedAt: g.CreationTimestamp.time()}
			if t, err := time.Parse(time.RFC3339, g.CreatedAt); err == nil {
				pg.CreatedAt = t.UTC()
			} else if sec, err := strconv.ParseInt(g.CreatedAt, 10, 64); err == nil && sec > 0 {
				pg.CreatedAt = time.Unix(sec, 0).UTC()
			}
			if p.Chats != nil {
				if thread, err := p.Chats.ThreadOfChat(ctx, n, g.ID); err == nil {
					pg.ThreadID = thread
				} else if !failure.Is(err, failure.KindNotFound) {
					return err
				}
			}
			out = append(out, pg)
		}
		return nil
	})
	return out, err
}
