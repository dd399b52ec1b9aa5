package messaging_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/failure"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
)

// A send naming a contact goes to the contact's thread with the sending
// number and carries the contact; another account's contact is not found,
// and a contact who never wrote to the number cannot be reached there.
func TestSendToAContact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	in, err := b.svc.Receive(ctx, messaging.InboundInput{AccountID: b.account.ID, Service: "whatsapp", From: "+14155550111", To: b.number.Number,
		Content: domain.Content{Kind: domain.KindText, Text: "hi"}})
	require.NoError(t, err)
	require.NotEmpty(t, in.ContactID)
	send := func(accountID, from, to string) (domain.Message, error) {
		return b.svc.SendIndividual(ctx, messaging.SendInput{AccountID: accountID, Service: "whatsapp", From: from, To: to,
			Content: domain.Content{Kind: domain.KindText, Text: "hello"}})
	}

	m, err := send(b.account.ID, b.number.Number, in.ContactID)
	require.NoError(t, err)
	require.Equal(t, "+14155550111", m.To)
	require.Equal(t, in.ThreadID, m.ThreadID)
	require.Equal(t, in.ContactID, m.ContactID, "an outbound message names its contact")
	m, err = send(b.account.ID, b.number.Number, "+14155550111")
	require.NoError(t, err)
	require.Equal(t, in.ContactID, m.ContactID)

	second, err := b.accounts.AddNumber(ctx, accounts.NumberInput{AccountID: b.account.ID, Number: "+14155550101", Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	_, err = send(b.account.ID, second.Number, in.ContactID)
	require.True(t, failure.Is(err, failure.KindInvalid), "no conversation with that number: %v", err)
	var fe *failure.Error
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "contact_unreachable", fe.Fields[0].Type)
	require.Equal(t, []any{"to"}, fe.Fields[0].Path)

	other, _, err := b.accounts.CreateAccount(ctx, "Other")
	require.NoError(t, err)
	theirs, err := b.accounts.AddNumber(ctx, accounts.NumberInput{AccountID: other.ID, Number: "+14155550102", Service: "whatsapp", Provider: "sandbox", Enabled: true})
	require.NoError(t, err)
	_, err = send(other.ID, theirs.Number, in.ContactID)
	require.True(t, failure.Is(err, failure.KindNotFound), "another account's contact: %v", err)
}
