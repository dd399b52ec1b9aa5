package messaging_test

import (
	"testing"

	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

const (
	admin  = "+15550000001"
	member = "+15550000002" // an agent number that is a plain member
	user   = "+14155550100"
	other  = "+14155550199"
)

func group(announcement, locked bool) *messaging.GroupState {
	return &messaging.GroupState{
		Announcement: announcement, Locked: locked,
		Members: []messaging.Participant{
			{Address: admin, IsAgent: true, Admin: true},
			{Address: member, IsAgent: true},
			{Address: user},
		},
	}
}

func code(err error) string {
	if err == nil {
		return ""
	}
	return failure.As(err).Code
}

func TestWhoMaySendAndEdit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                 string
		announcement, locked bool
		agent                string
		send, edit, manage   string
	}{
		{"admin in an open group", false, false, admin, "", "", ""},
		{"member in an open group", false, false, member, "", "", "not_group_admin"},
		{"member in an announcement group", true, false, member, "admins_only", "", "not_group_admin"},
		{"admin in an announcement group", true, false, admin, "", "", ""},
		{"member in a locked group", false, true, member, "", "group_locked", "not_group_admin"},
		{"admin in a locked group", false, true, admin, "", "", ""},
		{"a user's number is no agent", false, false, user, "not_group_member", "not_group_member", "not_group_member"},
		{"a stranger", false, false, other, "not_group_member", "not_group_member", "not_group_member"},
	}
	for _, c := range cases {
		g := group(c.announcement, c.locked)
		if got := code(g.CheckSend(c.agent)); got != c.send {
			t.Errorf("%s: send = %q, want %q", c.name, got, c.send)
		}
		if got := code(g.CheckEdit(c.agent)); got != c.edit {
			t.Errorf("%s: edit = %q, want %q", c.name, got, c.edit)
		}
		if got := code(g.CheckAdmin(c.agent)); got != c.manage {
			t.Errorf("%s: manage = %q, want %q", c.name, got, c.manage)
		}
	}
}

func TestMembershipChanges(t *testing.T) {
	t.Parallel()
	g := group(false, false)
	if err := g.AddMembers([]string{other, user}); !failure.Is(err, failure.KindInvalid) || len(g.Members) != 3 {
		t.Fatalf("adding an existing member fails and changes nothing: %v, %d members", err, len(g.Members))
	}
	if err := g.AddMembers([]string{other}); err != nil || len(g.Members) != 4 {
		t.Fatalf("add: %v", err)
	}
	if err := g.RemoveMembers([]string{"+14155550000"}); !failure.Is(err, failure.KindInvalid) {
		t.Fatalf("removing a non-member is an error: %v", err)
	}
	if err := g.SetAdmins([]string{"+14155550000"}, true); !failure.Is(err, failure.KindInvalid) {
		t.Fatalf("promoting a non-member is an error: %v", err)
	}
	if err := g.SetAdmins([]string{member}, true); err != nil || g.CheckAdmin(member) != nil {
		t.Fatalf("a promoted agent manages the group: %v", err)
	}
	if err := g.RemoveMembers([]string{other}); err != nil || len(g.Members) != 3 {
		t.Fatalf("remove: %v", err)
	}
	if err := g.Leave(member); err != nil {
		t.Fatalf("leave: %v", err)
	}
	if code(g.CheckSend(member)) != "not_group_member" {
		t.Error("an agent that left can no longer send")
	}
	if code(g.Leave(member)) != "not_group_member" {
		t.Error("leaving twice is an error")
	}
	if err := g.Join(member); err != nil || g.CheckSend(member) != nil {
		t.Fatalf("join: %v", err)
	}
	if code(g.Join(member)) != "already_member" {
		t.Error("joining twice is a conflict")
	}
	g.Apply(messaging.SettingAnnouncement)
	g.Apply(messaging.SettingLocked)
	if !g.Announcement || !g.Locked {
		t.Error("settings apply")
	}
	g.Apply(messaging.SettingNotAnnouncement)
	g.Apply(messaging.SettingUnlocked)
	if g.Announcement || g.Locked {
		t.Error("settings revert")
	}
	if _, ok := messaging.ParseSetting("closed"); ok {
		t.Error("unknown settings are refused")
	}
	if _, ok := messaging.ParseGroupAction("join"); !ok {
		t.Error("join is an action")
	}
}
