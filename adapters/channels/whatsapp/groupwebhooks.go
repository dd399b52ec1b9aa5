package whatsapp

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// The webhook fields of the Groups API (a change's "field"), whose value
// carries "groups": a list of GroupEvent.
const (
	FieldGroupLifecycle    = "group_lifecycle_update"
	FieldGroupParticipants = "group_participants_update"
	FieldGroupSettings     = "group_settings_update"
)

// groupField tells whether a change's field is one of the Groups API's
// that Switchboard reads (group_status_update, a suspension, is not).
func groupField(field string) bool {
	return field == FieldGroupLifecycle || field == FieldGroupParticipants || field == FieldGroupSettings
}

// GroupEvent is one entry of a group webhook's "groups", as the Groups
// API's webhook reference shows them: its type (group_create,
// group_delete; group_participants_add, group_participants_remove,
// group_join_request_created, group_join_request_revoked;
// group_settings_update), the group, the request it answers, and what
// the type carries.
type GroupEvent struct {
	Timestamp        string              `json:"timestamp"`
	GroupID          string              `json:"group_id"`
	Type             string              `json:"type"`
	RequestID        string              `json:"request_id"`
	Subject          string              `json:"subject"`
	Description      string              `json:"description"`
	InviteLink       string              `json:"invite_link"`
	JoinApprovalMode string              `json:"join_approval_mode"`
	Reason           string              `json:"reason"`
	InitiatedBy      string              `json:"initiated_by"`
	Added            []GroupParticipant  `json:"added_participants"`
	Removed          []GroupParticipant  `json:"removed_participants"`
	JoinRequestID    string              `json:"join_request_id"`
	WaID             string              `json:"wa_id"`
	UserID           string              `json:"user_id"`
	Username         string              `json:"username"`
	GroupSubject     *GroupSettingChange `json:"group_subject"`
	GroupDescription *GroupSettingChange `json:"group_description"`
	Errors           []WebhookError      `json:"errors"`
}

// WebhookError is an error a webhook reports: a failed delivery, a group
// change Meta could not make.
type WebhookError struct {
	Code      int    `json:"code"`
	Title     string `json:"title"`
	Message   string `json:"message"`
	ErrorData struct {
		Details string `json:"details"`
	} `json:"error_data"`
}

// GroupParticipant is someone a participants webhook names: what the
// business named them by (input), their phone number (wa_id) and
// business-scoped user id (user_id), where shown.
type GroupParticipant struct {
	Input    string `json:"input"`
	WaID     string `json:"wa_id"`
	UserID   string `json:"user_id"`
	Username string `json:"username"`
}

// GroupSettingChange is the outcome of one setting of a settings update.
type GroupSettingChange struct {
	Text             string `json:"text"`
	UpdateSuccessful bool   `json:"update_successful"`
}

// person is who a webhook names: by phone number where shown, else by
// user id, else by what the business named them by.
func person(waID, userID, input, username string) messaging.GroupPerson {
	p := messaging.GroupPerson{Username: strings.TrimPrefix(username, "@")}
	if domain.ValidWhatsAppUserID(userID) {
		p.UserID = userID
	}
	switch {
	case Digits(waID) != "":
		p.Address = "+" + Digits(waID)
	case p.UserID != "":
		p.Address = p.UserID
	case domain.ValidWhatsAppUserID(input):
		p.Address, p.UserID = input, input
	case Digits(input) != "":
		p.Address = "+" + Digits(input)
	}
	return p
}

func people(list []GroupParticipant) []messaging.GroupPerson {
	out := make([]messaging.GroupPerson, 0, len(list))
	for _, g := range list {
		if p := person(g.WaID, g.UserID, g.Input, g.Username); p.Address != "" {
			out = append(out, p)
		}
	}
	return out
}

// groupUpdate maps a group webhook entry to the change it reports; false
// for entries Switchboard does not act on (a delete or a settings update
// that failed, types it does not know).
func groupUpdate(e GroupEvent) (channels.GroupUpdate, bool) {
	u := channels.GroupUpdate{ChatID: e.GroupID, Request: e.RequestID, At: unixTime(e.Timestamp)}
	failed := len(e.Errors) > 0
	switch e.Type {
	case "group_create":
		u.Kind, u.Title, u.InviteLink = messaging.GroupReportCreated, e.Subject, e.InviteLink
		if failed {
			first := e.Errors[0]
			pe := MapError(&GraphError{Code: first.Code, Message: firstNonEmpty(first.Message, first.Title)}, http.StatusBadRequest, "")
			if first.ErrorData.Details != "" {
				pe.Message += ": " + first.ErrorData.Details
			}
			u.Kind, u.Failure = messaging.GroupReportCreateFailed, pe
		}
	case "group_delete":
		u.Kind = messaging.GroupReportDeleted
	case "group_participants_add":
		u.Kind, u.People = messaging.GroupReportJoined, people(e.Added)
	case "group_participants_remove":
		u.Kind, u.People = messaging.GroupReportRemoved, people(e.Removed)
	case "group_join_request_created", "group_join_request_revoked":
		u.Kind = messaging.GroupReportJoinRequested
		if e.Type == "group_join_request_revoked" {
			u.Kind = messaging.GroupReportJoinRequestRevoked
		}
		u.JoinRequest = &messaging.JoinRequest{ID: e.JoinRequestID, Person: person(e.WaID, e.UserID, "", e.Username), CreatedAt: unixTime(e.Timestamp)}
	case "group_settings_update":
		u.Kind = messaging.GroupReportSettings
		if s := e.GroupSubject; s != nil && s.UpdateSuccessful {
			u.Title = s.Text
		}
		if d := e.GroupDescription; d != nil && d.UpdateSuccessful {
			text := d.Text
			u.Description = &text
		}
		return u, u.Title != "" || u.Description != nil
	default:
		return u, false
	}
	return u, !failed || u.Kind == messaging.GroupReportCreateFailed
}

// handleGroups hands the group webhook entries of a change to the inbox.
// A group made without an invite link in its webhook gets the link from
// the Cloud API (GET /{group-id}/invite_link), when it can be had.
func (in *Inbound) handleGroups(ctx context.Context, n account.Number, settings map[string]string, v Value) error {
	for _, e := range v.Groups {
		u, ok := groupUpdate(e)
		if !ok {
			continue
		}
		if u.Kind == messaging.GroupReportCreated && u.InviteLink == "" && u.ChatID != "" && in.Client != nil {
			var link struct {
				InviteLink string `json:"invite_link"`
			}
			if in.Client.call(ctx, settings, http.MethodGet, "/"+url.PathEscape(u.ChatID)+"/invite_link", nil, &link) == nil {
				u.InviteLink = link.InviteLink
			}
		}
		if err := in.Inbox.GroupReported(ctx, n, u); err != nil {
			return err
		}
	}
	return nil
}
