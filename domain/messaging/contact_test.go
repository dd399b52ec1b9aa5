package messaging_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

func TestValidWhatsAppUserID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"US.13491208655302741918": true, "BR.1502576394655843": true, "US.ENT.11815799212886844830": true, "DE.abcXYZ09": true,
		"us.1349": false, "USA.1349": false, "US.": false, "US.13-49": false, "+14155550100": false, "unknown": false, "US.1 ": false,
	} {
		require.Equal(t, want, messaging.ValidWhatsAppUserID(id), id)
		require.Equal(t, want || account.ValidE164(id), messaging.ValidRecipient(account.WhatsApp, id), "a WhatsApp send may name %q", id)
	}
	require.False(t, messaging.ValidRecipient(account.Telegram, "US.13491208655302741918"), "Telegram has no user ids of that form")
}

func TestContactSeesAndAbsorbs(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	wa := messaging.NewContact("con_a", "acc_1", messaging.Sighting{Service: account.WhatsApp, Address: "US.1", UserID: "US.1", Username: "@ann", Name: "Ann"}, at)
	require.Equal(t, messaging.Contact{ID: "con_a", AccountID: "acc_1", Name: "Ann", WhatsAppUserID: "US.1", WhatsAppUsername: "ann", CreatedAt: at, UpdatedAt: at}, wa)
	require.False(t, wa.See(messaging.Sighting{Service: account.WhatsApp, Address: "US.1", UserID: "US.1"}, at.Add(time.Hour)), "nothing new")
	require.True(t, wa.See(messaging.Sighting{Service: account.WhatsApp, Address: "+4917012345678", UserID: "US.1"}, at.Add(time.Hour)))
	require.Equal(t, []string{"+4917012345678"}, wa.Phones, "the address is the phone number")
	require.Equal(t, at.Add(time.Hour), wa.UpdatedAt)

	tg := messaging.NewContact("con_b", "acc_1", messaging.Sighting{Service: account.Telegram, Address: "777000111", Username: "Ann_W", Phone: "+4917099999999"}, at)
	require.Equal(t, "777000111", tg.TelegramUserID)
	require.Equal(t, "ann_w", tg.TelegramUsername)
	require.Equal(t, "777000111", tg.Name, "no name shown: the address")
	require.Equal(t, messaging.Identity{Phone: "+4917099999999", TelegramUserID: "777000111"},
		messaging.Sighting{Service: account.Telegram, Address: "777000111", Phone: "+4917099999999"}.Identity())
	require.True(t, messaging.Sighting{Service: account.WhatsApp, Address: messaging.UnknownSender}.Identity().Empty(), "the unknown sender is no one")
	require.Equal(t, messaging.Identity{}, messaging.Sighting{Service: account.Telegram, Address: "-100123"}.Identity(), "a group chat is no user")

	wa.Absorb(tg, at.Add(2*time.Hour))
	require.Equal(t, "Ann", wa.Name, "the surviving contact keeps its values")
	require.Equal(t, []string{"+4917012345678", "+4917099999999"}, wa.Phones, "and gains the other's numbers")
	require.Equal(t, "777000111", wa.TelegramUserID)
	require.Equal(t, "ann_w", wa.TelegramUsername)

	require.Error(t, wa.Rename(" ", at))
	require.Error(t, wa.Rename(string(make([]rune, 201)), at))
	require.NoError(t, wa.Rename(" Ann Weber ", at))
	require.Equal(t, "Ann Weber", wa.Name)
}
