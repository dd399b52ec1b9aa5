package messaging

import (
	"fmt"
	"strings"

	"github.com/switchboard-dev/switchboard/domain/failure"
)

// GroupAction is a group-management action.
type GroupAction string

// The actions of the group-management route. Join and JoinGroup are the
// two spellings the interface gives for one action.
const (
	ActionCreate             GroupAction = "create"
	ActionUpdateName         GroupAction = "update_name"
	ActionUpdateDescription  GroupAction = "update_description"
	ActionUpdatePicture      GroupAction = "update_picture"
	ActionAddParticipants    GroupAction = "add_participants"
	ActionRemoveParticipants GroupAction = "remove_participants"
	ActionPromoteAdmin       GroupAction = "promote_admin"
	ActionDemoteAdmin        GroupAction = "demote_admin"
	ActionJoin               GroupAction = "join"
	ActionJoinGroup          GroupAction = "join_group"
	ActionLeave              GroupAction = "leave"
	ActionUpdateSettings     GroupAction = "update_settings"
	// ActionInfo reads the group as the provider has it; ActionList, the
	// agent number's groups.
	ActionInfo GroupAction = "info"
	ActionList GroupAction = "list"
	// ActionDelete ends the group: nobody is a member any more.
	ActionDelete GroupAction = "delete"
	// ActionJoinRequests lists the requests to join a group that needs
	// approval; the other two approve or reject some of them.
	ActionJoinRequests        GroupAction = "join_requests"
	ActionApproveJoinRequests GroupAction = "approve_join_requests"
	ActionRejectJoinRequests  GroupAction = "reject_join_requests"
)

// GroupActions lists every action, for validation messages.
var GroupActions = []GroupAction{
	ActionCreate, ActionUpdateName, ActionUpdateDescription, ActionUpdatePicture,
	ActionAddParticipants, ActionRemoveParticipants, ActionPromoteAdmin, ActionDemoteAdmin,
	ActionJoin, ActionJoinGroup, ActionLeave, ActionUpdateSettings,
	ActionInfo, ActionList, ActionDelete, ActionJoinRequests, ActionApproveJoinRequests, ActionRejectJoinRequests,
}

// ReadOnly tells whether the action only reads: it changes no group and
// records no event.
func (a GroupAction) ReadOnly() bool {
	return a == ActionInfo || a == ActionList || a == ActionJoinRequests
}

// JoinApprovalMode says whether people who open a group's invite link
// join at once or ask to join (a WhatsApp Cloud API group's setting).
type JoinApprovalMode string

// The join approval modes, with the WhatsApp Cloud API's names.
const (
	JoinAutoApprove      JoinApprovalMode = "auto_approve"
	JoinApprovalRequired JoinApprovalMode = "approval_required"
)

// ParseJoinApprovalMode accepts a join approval mode.
func ParseJoinApprovalMode(s string) (JoinApprovalMode, bool) {
	switch JoinApprovalMode(s) {
	case JoinAutoApprove, JoinApprovalRequired:
		return JoinApprovalMode(s), true
	}
	return "", false
}

// ParseGroupAction accepts an action name.
func ParseGroupAction(s string) (GroupAction, bool) {
	for _, a := range GroupActions {
		if string(a) == s {
			return a, true
		}
	}
	return "", false
}

// Setting is a group setting value.
type Setting string

// The settings: announcement groups let only admins send; locked groups
// let only admins change the name, description, picture and settings.
const (
	SettingAnnouncement    Setting = "announcement"
	SettingNotAnnouncement Setting = "not_announcement"
	SettingLocked          Setting = "locked"
	SettingUnlocked        Setting = "unlocked"
)

// ParseSetting accepts a setting value.
func ParseSetting(s string) (Setting, bool) {
	switch Setting(s) {
	case SettingAnnouncement, SettingNotAnnouncement, SettingLocked, SettingUnlocked:
		return Setting(s), true
	}
	return "", false
}

// GroupState is a group thread's state and its current members.
type GroupState struct {
	Thread       Thread
	Description  string
	PictureURL   string
	InviteCode   string
	Announcement bool
	Locked       bool
	Members      []Participant
	// InviteLink is the link people join the group with, where the
	// provider makes one (https://chat.whatsapp.com/… for a WhatsApp
	// Cloud API group).
	InviteLink string
	// Creating is set while the provider has not yet created the group it
	// was asked for (a WhatsApp Cloud API group until Meta confirms it):
	// nobody acts in the group or sends to it before.
	Creating bool
}

// Limits of groups (WhatsApp's).
const (
	MaxGroupMembers     = 1024
	MaxGroupNameLength  = 100
	MaxGroupDescription = 2048
)

// InviteLinkDetail names the detail of a refusal that says which link
// people join the group with instead (use_invite_link).
const InviteLinkDetail = "invite_link"

// Group rule failures, with the codes clients see.
var (
	ErrNotAdmin       = failure.Forbidden("not_group_admin", "only group admins may do this")
	ErrAdminsOnlySend = failure.Forbidden("admins_only",
		"this group is set to announcement: only admins may send messages")
	ErrAdminsOnlyEdit = failure.Forbidden("group_locked",
		"this group is locked: only admins may change its name, description, picture or settings")
	ErrGroupCreating = failure.Conflict("group_not_ready",
		"the provider has not created this group yet: it is ready with the group.created event")
)

// member returns the member with address, if any.
func (g *GroupState) member(address string) (*Participant, bool) {
	for i := range g.Members {
		if g.Members[i].Address == address {
			return &g.Members[i], true
		}
	}
	return nil, false
}

// Actor checks that the group exists at its provider and that agent is a
// member of it, and returns the member.
func (g *GroupState) Actor(agent string) (Participant, error) {
	if g.Creating {
		return Participant{}, ErrGroupCreating
	}
	m, ok := g.member(agent)
	if !ok || !m.IsAgent {
		return Participant{}, ErrNotGroupMember
	}
	return *m, nil
}

// CheckSend applies the group send rules: the agent is a member, and in an
// announcement group an admin.
func (g *GroupState) CheckSend(agent string) error {
	actor, err := g.Actor(agent)
	if err != nil {
		return err
	}
	if g.Announcement && !actor.Admin {
		return ErrAdminsOnlySend
	}
	return nil
}

// CheckEdit applies the rule for changing name, description, picture and
// settings: any member, or only admins when the group is locked.
func (g *GroupState) CheckEdit(agent string) error {
	actor, err := g.Actor(agent)
	if err != nil {
		return err
	}
	if g.Locked && !actor.Admin {
		return ErrAdminsOnlyEdit
	}
	return nil
}

// CheckAdmin applies the rule for membership changes: only admins.
func (g *GroupState) CheckAdmin(agent string) error {
	actor, err := g.Actor(agent)
	if err != nil {
		return err
	}
	if !actor.Admin {
		return ErrNotAdmin
	}
	return nil
}

// AddMembers adds new members; any that already belongs is an error and
// nothing changes.
func (g *GroupState) AddMembers(addresses []string) error {
	var p failure.Problems
	for i, a := range addresses {
		if _, ok := g.member(a); ok {
			p.Add("value_error", a+" is already a member", "participants", i)
		}
	}
	if len(g.Members)+len(addresses) > MaxGroupMembers {
		p.Add("too_long", fmt.Sprintf("a group has at most %d members", MaxGroupMembers), "participants")
	}
	if err := p.Err(); err != nil {
		return err
	}
	for _, a := range addresses {
		g.Members = append(g.Members, Participant{Address: a})
	}
	return nil
}

// RemoveMembers removes members; a non-member is an error and nothing
// changes.
func (g *GroupState) RemoveMembers(addresses []string) error {
	if err := g.requireMembers(addresses); err != nil {
		return err
	}
	drop := map[string]bool{}
	for _, a := range addresses {
		drop[a] = true
	}
	kept := g.Members[:0]
	for _, m := range g.Members {
		if !drop[m.Address] {
			kept = append(kept, m)
		}
	}
	g.Members = kept
	return nil
}

// SetAdmins promotes or demotes members; a non-member is an error.
func (g *GroupState) SetAdmins(addresses []string, admin bool) error {
	if err := g.requireMembers(addresses); err != nil {
		return err
	}
	for _, a := range addresses {
		m, _ := g.member(a)
		m.Admin = admin
	}
	return nil
}

func (g *GroupState) requireMembers(addresses []string) error {
	var p failure.Problems
	for i, a := range addresses {
		if _, ok := g.member(a); !ok {
			p.Add("value_error", a+" is not a member of this group", "participants", i)
		}
	}
	return p.Err()
}

// Join adds an agent number as a member.
func (g *GroupState) Join(agent string) error {
	if _, ok := g.member(agent); ok {
		return failure.Conflict("already_member", agent+" is already a member of this group")
	}
	if len(g.Members) >= MaxGroupMembers {
		return failure.Conflict("group_full", "the group has reached its member limit")
	}
	g.Members = append(g.Members, Participant{Address: agent, IsAgent: true})
	return nil
}

// Leave removes the agent; it can no longer send to the group.
func (g *GroupState) Leave(agent string) error {
	if _, err := g.Actor(agent); err != nil {
		return err
	}
	return g.RemoveMembers([]string{agent})
}

// Delete ends the group: every member is gone, and with them the ways to
// join it.
func (g *GroupState) Delete(agent string) error {
	if err := g.CheckAdmin(agent); err != nil {
		return err
	}
	g.Members, g.InviteCode, g.InviteLink = nil, "", ""
	return nil
}

// Apply changes a setting.
func (g *GroupState) Apply(s Setting) {
	switch s {
	case SettingAnnouncement:
		g.Announcement = true
	case SettingNotAnnouncement:
		g.Announcement = false
	case SettingLocked:
		g.Locked = true
	case SettingUnlocked:
		g.Locked = false
	}
}

// CheckGroupName validates a group name.
func CheckGroupName(name, field string) error {
	n := strings.TrimSpace(name)
	if n == "" || len([]rune(n)) > MaxGroupNameLength {
		return failure.Invalid(failure.Field("string_too_short", fmt.Sprintf("%s must be 1 to %d characters", field, MaxGroupNameLength), field))
	}
	return nil
}
