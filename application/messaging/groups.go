package messaging

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// ErrNotSupported is what a provider returns for a group action its
// platform does not allow.
var ErrNotSupported = errors.New("not supported by this provider")

// GroupCommand is one call of the group-management route.
type GroupCommand struct {
	AccountID    string
	Action       string
	AgentNumber  string
	ThreadID     string
	Title        string
	Participants []string
	// ParticipantsGiven tells an empty list from a missing one.
	ParticipantsGiven bool
	InitialMessage    string
	Name              string
	Description       string
	ImageURL          string
	InviteCode        string
	Setting           string
	// JoinApprovalMode is how a new group lets people in (create, on
	// providers that ask); JoinRequests are the requests an approval or a
	// rejection names.
	JoinApprovalMode string
	JoinRequests     []string
	// JoinRequestsGiven tells an empty list from a missing one.
	JoinRequestsGiven bool
}

// GroupResult is the group after an action, and what happened.
type GroupResult struct {
	Group   messaging.GroupState
	Message string
	// Invited are the people a create named on a provider that adds
	// nobody: they join with the group's invite link.
	Invited []string
	// Info is the group as its provider has it (info).
	Info *ProviderGroup
	// JoinRequests are the group's open requests to join (join_requests).
	JoinRequests []JoinRequest
	// Groups are the agent number's groups (list).
	Groups []ProviderGroup
}

// ManageGroup runs one group action: it checks the input and the group's
// rules, asks the provider behind the agent number to make the change,
// then stores the new state and a group event in one transaction. Nothing
// changes when a check or the provider refuses; a concurrent change of the
// group that makes the action fail between the provider's answer and the
// commit is answered with that failure.
func (s *Service) ManageGroup(ctx context.Context, cmd GroupCommand) (GroupResult, error) {
	action, ok := messaging.ParseGroupAction(cmd.Action)
	var p failure.Problems
	if !ok {
		names := make([]string, len(messaging.GroupActions))
		for i, a := range messaging.GroupActions {
			names[i] = string(a)
		}
		p.Add("enum", "action must be one of "+strings.Join(names, ", "), "action")
	}
	if !strings.HasPrefix(cmd.AgentNumber, "+") || !account.ValidE164(cmd.AgentNumber) {
		p.Add("value_error", "agent_number must be an agent number in E.164 form, starting with +", "agent_number")
	}
	if ok && action != messaging.ActionCreate && action != messaging.ActionList && cmd.ThreadID == "" && !(isJoin(action) && cmd.InviteCode != "") {
		p.Add("missing", "Field required", "thread_id")
	}
	if err := p.Err(); err != nil {
		return GroupResult{}, err
	}
	switch action {
	case messaging.ActionCreate:
		return s.createGroup(ctx, cmd)
	case messaging.ActionList:
		return s.listGroups(ctx, cmd)
	}
	if err := checkActionFields(action, cmd); err != nil {
		return GroupResult{}, err
	}
	if action == messaging.ActionUpdatePicture {
		// The picture is fetched outside the transaction (a download must
		// not hold the database), so the permission checks run first too.
		if err := s.precheckEdit(ctx, cmd); err != nil {
			return GroupResult{}, err
		}
		if err := s.checkPicture(ctx, cmd.ImageURL); err != nil {
			return GroupResult{}, err
		}
	}
	// The provider is told first, outside any transaction: its call may
	// take seconds, and a transaction would hold a connection of the pool
	// (and the group's row) all that time, while the provider's own reads
	// (a Telegram chat's id) waited for another connection. The change is
	// decided on the group as read now, then recorded on the group as it
	// is at the commit, its row locked; a concurrent change that makes it
	// fail there is answered with that failure.
	r := s.store.Repos()
	g, err := s.groupOf(ctx, r, cmd, action)
	if err != nil {
		return GroupResult{}, err
	}
	number, err := s.sendingNumber(ctx, r, cmd.AccountID, g.Thread.Service, cmd.AgentNumber)
	if err != nil {
		return GroupResult{}, err
	}
	if action.ReadOnly() {
		return s.readGroup(ctx, number, action, g, cmd.AgentNumber)
	}
	if action == messaging.ActionAddParticipants {
		if err := s.refuseOwnNumbers(ctx, r, cmd.AccountID, g.Thread.Service, cmd.Participants); err != nil {
			return GroupResult{}, err
		}
	}
	typ, named, message, err := applyGroupAction(&g, action, cmd)
	if err != nil {
		return GroupResult{}, err
	}
	if action == messaging.ActionAddParticipants {
		if err := s.checkGroupLimit(number, g, "participants"); err != nil {
			return GroupResult{}, err
		}
	}
	if err := s.tellProvider(ctx, number, GroupChange{Action: action, Group: g, Participants: named, JoinRequests: cmd.JoinRequests}); err != nil {
		return GroupResult{}, err
	}
	if typ == "" {
		// The provider reports what the action changes later, as it
		// happens (people joining after their requests are approved).
		return GroupResult{Group: g, Message: message}, nil
	}
	var out GroupResult
	err = s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		g, err := tx.Group(ctx, cmd.AccountID, g.Thread.ID)
		if err != nil {
			return writes.Batch{}, err
		}
		typ, named, message, err := applyGroupAction(&g, action, cmd)
		if err != nil {
			return writes.Batch{}, err
		}
		g.Thread.UpdatedAt = s.now().UTC()
		e, err := s.groupEvent(typ, g, cmd.AgentNumber, string(action), named, nil)
		if err != nil {
			return writes.Batch{}, err
		}
		out = GroupResult{Group: g, Message: message}
		return writes.Batch{GroupStates: []messaging.GroupState{g}, Events: []event.Event{e}}, nil
	})
	return out, err
}

// groupOf reads the group a command names: by its invite code for a join
// that gives one, else by its thread.
func (s *Service) groupOf(ctx context.Context, r TxReads, cmd GroupCommand, action messaging.GroupAction) (messaging.GroupState, error) {
	if isJoin(action) && cmd.InviteCode != "" {
		g, err := r.GroupByInviteCode(ctx, cmd.AccountID, cmd.InviteCode)
		if failure.Is(err, failure.KindNotFound) {
			return g, failure.NotFound("group with this invite code")
		}
		return g, err
	}
	if !ident.Valid(ident.Thread, cmd.ThreadID) {
		return messaging.GroupState{}, failure.NotFound("group")
	}
	return r.Group(ctx, cmd.AccountID, cmd.ThreadID)
}

// precheckEdit runs the checks of an edit without a transaction: the
// group exists for the account, the number may act, and may edit.
func (s *Service) precheckEdit(ctx context.Context, cmd GroupCommand) error {
	if !ident.Valid(ident.Thread, cmd.ThreadID) {
		return failure.NotFound("group")
	}
	r := s.store.Repos()
	g, err := r.Group(ctx, cmd.AccountID, cmd.ThreadID)
	if err != nil {
		return err
	}
	if _, err := s.sendingNumber(ctx, r, cmd.AccountID, g.Thread.Service, cmd.AgentNumber); err != nil {
		return err
	}
	return g.CheckEdit(cmd.AgentNumber)
}

// refuseOwnNumbers refuses to add the account's own agent numbers as plain
// participants: an agent number becomes a member by joining, so that it
// is known as an agent and can send.
func (s *Service) refuseOwnNumbers(ctx context.Context, r TxReads, accountID string, service account.Service, numbers []string) error {
	var p failure.Problems
	for i, n := range numbers {
		own, err := r.NumberByAddress(ctx, service, n)
		if err == nil && own.AccountID == accountID {
			p.Add("value_error", n+" is an agent number of this account: it joins with join_group", "participants", i)
		} else if err != nil && !failure.Is(err, failure.KindNotFound) {
			return err
		}
	}
	return p.Err()
}

func isJoin(a messaging.GroupAction) bool {
	return a == messaging.ActionJoin || a == messaging.ActionJoinGroup
}

// checkActionFields checks the fields each action needs.
func checkActionFields(action messaging.GroupAction, cmd GroupCommand) error {
	var p failure.Problems
	switch action {
	case messaging.ActionUpdateName:
		if err := messaging.CheckGroupName(cmd.Name, "name"); err != nil {
			return err
		}
	case messaging.ActionUpdateDescription:
		if len([]rune(cmd.Description)) > messaging.MaxGroupDescription {
			p.Add("string_too_long", fmt.Sprintf("description must be at most %d characters", messaging.MaxGroupDescription), "description")
		}
	case messaging.ActionUpdatePicture:
		if err := messaging.CheckMediaURL(cmd.ImageURL); err != nil {
			p.Add("url_parsing", strings.Replace(err.Error(), "the media URL", "image_url", 1), "image_url")
		}
	case messaging.ActionAddParticipants, messaging.ActionRemoveParticipants, messaging.ActionPromoteAdmin, messaging.ActionDemoteAdmin:
		checkParticipants(&p, cmd.Participants, cmd.ParticipantsGiven, "")
	case messaging.ActionUpdateSettings:
		if _, ok := messaging.ParseSetting(cmd.Setting); !ok {
			p.Add("enum", "setting must be one of announcement, not_announcement, locked, unlocked", "setting")
		}
	case messaging.ActionApproveJoinRequests, messaging.ActionRejectJoinRequests:
		checkJoinRequests(&p, cmd.JoinRequests, cmd.JoinRequestsGiven)
	}
	return p.Err()
}

// MaxJoinRequests is how many join requests one approval or rejection
// names at most.
const MaxJoinRequests = 100

// checkJoinRequests validates the join requests an approval or a
// rejection names: present, 1 to MaxJoinRequests ids, none blank or
// listed twice.
func checkJoinRequests(p *failure.Problems, ids []string, given bool) {
	if !checkListSize(p, "join_requests", "join request id", len(ids), given, MaxJoinRequests) {
		return
	}
	seen := map[string]bool{}
	for i, id := range ids {
		switch {
		case strings.TrimSpace(id) == "" || len(id) > 256:
			p.Add("value_error", "a join request id is 1 to 256 characters, as the join_requests action lists it", "join_requests", i)
		case seen[id]:
			p.Add("value_error", "join request id listed twice", "join_requests", i)
		}
		seen[id] = true
	}
}

// checkListSize records what is wrong with the size of the list field
// of n items (each a noun): missing, empty, or longer than max. It
// reports whether the size is right.
func checkListSize(p *failure.Problems, field, noun string, n int, given bool, max int) bool {
	switch {
	case !given:
		p.Add("missing", "Field required", field)
	case n == 0:
		p.Add("too_short", field+" must list at least one "+noun, field)
	case n > max:
		p.Add("too_long", fmt.Sprintf("%s may list at most %d %ss", field, max, noun), field)
	default:
		return true
	}
	return false
}

// checkParticipants validates a participants list: present, non-empty,
// E.164, no duplicates (nor the agent itself), at most the group limit.
func checkParticipants(p *failure.Problems, list []string, given bool, agent string) {
	if !checkListSize(p, "participants", "number", len(list), given, messaging.MaxGroupMembers) {
		return
	}
	seen := map[string]bool{}
	if agent != "" {
		seen[agent] = true
	}
	for i, n := range list {
		switch {
		case !account.ValidE164(n):
			p.Add("value_error", "participant must be a number in E.164 form", "participants", i)
		case seen[n]:
			p.Add("value_error", "participant is listed twice (or is the agent number)", "participants", i)
		}
		seen[n] = true
	}
}

// applyGroupAction checks the group's rules for the action and changes g;
// it returns the event type, the addresses the action named, and a
// sentence for the response.
func applyGroupAction(g *messaging.GroupState, action messaging.GroupAction, cmd GroupCommand) (event.Type, []string, string, error) {
	agent := cmd.AgentNumber
	switch action {
	case messaging.ActionUpdateName:
		if err := g.CheckEdit(agent); err != nil {
			return "", nil, "", err
		}
		g.Thread.Name = strings.TrimSpace(cmd.Name)
		return event.GroupUpdated, nil, "group name updated", nil
	case messaging.ActionUpdateDescription:
		if err := g.CheckEdit(agent); err != nil {
			return "", nil, "", err
		}
		g.Description = cmd.Description
		return event.GroupUpdated, nil, "group description updated", nil
	case messaging.ActionUpdatePicture:
		if err := g.CheckEdit(agent); err != nil {
			return "", nil, "", err
		}
		g.PictureURL = cmd.ImageURL
		return event.GroupUpdated, nil, "group picture updated", nil
	case messaging.ActionUpdateSettings:
		if err := g.CheckEdit(agent); err != nil {
			return "", nil, "", err
		}
		setting, _ := messaging.ParseSetting(cmd.Setting)
		g.Apply(setting)
		return event.GroupUpdated, nil, "group setting " + string(setting) + " applied", nil
	case messaging.ActionAddParticipants:
		if err := g.CheckAdmin(agent); err != nil {
			return "", nil, "", err
		}
		return event.GroupParticipantsAdded, cmd.Participants, "participants added", g.AddMembers(cmd.Participants)
	case messaging.ActionRemoveParticipants:
		if err := g.CheckAdmin(agent); err != nil {
			return "", nil, "", err
		}
		return event.GroupParticipantsRemoved, cmd.Participants, "participants removed", g.RemoveMembers(cmd.Participants)
	case messaging.ActionPromoteAdmin, messaging.ActionDemoteAdmin:
		if err := g.CheckAdmin(agent); err != nil {
			return "", nil, "", err
		}
		promote := action == messaging.ActionPromoteAdmin
		msg := "participants promoted to admin"
		if !promote {
			msg = "participants demoted from admin"
		}
		return event.GroupAdminsChanged, cmd.Participants, msg, g.SetAdmins(cmd.Participants, promote)
	case messaging.ActionJoin, messaging.ActionJoinGroup:
		return event.GroupParticipantsAdded, []string{agent}, "joined the group", g.Join(agent)
	case messaging.ActionLeave:
		return event.GroupLeft, []string{agent}, "left the group", g.Leave(agent)
	case messaging.ActionDelete:
		return event.GroupLeft, nil, "group deleted", g.Delete(agent)
	case messaging.ActionApproveJoinRequests:
		return "", nil, "join requests approved: the people join with group.participants_added events", g.CheckAdmin(agent)
	case messaging.ActionRejectJoinRequests:
		return "", nil, "join requests rejected", g.CheckAdmin(agent)
	}
	return "", nil, "", fmt.Errorf("unhandled group action %s", action)
}

// tellProvider asks the provider behind the number n to make the change
// c (whose Number and Settings it fills in).
func (s *Service) tellProvider(ctx context.Context, n account.Number, c GroupChange) error {
	provider, ok := s.providers.Provider(n.Provider)
	gp, can := provider.(GroupProvider)
	if !ok || !can {
		return notSupported(n.Provider, c.Action)
	}
	settings, err := s.opener.NumberSettings(n)
	if err != nil {
		return err
	}
	c.Number, c.Settings = n, settings
	err = gp.ApplyGroupChange(ctx, c)
	if errors.Is(err, ErrNotSupported) {
		return notSupported(n.Provider, c.Action)
	}
	return groupRefused("the change", err)
}

// groupRefused is the failure of a group action its provider refused: a
// refusal the provider calls final (the number may not use groups, a
// parameter it does not take) is 403 provider_refused, naming the
// provider's error; one that may pass later is providerRefused's.
func groupRefused(what string, err error) error {
	var pe *ProviderError
	if errors.As(err, &pe) && pe.Permanent {
		return &failure.Error{Kind: failure.KindForbidden, Code: "provider_refused",
			Message: "the provider refused " + what + ": " + pe.Message, Err: err}
	}
	return providerRefused(what, err)
}

// checkGroupLimit refuses a group with more participants (people besides
// the agent numbers) than the provider's platform allows, naming field.
func (s *Service) checkGroupLimit(n account.Number, g messaging.GroupState, field string) error {
	provider, _ := s.providers.Provider(n.Provider)
	limits, ok := provider.(GroupLimits)
	if !ok {
		return nil
	}
	people := 0
	for _, m := range g.Members {
		if !m.IsAgent {
			people++
		}
	}
	if max := limits.MaxGroupParticipants(); people > max {
		return failure.Invalid(failure.Field("too_long", fmt.Sprintf(
			"a %s group has at most %d participants besides the agent number; this one would have %d", n.Provider, max, people), field))
	}
	return nil
}

func notSupported(p account.Provider, action messaging.GroupAction) error {
	return &failure.Error{Kind: failure.KindNotImplemented, Code: "not_supported_by_provider",
		Message: fmt.Sprintf("the %s provider cannot %s", p, strings.ReplaceAll(string(action), "_", " "))}
}

// checkPicture checks a picture URL at request time: public, within the
// image limit, and an image type the channel accepts.
func (s *Service) checkPicture(ctx context.Context, url string) error {
	if s.urls != nil {
		if err := s.urls.CheckURL(ctx, url); err != nil {
			return failure.Invalid(failure.Field("url_forbidden", "image_url is not allowed: "+err.Error(), "image_url"))
		}
	}
	if s.media == nil {
		return nil
	}
	info, err := s.media.Probe(ctx, url, messaging.MaxMediaBytes(messaging.KindImage))
	switch {
	case errors.Is(err, ErrMediaTooLarge):
		return failure.Invalid(failure.Field("value_error", "image_url: pictures may be at most 5 MB", "image_url"))
	case err != nil:
		return failure.Invalid(failure.Field("value_error", "image_url could not be fetched: "+err.Error(), "image_url"))
	case !messaging.AcceptsMediaType(account.WhatsApp, messaging.KindImage, info.ContentType):
		return failure.Invalid(failure.Field("value_error", "image_url must be a JPEG or PNG image, got "+info.ContentType, "image_url"))
	}
	return nil
}

func (s *Service) createGroup(ctx context.Context, cmd GroupCommand) (GroupResult, error) {
	var p failure.Problems
	if err := messaging.CheckGroupName(cmd.Title, "title"); err != nil {
		p = append(p, failure.As(err).Fields...)
	}
	checkParticipants(&p, cmd.Participants, cmd.ParticipantsGiven, cmd.AgentNumber)
	if cmd.InitialMessage != "" {
		if err := (messaging.Content{Kind: messaging.KindText, Text: cmd.InitialMessage}).Check(messaging.Fields{Text: "initial_message"}); err != nil {
			p = append(p, failure.As(err).Fields...)
		}
	}
	if len([]rune(cmd.Description)) > messaging.MaxGroupDescription {
		p.Add("string_too_long", fmt.Sprintf("description must be at most %d characters", messaging.MaxGroupDescription), "description")
	}
	mode, modeOK := messaging.ParseJoinApprovalMode(cmd.JoinApprovalMode)
	if cmd.JoinApprovalMode != "" && !modeOK {
		p.Add("enum", "join_approval_mode must be one of auto_approve, approval_required", "join_approval_mode")
	}
	if err := p.Err(); err != nil {
		return GroupResult{}, err
	}
	// The provider is asked first, outside any transaction (see
	// ManageGroup); the group is then recorded with the number as it is
	// at the commit.
	number, err := s.creatingNumber(ctx, cmd)
	if err != nil {
		return GroupResult{}, err
	}
	if err := s.refuseOwnNumbers(ctx, s.store.Repos(), cmd.AccountID, number.Service, cmd.Participants); err != nil {
		return GroupResult{}, err
	}
	now := s.now().UTC()
	g := messaging.GroupState{
		Thread: messaging.Thread{
			ID: ident.New(ident.Thread), AccountID: cmd.AccountID, Service: number.Service, Type: messaging.Group,
			AgentNumber: number.Number, Name: strings.TrimSpace(cmd.Title), CreatedAt: now, UpdatedAt: now,
		},
		Description: cmd.Description,
		Members:     []messaging.Participant{{Address: number.Number, IsAgent: true, Admin: true}},
	}
	for _, a := range cmd.Participants {
		g.Members = append(g.Members, messaging.Participant{Address: a})
	}
	if err := s.checkGroupLimit(number, g, "participants"); err != nil {
		return GroupResult{}, err
	}
	out := GroupResult{Message: "group created"}
	var chat string
	if creator, ok := s.providerOf(number).(GroupCreator); ok {
		// The platform makes the group later, empty: people join it with
		// the invite link it makes.
		if cmd.InitialMessage != "" {
			return GroupResult{}, failure.Invalid(failure.Field("value_error", fmt.Sprintf(
				"a %s group is created empty, and people join it with its invite link: send the first message once they joined", number.Provider), "initial_message"))
		}
		request, err := s.askCreator(ctx, creator, number, GroupChange{Action: messaging.ActionCreate, Group: g, Participants: cmd.Participants, JoinApprovalMode: mode})
		if err != nil {
			return GroupResult{}, err
		}
		g.Members, g.Creating, chat = g.Members[:1], true, PendingGroupChat(request)
		out.Invited = cmd.Participants
		out.Message = fmt.Sprintf("group creation requested: %s makes the group in a moment and adds nobody itself; "+
			"the group.created event brings its invite_link, which people join with", number.Provider)
	} else {
		g.InviteCode = inviteCode()
		if err := s.tellProvider(ctx, number, GroupChange{Action: messaging.ActionCreate, Group: g, Participants: cmd.Participants, JoinApprovalMode: mode}); err != nil {
			return GroupResult{}, err
		}
	}
	err = s.store.Decide(ctx, func(ctx context.Context, tx TxReads) (writes.Batch, error) {
		if _, err := s.sendingNumber(ctx, tx, cmd.AccountID, number.Service, number.Number); err != nil {
			return writes.Batch{}, err
		}
		if err := s.refuseOwnNumbers(ctx, tx, cmd.AccountID, number.Service, cmd.Participants); err != nil {
			return writes.Batch{}, err
		}
		b := writes.Batch{Groups: []messaging.GroupState{g}}
		if chat != "" {
			b.GroupChats = []writes.GroupChat{{NumberID: number.ID, ChatID: chat, ThreadID: g.Thread.ID, At: now}}
		}
		if !g.Creating {
			e, err := s.groupEvent(event.GroupCreated, g, cmd.AgentNumber, string(messaging.ActionCreate), cmd.Participants, nil)
			if err != nil {
				return writes.Batch{}, err
			}
			b.Events = []event.Event{e}
		}
		if cmd.InitialMessage != "" {
			_, sent, err := s.queued(g.Thread, number, "", messaging.Content{Kind: messaging.KindText, Text: cmd.InitialMessage}, messaging.Reply{})
			if err != nil {
				return writes.Batch{}, err
			}
			b.Add(sent)
		}
		return b, nil
	})
	out.Group = g
	return out, err
}

// creatingNumber is the agent number a create names: a WhatsApp number of
// the account (the route is WhatsApp's). A Telegram bot's provider is
// asked, so that it says what it can do (bots cannot create groups: 501).
func (s *Service) creatingNumber(ctx context.Context, cmd GroupCommand) (account.Number, error) {
	r := s.store.Repos()
	number, err := s.sendingNumber(ctx, r, cmd.AccountID, account.WhatsApp, cmd.AgentNumber)
	if err == nil {
		return number, nil
	}
	if bot, botErr := s.sendingNumber(ctx, r, cmd.AccountID, account.Telegram, cmd.AgentNumber); botErr == nil && bot.Provider != account.ProviderSandbox {
		if perr := s.tellProvider(ctx, bot, GroupChange{Action: messaging.ActionCreate, Participants: cmd.Participants}); perr != nil {
			return account.Number{}, perr
		}
	}
	return account.Number{}, err
}

// providerOf is the provider behind n, nil when none is configured.
func (s *Service) providerOf(n account.Number) Provider {
	p, _ := s.providers.Provider(n.Provider)
	return p
}

// askCreator asks a platform that makes groups itself for the group of c
// and returns its request's id.
func (s *Service) askCreator(ctx context.Context, creator GroupCreator, n account.Number, c GroupChange) (string, error) {
	settings, err := s.opener.NumberSettings(n)
	if err != nil {
		return "", err
	}
	c.Number, c.Settings = n, settings
	request, err := creator.CreateGroup(ctx, c)
	if err != nil {
		return "", groupRefused("to create the group", err)
	}
	return request, nil
}

// readGroup answers the actions that only read a group: info (the group
// as its provider has it, for a member) and join_requests (for an
// admin). A group its provider is still creating is answered as stored.
func (s *Service) readGroup(ctx context.Context, n account.Number, action messaging.GroupAction, g messaging.GroupState, agent string) (GroupResult, error) {
	out := GroupResult{Group: g, Message: "group info"}
	if g.Creating && action == messaging.ActionInfo {
		out.Message = "the provider is creating the group"
		return out, nil
	}
	inspector, ok := s.providerOf(n).(GroupInspector)
	q := GroupQuery{Number: n, Group: g}
	var err error
	if ok {
		if q.Settings, err = s.opener.NumberSettings(n); err != nil {
			return GroupResult{}, err
		}
	}
	switch action {
	case messaging.ActionInfo:
		if _, err := g.Actor(agent); err != nil {
			return GroupResult{}, err
		}
		if !ok {
			return out, nil
		}
		info, err := inspector.GroupInfo(ctx, q)
		if err != nil {
			return GroupResult{}, groupRefused("to read the group", err)
		}
		info.ThreadID = g.Thread.ID
		out.Info = &info
		if info.InviteLink != "" {
			out.Group.InviteLink = info.InviteLink
		}
	case messaging.ActionJoinRequests:
		if err := g.CheckAdmin(agent); err != nil {
			return GroupResult{}, err
		}
		if !ok {
			return GroupResult{}, notSupported(n.Provider, action)
		}
		if out.JoinRequests, err = inspector.JoinRequests(ctx, q); err != nil {
			return GroupResult{}, groupRefused("to list the join requests", err)
		}
		if out.JoinRequests == nil {
			out.JoinRequests = []JoinRequest{}
		}
		out.Message = fmt.Sprintf("%d open join requests", len(out.JoinRequests))
	}
	return out, nil
}

// listGroups answers the list action: the agent number's groups, as its
// provider lists them where it can, else the group threads it is a
// member of (at most 100, most recently active first).
func (s *Service) listGroups(ctx context.Context, cmd GroupCommand) (GroupResult, error) {
	r := s.store.Repos()
	number, err := s.sendingNumber(ctx, r, cmd.AccountID, account.WhatsApp, cmd.AgentNumber)
	if err != nil {
		var botErr error
		if number, botErr = s.sendingNumber(ctx, r, cmd.AccountID, account.Telegram, cmd.AgentNumber); botErr != nil {
			return GroupResult{}, err
		}
	}
	out := GroupResult{Groups: []ProviderGroup{}}
	if inspector, ok := s.providerOf(number).(GroupInspector); ok {
		settings, err := s.opener.NumberSettings(number)
		if err != nil {
			return GroupResult{}, err
		}
		groups, err := inspector.ActiveGroups(ctx, number, settings)
		if err != nil {
			return GroupResult{}, groupRefused("to list the groups", err)
		}
		out.Groups = append(out.Groups, groups...)
	} else {
		threads, _, err := r.Threads(ctx, ThreadQuery{AccountID: cmd.AccountID, Phone: number.Number, Limit: 100})
		if err != nil {
			return GroupResult{}, err
		}
		for _, t := range threads {
			if t.Thread.Type != messaging.Group || t.Thread.Service != number.Service || messaging.CheckGroupSend(number.Number, t.Participants) != nil {
				continue
			}
			out.Groups = append(out.Groups, ProviderGroup{ThreadID: t.Thread.ID, Subject: t.Thread.Name, CreatedAt: t.Thread.CreatedAt,
				ParticipantCount: len(t.Participants) - 1})
		}
	}
	out.Message = fmt.Sprintf("%d groups", len(out.Groups))
	return out, nil
}

// inviteCode is 22 random URL-safe characters, like a WhatsApp invite link.
func inviteCode() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 22)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// groupEvent is the event on the group's log about a change: the action
// (an action of the route, or what the provider reported), the addresses
// it named, and extra fields of the payload, if any.
func (s *Service) groupEvent(typ event.Type, g messaging.GroupState, agent string, action string, named []string, extra map[string]any) (event.Event, error) {
	members := make([]map[string]any, len(g.Members))
	for i, m := range g.Members {
		members[i] = map[string]any{"number": m.Address, "admin": m.Admin, "is_agent": m.IsAgent}
	}
	if named == nil {
		named = []string{}
	}
	id := ident.New(ident.Event)
	now := s.now().UTC()
	group := map[string]any{
		"title": g.Thread.Name, "description": g.Description, "picture_url": g.PictureURL,
		"announcement": g.Announcement, "locked": g.Locked, "members": members,
	}
	if g.InviteLink != "" {
		group["invite_link"] = g.InviteLink
	}
	body := map[string]any{
		"event": typ, "event_id": id, "thread_id": g.Thread.ID, "thread_type": "group", "a1_account_id": g.Thread.AccountID,
		"a1_phone_number": agent, "service": g.Thread.Service, "action": action, "participants": named,
		"group":     group,
		"timestamp": now.Format("2006-01-02T15:04:05.999999Z07:00"),
	}
	for k, v := range extra {
		body[k] = v
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return event.Event{}, err
	}
	return event.Event{ID: id, AccountID: g.Thread.AccountID, Type: typ, ThreadID: g.Thread.ID, Payload: payload, CreatedAt: now}, nil
}
