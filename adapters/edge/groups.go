package edge

import (
	"time"

	"github.com/switchboard-dev/switchboard/application/messaging"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// GroupActionFields lists the fields each group action reads besides
// action and agent_number, on every transport: a field of another action
// is refused rather than silently ignored.
var GroupActionFields = func() map[domain.GroupAction][]string {
	members := []string{"thread_id", "participants"}
	join := []string{"thread_id", "invite_code"}
	requests := []string{"thread_id", "join_requests"}
	return map[domain.GroupAction][]string{
		domain.ActionCreate:              {"title", "participants", "initial_message", "description", "join_approval_mode"},
		domain.ActionUpdateName:          {"thread_id", "name"},
		domain.ActionUpdateDescription:   {"thread_id", "description"},
		domain.ActionUpdatePicture:       {"thread_id", "image_url"},
		domain.ActionAddParticipants:     members,
		domain.ActionRemoveParticipants:  members,
		domain.ActionPromoteAdmin:        members,
		domain.ActionDemoteAdmin:         members,
		domain.ActionJoin:                join,
		domain.ActionJoinGroup:           join,
		domain.ActionLeave:               {"thread_id"},
		domain.ActionUpdateSettings:      {"thread_id", "setting"},
		domain.ActionInfo:                {"thread_id"},
		domain.ActionList:                {},
		domain.ActionDelete:              {"thread_id"},
		domain.ActionJoinRequests:        {"thread_id"},
		domain.ActionApproveJoinRequests: requests,
		domain.ActionRejectJoinRequests:  requests,
	}
}()

// GroupRequiredFields lists the fields an action cannot do without
// (thread_id aside, which the use case checks), on every transport.
var GroupRequiredFields = map[domain.GroupAction][]string{
	domain.ActionCreate:            {"title", "participants"},
	domain.ActionUpdateName:        {"name"},
	domain.ActionUpdateDescription: {"description"},
	domain.ActionUpdatePicture:     {"image_url"},
	domain.ActionUpdateSettings:    {"setting"},
}

// GroupPersonView is someone a provider names in a group.
type GroupPersonView struct {
	Number   string `json:"number" jsonschema:"their phone number in E.164 form, or their WhatsApp user id when they show no number"`
	UserID   string `json:"user_id,omitempty" jsonschema:"their WhatsApp business-scoped user id"`
	Username string `json:"username,omitempty"`
}

// ProviderGroupView is a group as its provider has it (info, list).
type ProviderGroupView struct {
	GroupID          string            `json:"group_id,omitempty" jsonschema:"the provider's id of the group"`
	ThreadID         string            `json:"thread_id,omitempty" jsonschema:"the group thread, when Switchboard keeps one"`
	Subject          string            `json:"subject"`
	Description      string            `json:"description,omitempty"`
	CreatedAt        *time.Time        `json:"created_at,omitempty"`
	Suspended        bool              `json:"suspended,omitempty"`
	JoinApprovalMode string            `json:"join_approval_mode,omitempty" jsonschema:"auto_approve or approval_required"`
	ParticipantCount int               `json:"participant_count"`
	Participants     []GroupPersonView `json:"participants,omitempty" jsonschema:"the people in the group besides the agent number"`
	InviteLink       string            `json:"invite_link,omitempty"`
}

// JoinRequestView is an open request to join a group.
type JoinRequestView struct {
	JoinRequestID string `json:"join_request_id"`
	GroupPersonView
	CreatedAt *time.Time `json:"created_at,omitempty"`
}

func personView(p messaging.GroupPerson) GroupPersonView {
	return GroupPersonView{Number: p.Address, UserID: p.UserID, Username: p.Username}
}

func timeView(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// ProviderGroupOf is the view of a provider's group.
func ProviderGroupOf(g messaging.ProviderGroup) ProviderGroupView {
	v := ProviderGroupView{GroupID: g.ChatID, ThreadID: g.ThreadID, Subject: g.Subject, Description: g.Description, CreatedAt: timeView(g.CreatedAt),
		Suspended: g.Suspended, JoinApprovalMode: string(g.JoinApprovalMode), ParticipantCount: g.ParticipantCount, InviteLink: g.InviteLink}
	for _, p := range g.Participants {
		v.Participants = append(v.Participants, personView(p))
	}
	return v
}

// GroupsOf are the views of a list of groups.
func GroupsOf(groups []messaging.ProviderGroup) []ProviderGroupView {
	out := make([]ProviderGroupView, len(groups))
	for i, g := range groups {
		out[i] = ProviderGroupOf(g)
	}
	return out
}

// JoinRequestsOf are the views of join requests.
func JoinRequestsOf(requests []messaging.JoinRequest) []JoinRequestView {
	out := make([]JoinRequestView, len(requests))
	for i, r := range requests {
		out[i] = JoinRequestView{JoinRequestID: r.ID, GroupPersonView: personView(r.Person), CreatedAt: timeView(r.CreatedAt)}
	}
	return out
}

// GroupAdmins are the addresses of a group's admins.
func GroupAdmins(g domain.GroupState) []string {
	admins := []string{}
	for _, m := range g.Members {
		if m.Admin {
			admins = append(admins, m.Address)
		}
	}
	return admins
}
