package messaging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// laterGroups is a provider whose platform makes groups later (as the
// WhatsApp Cloud API does), of at most two participants.
type laterGroups struct {
	fakeProvider
	asked []messaging.GroupChange
}

func (p *laterGroups) CreateGroup(_ context.Context, c messaging.GroupChange) (string, error) {
	p.asked = append(p.asked, c)
	return fmt.Sprintf("req-%d", len(p.asked)), nil
}

func (p *laterGroups) ApplyGroupChange(_ context.Context, c messaging.GroupChange) error {
	p.asked = append(p.asked, c)
	return nil
}

func (p *laterGroups) MaxGroupParticipants() int { return 2 }

// A group its platform makes later: created empty and not ready, then
// made ready once by the platform's report, however often it comes; what
// people do is recorded once each; nothing repeated adds an event.
func TestProviderReportsChangeAGroupOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{3}, 32))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, _, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	n, err := acc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "whatsapp-cloud",
		Settings: map[string]string{"phone_number_id": "1", "access_token": "t"}, Enabled: true})
	require.NoError(t, err)
	p := &laterGroups{}
	svc := messaging.NewService(messaging.Deps{Committer: db, Store: db.MessagingStore(), Providers: messaging.ProviderSet{account.ProviderWhatsAppCloud: p}, Opener: acc})
	events := func() []string {
		t.Helper()
		all, err := db.WebhookStore().EventsAfter(ctx, a.ID, "", 100)
		require.NoError(t, err)
		var out []string
		for _, e := range all {
			var body map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &body))
			out = append(out, string(e.Type)+" "+body["action"].(string))
		}
		return out
	}

	_, err = svc.ManageGroup(ctx, messaging.GroupCommand{AccountID: a.ID, Action: "create", AgentNumber: n.Number, Title: "Team",
		Participants: []string{"+14155550111", "+14155550112", "+14155550113"}, ParticipantsGiven: true})
	require.Equal(t, "too_long", errorType(err), "three participants where the platform takes two: %v", err)
	require.Empty(t, p.asked, "the platform was not asked")
	res, err := svc.ManageGroup(ctx, messaging.GroupCommand{AccountID: a.ID, Action: "create", AgentNumber: n.Number, Title: "Team",
		Participants: []string{"+14155550111"}, ParticipantsGiven: true, JoinApprovalMode: "approval_required"})
	require.NoError(t, err)
	require.Len(t, p.asked, 1)
	require.Equal(t, domain.JoinApprovalRequired, p.asked[0].JoinApprovalMode)
	g := res.Group
	require.True(t, g.Creating)
	require.Equal(t, []string{"+14155550111"}, res.Invited)
	require.Equal(t, []domain.Participant{{Address: n.Number, IsAgent: true, Admin: true}}, g.Members, "nobody is added")
	require.Empty(t, events(), "no group.created before the platform made it")
	_, err = svc.SendGroup(ctx, messaging.GroupSendInput{AccountID: a.ID, From: n.Number, ThreadID: g.Thread.ID, Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.Equal(t, "group_not_ready", codeOf(err))

	report := func(r messaging.GroupReport) {
		t.Helper()
		r.AccountID, r.ThreadID, r.Agent = a.ID, g.Thread.ID, n.Number
		require.NoError(t, svc.ApplyGroupReport(ctx, r))
	}
	const link = "https://chat.whatsapp.com/AbCdEfGhIjKlMnOpQrStUv"
	report(messaging.GroupReport{Kind: messaging.GroupReportCreated, InviteLink: link, Title: "Team"})
	report(messaging.GroupReport{Kind: messaging.GroupReportCreated, InviteLink: link, Title: "Team"})
	report(messaging.GroupReport{Kind: messaging.GroupReportCreateFailed})
	ann := messaging.GroupPerson{Address: "+14155550111", UserID: "US.1"}
	report(messaging.GroupReport{Kind: messaging.GroupReportJoined, People: []messaging.GroupPerson{ann}})
	report(messaging.GroupReport{Kind: messaging.GroupReportJoined, People: []messaging.GroupPerson{ann}})
	report(messaging.GroupReport{Kind: messaging.GroupReportSettings, Title: "Team"})
	report(messaging.GroupReport{Kind: messaging.GroupReportSettings, Title: "Crew"})
	report(messaging.GroupReport{Kind: messaging.GroupReportJoinRequested, JoinRequest: &messaging.JoinRequest{ID: "jr-1", Person: messaging.GroupPerson{Address: "+14155550112"}}})
	report(messaging.GroupReport{Kind: messaging.GroupReportRemoved, People: []messaging.GroupPerson{{Address: n.Number}}})
	report(messaging.GroupReport{Kind: messaging.GroupReportRemoved, People: []messaging.GroupPerson{ann}})
	report(messaging.GroupReport{Kind: messaging.GroupReportRemoved, People: []messaging.GroupPerson{ann}})
	info, err := svc.ManageGroup(ctx, messaging.GroupCommand{AccountID: a.ID, Action: "info", AgentNumber: n.Number, ThreadID: g.Thread.ID})
	require.NoError(t, err)
	require.Equal(t, link, info.Group.InviteLink)
	require.False(t, info.Group.Creating)
	require.Equal(t, "Crew", info.Group.Thread.Name)
	require.Equal(t, []domain.Participant{{Address: n.Number, IsAgent: true, Admin: true}}, info.Group.Members, "the agent stays; Ann left")
	report(messaging.GroupReport{Kind: messaging.GroupReportDeleted})
	report(messaging.GroupReport{Kind: messaging.GroupReportDeleted})
	require.Equal(t, []string{
		"group.created created", "group.participants_added joined", "group.updated settings", "group.updated join_requested",
		"group.participants_removed removed", "group.left deleted",
	}, events())
	_, err = svc.SendGroup(ctx, messaging.GroupSendInput{AccountID: a.ID, From: n.Number, ThreadID: g.Thread.ID, Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.Equal(t, "not_group_member", codeOf(err))

	// A creation the platform could not make: the group ends, with why.
	res, err = svc.ManageGroup(ctx, messaging.GroupCommand{AccountID: a.ID, Action: "create", AgentNumber: n.Number, Title: "Doomed",
		Participants: []string{"+14155550111"}, ParticipantsGiven: true})
	require.NoError(t, err)
	g = res.Group
	report(messaging.GroupReport{Kind: messaging.GroupReportCreateFailed, Failure: &messaging.ProviderError{Code: "provider_rejected", Message: "whatsapp 131215: too many groups"}})
	all, err := db.WebhookStore().EventsAfter(ctx, a.ID, "", 100)
	require.NoError(t, err)
	var failed map[string]any
	require.NoError(t, json.Unmarshal(all[len(all)-1].Payload, &failed))
	require.Equal(t, "create_failed", failed["action"])
	require.Equal(t, map[string]any{"code": "provider_rejected", "message": "whatsapp 131215: too many groups"}, failed["error"])
	_, err = svc.SendGroup(ctx, messaging.GroupSendInput{AccountID: a.ID, From: n.Number, ThreadID: g.Thread.ID, Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.Equal(t, "not_group_member", codeOf(err))
}

func codeOf(err error) string {
	if err == nil {
		return ""
	}
	return failure.As(err).Code
}

// errorType is the rule name of a validation error's first field.
func errorType(err error) string {
	fe := failure.As(err)
	if fe == nil || len(fe.Fields) == 0 {
		return ""
	}
	return fe.Fields[0].Type
}
