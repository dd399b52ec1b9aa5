package messaging

import (
	"context"
	"strings"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// GroupReportKind is what a provider reported about a group.
type GroupReportKind string

// The changes a provider reports (the WhatsApp Cloud API's group
// webhooks).
const (
	// GroupReportCreated: the platform made the group it was asked for
	// (or one made elsewhere), with InviteLink and Title.
	GroupReportCreated GroupReportKind = "created"
	// GroupReportCreateFailed: the platform could not make the group;
	// Failure says why.
	GroupReportCreateFailed GroupReportKind = "create_failed"
	// GroupReportDeleted: the group is gone.
	GroupReportDeleted GroupReportKind = "deleted"
	// GroupReportJoined: People joined (with the invite link, or their
	// join requests approved); GroupReportRemoved: People were removed,
	// or left.
	GroupReportJoined  GroupReportKind = "joined"
	GroupReportRemoved GroupReportKind = "removed"
	// GroupReportJoinRequested: someone asked to join (JoinRequest);
	// GroupReportJoinRequestRevoked: they took their request back.
	GroupReportJoinRequested      GroupReportKind = "join_requested"
	GroupReportJoinRequestRevoked GroupReportKind = "join_request_revoked"
	// GroupReportSettings: the group's Title or Description (those set)
	// changed.
	GroupReportSettings GroupReportKind = "settings"
)

// GroupReport is a change of the group thread ThreadID of the account's
// agent number Agent that the group's provider reported.
type GroupReport struct {
	AccountID string
	ThreadID  string
	Agent     string
	Kind      GroupReportKind
	// Title and InviteLink are the group's, where the report gives them;
	// Description is set when the report changes it.
	Title       string
	InviteLink  string
	Description *string
	People      []GroupPerson
	JoinRequest *JoinRequest
	// Failure is why the platform could not make the group.
	Failure *ProviderError
}

// ApplyGroupReport records a change of a group its provider reported and
// appends the group event it means: group.created when the platform made
// the group (its invite_link in the payload), group.left when it could
// not or the group is gone, group.participants_added and
// group.participants_removed as people join and go, group.updated for a
// new title or description and for join requests (action
// join_requested, join_request_revoked, with the request). A report that
// changes nothing (a repeated webhook) records nothing.
func (s *Service) ApplyGroupReport(ctx context.Context, r GroupReport) error {
	return s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		g, err := tx.Group(ctx, r.AccountID, r.ThreadID)
		if failure.Is(err, failure.KindNotFound) {
			return writes.Batch{}, nil // deleted meanwhile
		}
		if err != nil {
			return writes.Batch{}, err
		}
		typ, named, extra := applyReport(&g, r)
		if typ == "" {
			return writes.Batch{}, nil
		}
		g.Thread.UpdatedAt = s.now().UTC()
		e, err := s.groupEvent(typ, g, r.Agent, string(r.Kind), named, extra)
		if err != nil {
			return writes.Batch{}, err
		}
		return writes.Batch{GroupStates: []messaging.GroupState{g}, Events: []event.Event{e}}, nil
	})
}

// applyReport changes g as the report says and returns the event type
// (empty when nothing changed), the addresses the report named, and the
// extra fields of the event's payload.
func applyReport(g *messaging.GroupState, r GroupReport) (event.Type, []string, map[string]any) {
	switch r.Kind {
	case GroupReportCreated:
		if !g.Creating && (r.InviteLink == "" || r.InviteLink == g.InviteLink) {
			return "", nil, nil
		}
		g.Creating = false
		if r.InviteLink != "" {
			g.InviteLink = r.InviteLink
		}
		if t := strings.TrimSpace(r.Title); t != "" && len([]rune(t)) <= messaging.MaxGroupNameLength {
			g.Thread.Name = t
		}
		if !hasAddress(g.Members, r.Agent) {
			g.Members = append(g.Members, messaging.Participant{Address: r.Agent, IsAgent: true, Admin: true})
		}
		return event.GroupCreated, nil, nil
	case GroupReportCreateFailed:
		if !g.Creating {
			return "", nil, nil
		}
		g.Creating, g.Members = false, nil
		extra := map[string]any{}
		if r.Failure != nil {
			extra["error"] = map[string]any{"code": r.Failure.Code, "message": r.Failure.Message}
		}
		return event.GroupLeft, nil, extra
	case GroupReportDeleted:
		if len(g.Members) == 0 {
			return "", nil, nil
		}
		g.Members, g.InviteCode, g.InviteLink, g.Creating = nil, "", "", false
		return event.GroupLeft, nil, nil
	case GroupReportJoined:
		var joined []string
		for _, p := range r.People {
			if p.Address != "" && !hasAddress(g.Members, p.Address) {
				g.Members = append(g.Members, messaging.Participant{Address: p.Address})
				joined = append(joined, p.Address)
			}
		}
		if len(joined) == 0 {
			return "", nil, nil
		}
		return event.GroupParticipantsAdded, joined, nil
	case GroupReportRemoved:
		var gone []string
		for _, p := range r.People {
			if p.Address != r.Agent && hasAddress(g.Members, p.Address) {
				gone = append(gone, p.Address)
			}
		}
		if len(gone) == 0 || g.RemoveMembers(gone) != nil {
			return "", nil, nil
		}
		return event.GroupParticipantsRemoved, gone, nil
	case GroupReportJoinRequested, GroupReportJoinRequestRevoked:
		if r.JoinRequest == nil {
			return "", nil, nil
		}
		jr := r.JoinRequest
		request := map[string]any{"join_request_id": jr.ID, "number": jr.Person.Address, "user_id": jr.Person.UserID, "username": jr.Person.Username}
		if !jr.CreatedAt.IsZero() {
			request["created_at"] = jr.CreatedAt.UTC().Format("2006-01-02T15:04:05Z07:00")
		}
		return event.GroupUpdated, []string{jr.Person.Address}, map[string]any{"join_request": request}
	case GroupReportSettings:
		changed := false
		if t := strings.TrimSpace(r.Title); t != "" && t != g.Thread.Name && len([]rune(t)) <= messaging.MaxGroupNameLength {
			g.Thread.Name, changed = t, true
		}
		if d := r.Description; d != nil && *d != g.Description && len([]rune(*d)) <= messaging.MaxGroupDescription {
			g.Description, changed = *d, true
		}
		if !changed {
			return "", nil, nil
		}
		return event.GroupUpdated, nil, nil
	}
	return "", nil, nil
}

func hasAddress(members []messaging.Participant, address string) bool {
	for _, m := range members {
		if m.Address == address {
			return true
		}
	}
	return false
}
