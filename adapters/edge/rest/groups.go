package rest

import (
	"net/http"
	"slices"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// groupBody is every field any group action takes; each action reads its
// own (edge.GroupActionFields) and the rest must be absent.
type groupBody struct {
	Action           *string   `json:"action"`
	AgentNumber      *string   `json:"agent_number"`
	ThreadID         *string   `json:"thread_id"`
	Title            *string   `json:"title"`
	Participants     *[]string `json:"participants"`
	InitialMessage   *string   `json:"initial_message"`
	Name             *string   `json:"name"`
	Description      *string   `json:"description"`
	ImageURL         *string   `json:"image_url"`
	InviteCode       *string   `json:"invite_code"`
	Setting          *string   `json:"setting"`
	JoinApprovalMode *string   `json:"join_approval_mode"`
	JoinRequests     *[]string `json:"join_requests"`
}

// given says which optional fields the body has.
func (b groupBody) given() map[string]bool {
	return map[string]bool{
		"thread_id": b.ThreadID != nil, "title": b.Title != nil, "participants": b.Participants != nil,
		"initial_message": b.InitialMessage != nil, "name": b.Name != nil, "description": b.Description != nil,
		"image_url": b.ImageURL != nil, "invite_code": b.InviteCode != nil, "setting": b.Setting != nil,
		"join_approval_mode": b.JoinApprovalMode != nil, "join_requests": b.JoinRequests != nil,
	}
}

func (s *server) manageGroup(w http.ResponseWriter, r *http.Request) {
	var b groupBody
	if err := decodeJSON(r, &b); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	var p failure.Problems
	required(&p, b.Action, "action")
	required(&p, b.AgentNumber, "agent_number")
	action := domain.GroupAction(str(b.Action))
	given := b.given()
	if allowed, known := edge.GroupActionFields[action]; known {
		for name, present := range given {
			if present && !slices.Contains(allowed, name) {
				p.Add("extra_forbidden", name+" is not a field of action "+*b.Action, name)
			}
		}
	}
	for _, name := range edge.GroupRequiredFields[action] {
		if !given[name] {
			p.Add("missing", "Field required", name)
		}
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	cmd := messaging.GroupCommand{
		AccountID: mux.Vars(r)["accountId"], Action: *b.Action, AgentNumber: *b.AgentNumber, ThreadID: str(b.ThreadID),
		Title: str(b.Title), InitialMessage: str(b.InitialMessage), Name: str(b.Name), Description: str(b.Description),
		ImageURL: str(b.ImageURL), InviteCode: str(b.InviteCode), Setting: str(b.Setting), JoinApprovalMode: str(b.JoinApprovalMode),
	}
	if b.Participants != nil {
		cmd.Participants, cmd.ParticipantsGiven = *b.Participants, true
	}
	if b.JoinRequests != nil {
		cmd.JoinRequests, cmd.JoinRequestsGiven = *b.JoinRequests, true
	}
	res, err := s.messaging.ManageGroup(r.Context(), cmd)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"status": "success", "message": res.Message, "data": groupData(action, res)})
}

// groupData is the data of a group action's answer: the group after it,
// with what the action read (info, join_requests); for list, the groups.
func groupData(action domain.GroupAction, res messaging.GroupResult) map[string]any {
	if action == domain.ActionList {
		return map[string]any{"groups": edge.GroupsOf(res.Groups)}
	}
	g := res.Group
	var link any
	if g.InviteLink != "" {
		link = g.InviteLink
	}
	data := map[string]any{
		"thread_id": g.Thread.ID, "title": g.Thread.Name, "participants": addresses(g.Members),
		"admins": edge.GroupAdmins(g), "description": g.Description, "picture_url": g.PictureURL, "invite_code": g.InviteCode,
		"announcement": g.Announcement, "locked": g.Locked, "service": string(g.Thread.Service),
		"invite_link": link, "creating": g.Creating,
	}
	if res.Invited != nil {
		data["invited"] = res.Invited
	}
	if res.Info != nil {
		data["provider_group"] = edge.ProviderGroupOf(*res.Info)
	}
	if res.JoinRequests != nil {
		data["join_requests"] = edge.JoinRequestsOf(res.JoinRequests)
	}
	return data
}
