package whatsappfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// The Groups API of the Cloud API, as the fake serves it. Requests and
// answers follow Meta's reference
// (developers.facebook.com/documentation/business-messaging/whatsapp/groups/reference,
// and its OpenAPI description "WhatsApp Business Cloud API - Groups
// Management API"): creating answers {"messaging_product","request_id"}
// and Meta makes the group later, reporting it in a group_lifecycle_update
// webhook; the other changes answer a request_id too and are reported in
// group_participants_update and group_settings_update webhooks. Meta's
// webhook reference for groups ("Webhooks for Groups API") gives the
// entries of those webhooks. A group has the business and at most 8
// people, who join with its invite link.
//
// The fake applies a change at once and keeps the webhook that reports
// it until TakeGroupWebhooks, so that a test posts it when it chooses.

// MaxParticipants is how many people a group takes besides the business.
const MaxParticipants = 8

// Person is a WhatsApp user as the Groups API names them: their phone
// number (digits, empty for a user with a username only), business-scoped
// user id and username.
type Person struct {
	WaID     string
	UserID   string
	Username string
}

func (p Person) json() map[string]any {
	out := map[string]any{"user_id": p.UserID}
	if p.WaID != "" {
		out["wa_id"] = p.WaID
	}
	if p.Username != "" {
		out["username"] = p.Username
	}
	return out
}

// Group is a group the fake keeps.
type Group struct {
	ID               string
	Subject          string
	Description      string
	JoinApprovalMode string
	InviteLink       string
	Created          int64
	Participants     []Person
	// Requests are the open join requests, by id.
	Requests map[string]Person
	Deleted  bool
}

// groupBook is the fake's groups, the webhooks its changes owe, and
// whether the number may use groups.
type groupBook struct {
	groups   map[string]*Group
	requests map[string]string // request id → group id, for creations
	webhooks [][]byte
	refused  bool
	calls    []GroupCall
	next     int
}

// GroupCall is a call of the Groups API the fake answered.
type GroupCall struct {
	Method string
	Path   string
	Query  string
	Body   map[string]any
}

// book is the fake's group book; s.mu must be held.
func (s *Server) book() *groupBook {
	if s.groupBook == nil {
		s.groupBook = &groupBook{groups: map[string]*Group{}, requests: map[string]string{}}
	}
	return s.groupBook
}

// RefuseGroups makes the number one that may not use the Groups API (not
// an Official Business Account): every group call answers Graph error 10.
func (s *Server) RefuseGroups() {
	s.mu.Lock()
	s.book().refused = true
	s.mu.Unlock()
}

// GroupCalls returns the Groups API calls answered so far, in order.
func (s *Server) GroupCalls() []GroupCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.book().calls)
}

// Group returns a copy of the group with the id, and whether the fake has
// it.
func (s *Server) Group(id string) (Group, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.book().groups[id]
	if !ok {
		return Group{}, false
	}
	c := *g
	c.Participants = slices.Clone(g.Participants)
	return c, true
}

// GroupOf returns the id of the group the creation request made.
func (s *Server) GroupOf(request string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.book().requests[request]
}

// TakeGroupWebhooks returns the webhooks owed for the changes made so far
// (a group made, its settings changed, people removed or let in, a group
// deleted), oldest first, and forgets them.
func (s *Server) TakeGroupWebhooks() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.book().webhooks
	s.book().webhooks = nil
	return out
}

// UserJoins lets p join the group with its invite link and returns the
// group_participants_update webhook that reports it. It fails when the
// group is full, gone, or needs approval.
func (s *Server) UserJoins(groupID string, p Person) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.book().groups[groupID]
	switch {
	case !ok || g.Deleted:
		return nil, fmt.Errorf("no group %s", groupID)
	case g.JoinApprovalMode == "approval_required":
		return nil, fmt.Errorf("group %s needs approval: use UserRequestsToJoin", groupID)
	case len(g.Participants) >= MaxParticipants:
		return nil, fmt.Errorf("group %s is full", groupID)
	}
	g.Participants = append(g.Participants, p)
	return s.groupNotification(FieldParticipants, map[string]any{
		"timestamp": timestamp, "group_id": groupID, "type": "group_participants_add", "reason": "invite_link",
		"added_participants": []any{participantEntry(p, p.UserID)},
	}), nil
}

// UserRequestsToJoin makes p ask to join the group and returns the join
// request's id and the group_participants_update webhook that reports it.
func (s *Server) UserRequestsToJoin(groupID string, p Person) (string, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.book()
	g, ok := b.groups[groupID]
	if !ok || g.Deleted {
		return "", nil, fmt.Errorf("no group %s", groupID)
	}
	b.next++
	id := fmt.Sprintf("%d", 1120000000000000+b.next)
	g.Requests[id] = p
	entry := map[string]any{"timestamp": timestamp, "group_id": groupID, "type": "group_join_request_created", "join_request_id": id}
	for k, v := range p.json() {
		entry[k] = v
	}
	return id, s.groupNotification(FieldParticipants, entry), nil
}

// The webhook fields of the Groups API.
const (
	FieldLifecycle    = "group_lifecycle_update"
	FieldParticipants = "group_participants_update"
	FieldSettings     = "group_settings_update"
)

// timestamp is the Unix time the fake's group webhooks carry.
const timestamp = "1763800200"

// groupNotification wraps one entry of "groups" the way the Cloud API
// posts a group webhook.
func (s *Server) groupNotification(field string, entry map[string]any) []byte {
	return change(s.PhoneNumberID, s.Display, field, map[string]any{"groups": []any{entry}})
}

// participantEntry is a person in added_participants or
// removed_participants: what the business or the user named them by
// (input), and who they are.
func participantEntry(p Person, input string) map[string]any {
	out := p.json()
	out["input"] = input
	return out
}

// groupID is a group id of the Cloud API's form (URL-safe base64 of the
// business number and a serial).
var groupIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{16,}$`)

// serveGroups answers the Groups API's routes; it returns false for a
// request that is not one of them.
func (s *Server) serveGroups(w http.ResponseWriter, r *http.Request) bool {
	prefix := "/" + Version + "/"
	if !strings.HasPrefix(r.URL.Path, prefix) {
		return false
	}
	parts := strings.Split(r.URL.Path[len(prefix):], "/")
	s.mu.Lock()
	b := s.book()
	own := parts[0] == s.PhoneNumberID
	_, known := b.groups[parts[0]]
	s.mu.Unlock()
	switch {
	case own && len(parts) == 2 && parts[1] == "groups":
	case known && (len(parts) == 1 || (len(parts) == 2 && (parts[1] == "invite_link" || parts[1] == "participants" || parts[1] == "join_requests"))):
	case !own && groupIDPattern.MatchString(parts[0]) && len(parts) <= 2 && strings.HasPrefix(parts[0], "Y2FwaV9ncm91cD"):
		unknownObject(w, parts[0]) // a group id the fake never made
		return true
	default:
		return false
	}
	var body map[string]any
	if r.Method != http.MethodGet {
		raw, _ := io.ReadAll(r.Body)
		if len(raw) > 0 && json.Unmarshal(raw, &body) != nil {
			graphError(w, 100)
			return true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b.calls = append(b.calls, GroupCall{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: body})
	if b.refused {
		graphError(w, 10)
		return true
	}
	var answer any
	ok := false
	switch {
	case own && r.Method == http.MethodPost:
		answer, ok = s.createGroup(body)
	case own && r.Method == http.MethodGet:
		answer, ok = s.activeGroups(), true
	default:
		g := b.groups[parts[0]]
		sub := ""
		if len(parts) == 2 {
			sub = parts[1]
		}
		if g.Deleted {
			unknownObject(w, g.ID)
			return true
		}
		answer, ok = s.groupCall(g, r.Method, sub, r.URL.Query().Get("fields"), body)
	}
	if !ok {
		graphError(w, 100)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
	return true
}

// onlyKeys tells whether body has exactly messaging_product "whatsapp"
// and keys among allowed.
func onlyKeys(body map[string]any, allowed ...string) bool {
	if body["messaging_product"] != "whatsapp" {
		return false
	}
	for k := range body {
		if k != "messaging_product" && !slices.Contains(allowed, k) {
			return false
		}
	}
	return true
}

// text reads an optional string field of at most max characters.
func text(body map[string]any, key string, max int) (string, bool) {
	v, present := body[key]
	if !present {
		return "", true
	}
	s, ok := v.(string)
	return s, ok && utf8.RuneCountInString(s) <= max
}

// newRequest is the answer to an asynchronous change: a new request id.
func (s *Server) newRequest() (string, map[string]any) {
	b := s.book()
	b.next++
	id := fmt.Sprintf("%d", 1990000000000000+b.next)
	return id, map[string]any{"messaging_product": "whatsapp", "request_id": id}
}

// createGroup answers POST /{phone-number-id}/groups: subject (required,
// 1 to 128 characters, trimmed), description (up to 2048) and
// join_approval_mode (auto_approve, approval_required).
func (s *Server) createGroup(body map[string]any) (any, bool) {
	subject, okSubject := text(body, "subject", 128)
	description, okDescription := text(body, "description", 2048)
	mode, okMode := text(body, "join_approval_mode", 32)
	if !onlyKeys(body, "subject", "description", "join_approval_mode") || !okSubject || strings.TrimSpace(subject) == "" ||
		!okDescription || !okMode || (mode != "" && mode != "auto_approve" && mode != "approval_required") {
		return nil, false
	}
	if mode == "" {
		mode = "auto_approve"
	}
	b := s.book()
	request, answer := s.newRequest()
	b.next++
	id := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("capi_group:%s:%d", s.PhoneNumberID, 120363404694233000+b.next)))
	link := "https://chat.whatsapp.com/" + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("invite%016d", b.next)))[:22]
	b.groups[id] = &Group{ID: id, Subject: strings.TrimSpace(subject), Description: description, JoinApprovalMode: mode,
		InviteLink: link, Created: 1763800150, Requests: map[string]Person{}}
	b.requests[request] = id
	b.webhooks = append(b.webhooks, s.groupNotification(FieldLifecycle, map[string]any{
		"timestamp": timestamp, "group_id": id, "type": "group_create", "request_id": request,
		"subject": strings.TrimSpace(subject), "invite_link": link, "join_approval_mode": mode,
	}))
	return answer, true
}

// activeGroups answers GET /{phone-number-id}/groups, in one page.
func (s *Server) activeGroups() any {
	groups := []any{}
	for _, g := range s.book().groups {
		if !g.Deleted {
			groups = append(groups, map[string]any{"id": g.ID, "subject": g.Subject, "created_at": fmt.Sprint(g.Created)})
		}
	}
	slices.SortFunc(groups, func(a, b any) int {
		return strings.Compare(a.(map[string]any)["id"].(string), b.(map[string]any)["id"].(string))
	})
	return map[string]any{"data": map[string]any{"groups": groups},
		"paging": map[string]any{"cursors": map[string]any{"before": "QVFIUmJl", "after": "QVFIUmFm"}}}
}

// groupCall answers the routes of one group.
func (s *Server) groupCall(g *Group, method, sub, fields string, body map[string]any) (any, bool) {
	b := s.book()
	switch {
	case sub == "" && method == http.MethodGet:
		return groupFields(g, fields)
	case sub == "" && method == http.MethodPost:
		subject, okSubject := text(body, "subject", 128)
		description, okDescription := text(body, "description", 2048)
		_, hasSubject := body["subject"]
		_, hasDescription := body["description"]
		if !onlyKeys(body, "subject", "description") || !okSubject || !okDescription || (!hasSubject && !hasDescription) ||
			(hasSubject && strings.TrimSpace(subject) == "") {
			return nil, false
		}
		request, answer := s.newRequest()
		entry := map[string]any{"timestamp": timestamp, "group_id": g.ID, "type": "group_settings_update", "request_id": request}
		if hasSubject {
			g.Subject = strings.TrimSpace(subject)
			entry["group_subject"] = map[string]any{"text": g.Subject, "update_successful": true}
		}
		if hasDescription {
			g.Description = description
			entry["group_description"] = map[string]any{"text": description, "update_successful": true}
		}
		b.webhooks = append(b.webhooks, s.groupNotification(FieldSettings, entry))
		return answer, true
	case sub == "" && method == http.MethodDelete:
		if body != nil {
			return nil, false
		}
		g.Deleted = true
		request, answer := s.newRequest()
		b.webhooks = append(b.webhooks, s.groupNotification(FieldLifecycle, map[string]any{
			"timestamp": timestamp, "group_id": g.ID, "type": "group_delete", "request_id": request}))
		return answer, true
	case sub == "invite_link" && method == http.MethodGet:
		return map[string]any{"messaging_product": "whatsapp", "invite_link": g.InviteLink}, true
	case sub == "participants" && method == http.MethodDelete:
		return s.removeParticipants(g, body)
	case sub == "join_requests" && method == http.MethodGet:
		return joinRequests(g), true
	case sub == "join_requests" && (method == http.MethodPost || method == http.MethodDelete):
		return s.decideJoinRequests(g, method == http.MethodPost, body)
	}
	return nil, false
}

// groupFields answers GET /{group-id}?fields=…: the id and the fields
// asked for, among subject, description, participants,
// total_participant_count, join_approval_mode, suspended and
// creation_timestamp.
func groupFields(g *Group, fields string) (any, bool) {
	out := map[string]any{"id": g.ID}
	for _, f := range strings.Split(fields, ",") {
		switch f {
		case "subject":
			out[f] = g.Subject
		case "description":
			out[f] = g.Description
		case "participants":
			people := []any{}
			for _, p := range g.Participants {
				people = append(people, p.json())
			}
			out[f] = people
		case "total_participant_count":
			out[f] = len(g.Participants)
		case "join_approval_mode":
			out[f] = g.JoinApprovalMode
		case "suspended":
			out[f] = false
		case "creation_timestamp":
			out[f] = g.Created
		case "":
		default:
			return nil, false
		}
	}
	return out, true
}

// removeParticipants answers DELETE /{group-id}/participants:
// participants, a list of {"user": phone number digits} or {"user_id":
// business-scoped user id}, each a participant.
func (s *Server) removeParticipants(g *Group, body map[string]any) (any, bool) {
	list, _ := body["participants"].([]any)
	if !onlyKeys(body, "participants") || len(list) == 0 || len(list) > MaxParticipants {
		return nil, false
	}
	var removed []any
	for _, raw := range list {
		item, _ := raw.(map[string]any)
		user, byPhone := item["user"].(string)
		uid, byID := item["user_id"].(string)
		if len(item) != 1 || (!byPhone && !byID) || (byPhone && (user == "" || strings.HasPrefix(user, "+"))) || (byID && !userID.MatchString(uid)) {
			return nil, false
		}
		i := slices.IndexFunc(g.Participants, func(p Person) bool { return (byPhone && p.WaID == user) || (byID && p.UserID == uid) })
		if i < 0 {
			continue // Meta reports it in failed_participants; the fake leaves it out
		}
		removed = append(removed, participantEntry(g.Participants[i], user+uid))
		g.Participants = slices.Delete(g.Participants, i, i+1)
	}
	request, answer := s.newRequest()
	s.book().webhooks = append(s.book().webhooks, s.groupNotification(FieldParticipants, map[string]any{
		"timestamp": timestamp, "group_id": g.ID, "type": "group_participants_remove", "request_id": request,
		"initiated_by": "business", "removed_participants": removed,
	}))
	return answer, true
}

// joinRequests answers GET /{group-id}/join_requests, in one page.
func joinRequests(g *Group) any {
	ids := make([]string, 0, len(g.Requests))
	for id := range g.Requests {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	data := []any{}
	for _, id := range ids {
		item := g.Requests[id].json()
		item["join_request_id"], item["creation_timestamp"] = id, 1763800180
		data = append(data, item)
	}
	return map[string]any{"data": data, "paging": map[string]any{"cursors": map[string]any{"before": "QVFIUmJl", "after": "QVFIUmFm"}}}
}

// decideJoinRequests answers POST (approve) and DELETE (reject) of
// /{group-id}/join_requests: join_requests, a list of open requests' ids.
// Approved people join, reported in a group_participants_update webhook.
func (s *Server) decideJoinRequests(g *Group, approve bool, body map[string]any) (any, bool) {
	list, _ := body["join_requests"].([]any)
	if !onlyKeys(body, "join_requests") || len(list) == 0 {
		return nil, false
	}
	var ids []string
	for _, raw := range list {
		id, _ := raw.(string)
		if _, open := g.Requests[id]; !open {
			return nil, false
		}
		ids = append(ids, id)
	}
	if approve && len(g.Participants)+len(ids) > MaxParticipants {
		return nil, false
	}
	var added []any
	for _, id := range ids {
		p := g.Requests[id]
		delete(g.Requests, id)
		if approve {
			g.Participants = append(g.Participants, p)
			added = append(added, participantEntry(p, p.UserID))
		}
	}
	request, answer := s.newRequest()
	if approve {
		s.book().webhooks = append(s.book().webhooks, s.groupNotification(FieldParticipants, map[string]any{
			"timestamp": timestamp, "group_id": g.ID, "type": "group_participants_add", "request_id": request,
			"reason": "join_request", "added_participants": added,
		}))
	}
	return answer, true
}

// validGroupSend checks a send to a group (recipient_type "group"): "to"
// a group the fake has, not deleted, and a text or media message.
func (s *Server) validGroupSend(body map[string]any) bool {
	if body["recipient_type"] != "group" {
		return true
	}
	to, _ := body["to"].(string)
	s.mu.Lock()
	g, ok := s.book().groups[to]
	s.mu.Unlock()
	switch body["type"] {
	case "text", "image", "video", "audio", "document":
	default:
		return false
	}
	return ok && !g.Deleted && body["recipient"] == nil && body["context"] == nil
}

// GroupMessage is a notification of a text a user wrote in a group: the
// message carries the group's id (group_id).
func GroupMessage(phoneNumberID, display, groupID, from, name, wamid, body string) []byte {
	return notification(phoneNumberID, display, map[string]any{
		"contacts": []any{map[string]any{"profile": map[string]any{"name": name}, "wa_id": from}},
		"messages": []any{map[string]any{
			"from": from, "group_id": groupID, "id": wamid, "timestamp": "1763800300", "type": "text",
			"text": map[string]any{"body": body},
		}},
	})
}
