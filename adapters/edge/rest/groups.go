package rest

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// groupBody is every field any group action takes; each action reads its
// own and the rest must be absent.
type groupBody struct {
	Action         *string   `json:"action"`
	AgentNumber    *string   `json:"agent_number"`
	ThreadID       *string   `json:"thread_id"`
	Title          *string   `json:"title"`
	Participants   *[]string `json:"participants"`
	InitialMessage *string   `json:"initial_message"`
	Name           *string   `json:"name"`
	Description    *string   `json:"description"`
	ImageURL       *string   `json:"image_url"`
	InviteCode     *string   `json:"invite_code"`
	Setting        *string   `json:"setting"`
}

// groupActionFields lists the fields each action reads, besides action and
// agent_number; any other field given is refused rather than ignored.
var groupActionFields = func() map[domain.GroupAction]map[string]bool {
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	members := set("thread_id", "participants")
	join := set("thread_id", "invite_code")
	return map[domain.GroupAction]map[string]bool{
		domain.ActionCreate:             set("title", "participants", "initial_message"),
		domain.ActionUpdateName:         set("thread_id", "name"),
		domain.ActionUpdateDescription:  set("thread_id", "description"),
		domain.ActionUpdatePicture:      set("thread_id", "image_url"),
		domain.ActionAddParticipants:    members,
		domain.ActionRemoveParticipants: members,
		domain.ActionPromoteAdmin:       members,
		domain.ActionDemoteAdmin:        members,
		domain.ActionJoin:               join,
		domain.ActionJoinGroup:          join,
		domain.ActionLeave:              set("thread_id"),
		domain.ActionUpdateSettings:     set("thread_id", "setting"),
	}
}()

// given says which optional fields the body has.
func (b groupBody) given() map[string]bool {
	return map[string]bool{
		"thread_id": b.ThreadID != nil, "title": b.Title != nil, "participants": b.Participants != nil,
		"initial_message": b.InitialMessage != nil, "name": b.Name != nil, "description": b.Description != nil,
		"image_url": b.ImageURL != nil, "invite_code": b.InviteCode != nil, "setting": b.Setting != nil,
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
	if allowed, known := groupActionFields[domain.GroupAction(str(b.Action))]; known {
		for name, given := range b.given() {
			if given && !allowed[name] {
				p.Add("extra_forbidden", name+" is not a field of action "+*b.Action, name)
			}
		}
	}
	switch domain.GroupAction(str(b.Action)) {
	case domain.ActionCreate:
		required(&p, b.Title, "title")
		required(&p, b.Participants, "participants")
	case domain.ActionUpdateName:
		required(&p, b.Name, "name")
	case domain.ActionUpdateDescription:
		required(&p, b.Description, "description")
	case domain.ActionUpdatePicture:
		required(&p, b.ImageURL, "image_url")
	case domain.ActionUpdateSettings:
		required(&p, b.Setting, "setting")
	}
	if err := p.Err(); err != nil {
		edge.WriteError(w, r, err)
		return
	}
	cmd := messaging.GroupCommand{
		AccountID: mux.Vars(r)["accountId"], Action: *b.Action, AgentNumber: *b.AgentNumber, ThreadID: str(b.ThreadID),
		Title: str(b.Title), InitialMessage: str(b.InitialMessage), Name: str(b.Name), Description: str(b.Description),
		ImageURL: str(b.ImageURL), InviteCode: str(b.InviteCode), Setting: str(b.Setting),
	}
	if b.Participants != nil {
		cmd.Participants, cmd.ParticipantsGiven = *b.Participants, true
	}
	res, err := s.messaging.ManageGroup(r.Context(), cmd)
	if err != nil {
		edge.WriteError(w, r, err)
		return
	}
	g := res.Group
	var admins []string
	for _, m := range g.Members {
		if m.Admin {
			admins = append(admins, m.Address)
		}
	}
	if admins == nil {
		admins = []string{}
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{
		"status": "success", "message": res.Message,
		"data": map[string]any{
			"thread_id": g.Thread.ID, "title": g.Thread.Name, "participants": addresses(g.Members),
			"admins": admins, "description": g.Description, "picture_url": g.PictureURL, "invite_code": g.InviteCode,
			"announcement": g.Announcement, "locked": g.Locked, "service": string(g.Thread.Service),
		},
	})
}
