package messaging_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/event"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// A user's changes apply in the order they were made, only to messages the
// user sent, once each: an older edit arriving late, another user's report
// of the message, and an edit after the deletion change nothing of it.
func TestReceiveChangeKeepsTheUsersNewestChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	const user, stranger = "+14155550111", "+14155550122"
	m, err := b.svc.Receive(ctx, messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: user, To: b.number.Number,
		Content: domain.Content{Kind: domain.KindText, Text: "v1"}, ProviderMessageID: "wamid.1"})
	require.NoError(t, err)
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	change := func(from, text string, deleted bool, when time.Time) domain.Message {
		t.Helper()
		got, err := b.svc.ReceiveChange(ctx, messaging.InboundChange{Service: "whatsapp", From: from, To: b.number.Number,
			TargetProviderID: "wamid.1", Content: domain.Content{Kind: domain.KindText, Text: text}, Deleted: deleted, At: when})
		require.NoError(t, err)
		return got
	}
	events := func() (edited, deleted []map[string]any) {
		t.Helper()
		all, err := b.db.WebhookStore().EventsAfter(ctx, b.account.ID, "", 100)
		require.NoError(t, err)
		for _, e := range all {
			var p map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			switch e.Type {
			case event.MessageEdited:
				edited = append(edited, p)
			case event.MessageDeleted:
				deleted = append(deleted, p)
			}
		}
		return edited, deleted
	}

	change(user, "v3", false, at.Add(2*time.Minute))
	change(user, "v2", false, at.Add(time.Minute)) // older, arriving late
	got := b.status(t, m.ID)
	require.Equal(t, "v3", got.Content.Text)
	require.Equal(t, "v1", got.PreviousText)
	require.True(t, got.EditedAt.Equal(at.Add(2*time.Minute)))
	edited, _ := events()
	require.Len(t, edited, 1, "the late older edit records nothing")

	// Another user naming the message's provider id: an event only.
	change(stranger, "hijack", false, at.Add(3*time.Minute))
	require.Equal(t, "v3", b.status(t, m.ID).Content.Text)
	edited, _ = events()
	require.Len(t, edited, 2)
	require.Equal(t, "", edited[1]["message_id"])
	require.Equal(t, "wamid.1", edited[1]["provider_message_id"])

	change(user, "", true, at.Add(4*time.Minute))
	change(user, "", true, at.Add(4*time.Minute))
	change(user, "back", false, at.Add(5*time.Minute))
	got = b.status(t, m.ID)
	require.True(t, got.Deleted())
	require.Equal(t, domain.Content{Kind: domain.KindText}, got.Content)
	edited, deleted := events()
	require.Len(t, deleted, 1, "deleted once")
	require.Len(t, edited, 2, "a deleted message is not edited")
}
