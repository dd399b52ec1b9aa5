package channels_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// laterGroups is a provider whose platform makes groups later and
// answers each request with its own id.
type laterGroups struct{ requests int }

func (p *laterGroups) Send(context.Context, messaging.Outbound) (messaging.Receipt, error) {
	return messaging.Receipt{}, nil
}
func (p *laterGroups) Capabilities() messaging.Capabilities { return messaging.Capabilities{} }
func (p *laterGroups) ApplyGroupChange(context.Context, messaging.GroupChange) error {
	return nil
}
func (p *laterGroups) CreateGroup(context.Context, messaging.GroupChange) (string, error) {
	p.requests++
	return fmt.Sprintf("req-%d", p.requests), nil
}

// A provider's report that a group was made: the group Switchboard asked
// for becomes ready under the platform's id, once; one made elsewhere
// becomes a group thread, unless it was made so recently that its create
// may still be committing (reported again later).
func TestGroupReportedFindsTheGroupItMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.Open(t, store.SQLite)
	keys, err := keyring.New(bytes.Repeat([]byte{5}, 32))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, _, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	n, err := acc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: "+14155550100", Service: "whatsapp", Provider: "whatsapp-cloud",
		Settings: map[string]string{"phone_number_id": "1", "access_token": "t"}, Enabled: true})
	require.NoError(t, err)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	svc := messaging.NewService(messaging.Deps{Committer: db, Store: db.MessagingStore(),
		Providers: messaging.ProviderSet{account.ProviderWhatsAppCloud: &laterGroups{}}, Opener: acc, Now: func() time.Time { return now }})
	inbox := channels.NewService(channels.Deps{Store: db.ChannelStore(), Receiver: svc, Opener: acc, Now: func() time.Time { return now }})
	dir := channels.NewDirectory(db.ChannelStore())
	created := func() int {
		t.Helper()
		all, err := db.WebhookStore().EventsAfter(ctx, a.ID, "", 100)
		require.NoError(t, err)
		count := 0
		for _, e := range all {
			if e.Type == event.GroupCreated {
				count++
			}
		}
		return count
	}

	res, err := svc.ManageGroup(ctx, messaging.GroupCommand{AccountID: a.ID, Action: "create", AgentNumber: n.Number, Title: "Team",
		Participants: []string{"+14155550111"}, ParticipantsGiven: true})
	require.NoError(t, err)
	const link = "https://chat.whatsapp.com/AbCdEfGhIjKlMnOpQrStUv"
	report := channels.GroupUpdate{ChatID: "G-team", Request: "req-1", Kind: messaging.GroupReportCreated, Title: "Team", InviteLink: link, At: now}
	require.NoError(t, inbox.GroupReported(ctx, n, report))
	require.NoError(t, inbox.GroupReported(ctx, n, report), "a repeated report")
	thread, err := dir.ThreadOfChat(ctx, n, "G-team")
	require.NoError(t, err)
	require.Equal(t, res.Group.Thread.ID, thread, "the group made is the thread created")
	g, err := db.MessagingStore().Group(ctx, a.ID, thread)
	require.NoError(t, err)
	require.False(t, g.Creating)
	require.Equal(t, link, g.InviteLink)
	require.Equal(t, 1, created())

	// Made elsewhere, a moment ago: its create may be committing.
	elsewhere := channels.GroupUpdate{ChatID: "G-other", Request: "req-77", Kind: messaging.GroupReportCreated, Title: "Other", InviteLink: link + "x", At: now.Add(-10 * time.Second)}
	err = inbox.GroupReported(ctx, n, elsewhere)
	require.True(t, failure.Is(err, failure.KindUnavailable), "reported again later: %v", err)
	_, err = dir.ThreadOfChat(ctx, n, "G-other")
	require.True(t, failure.Is(err, failure.KindNotFound))
	// Reported again two minutes on: a group thread of its own.
	elsewhere.At = now.Add(-2 * time.Minute)
	require.NoError(t, inbox.GroupReported(ctx, n, elsewhere))
	other, err := dir.ThreadOfChat(ctx, n, "G-other")
	require.NoError(t, err)
	og, err := db.MessagingStore().Group(ctx, a.ID, other)
	require.NoError(t, err)
	require.Equal(t, "Other", og.Thread.Name)
	require.Equal(t, link+"x", og.InviteLink)
	require.Equal(t, []domain.Participant{{Address: n.Number, IsAgent: true, Admin: true}}, og.Members)
	require.Equal(t, 2, created())

	// A report about a chat nobody keeps is left alone.
	require.NoError(t, inbox.GroupReported(ctx, n, channels.GroupUpdate{ChatID: "G-unknown", Kind: messaging.GroupReportJoined,
		People: []messaging.GroupPerson{{Address: "+14155550111"}}}))
}
