package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/messaging"
)

// Contacts is the contract of the contact writes (writes.Batch.Contacts
// and ContactMerges) and reads, through the committer and the
// messaging store.
func Contacts(t *testing.T, open func(t *testing.T) MessagingFixture) {
	ctx := context.Background()
	contact := func(accountID, name string, created time.Time) messaging.Contact {
		return messaging.Contact{ID: ident.New(ident.Contact), AccountID: accountID, Name: name, CreatedAt: created, UpdatedAt: created}
	}

	t.Run("WritesFindsAndLists", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a, b := f.owner(t), f.owner(t)
		r := f.Store.Repos()
		ann := contact(a, "Ann Lee", at)
		ann.Phones = []string{"+4917012345678"}
		ann.WhatsAppUserID, ann.WhatsAppUsername = "DE.1234", "ann"
		time.Sleep(2 * time.Millisecond) // ids start with their creation time: bob's is newer
		bob := contact(a, "Bob", at.Add(time.Second))
		bob.TelegramUserID, bob.TelegramUsername = "777000111", "bob_w"
		other := contact(b, "Ann Lee", at)
		other.Phones = []string{"+4917012345678"}
		th := individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at)
		th.ContactID = ann.ID
		m := chatMessage(th, messaging.Inbound, "hi", at)
		m.ContactID, m.UserID, m.Username = ann.ID, "DE.1234", "ann"
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{
			Threads:  []writes.NewThread{{Thread: th}},
			Messages: []messaging.Message{m},
			Contacts: []writes.ContactWrite{{Contact: &ann}, {Contact: &bob}, {Contact: &other}},
		}))

		got, err := r.Contact(ctx, a, ann.ID)
		require.NoError(t, err)
		require.Equal(t, ann, got)
		_, err = r.Contact(ctx, b, ann.ID)
		notFound(t, err, "another account's contact")
		for name, id := range map[string]messaging.Identity{
			"phone": {Phone: "+4917012345678"}, "user id": {WhatsAppUserID: "DE.1234"}, "both": {Phone: "+49", WhatsAppUserID: "DE.1234"},
		} {
			got, err := r.ContactByIdentity(ctx, a, id)
			require.NoError(t, err, name)
			require.Equal(t, ann.ID, got.ID, name)
		}
		got, err = r.ContactByIdentity(ctx, a, messaging.Identity{TelegramUserID: "777000111"})
		require.NoError(t, err)
		require.Equal(t, bob, got)
		_, err = r.ContactByIdentity(ctx, a, messaging.Identity{Phone: "+4917012345679"})
		notFound(t, err, "another number")
		_, err = r.ContactByIdentity(ctx, a, messaging.Identity{Phone: "+491701234567"})
		notFound(t, err, "a prefix of a number")

		list, err := r.Contacts(ctx, appmessaging.ContactQuery{AccountID: a, Limit: 10})
		require.NoError(t, err)
		require.Equal(t, []messaging.Contact{bob, ann}, list, "newest first, the account's only")
		page, err := r.Contacts(ctx, appmessaging.ContactQuery{AccountID: a, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []messaging.Contact{bob}, page)
		page, err = r.Contacts(ctx, appmessaging.ContactQuery{AccountID: a, Before: bob.ID, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, []messaging.Contact{ann}, page, "the next page starts after the cursor")
		for search, want := range map[string][]messaging.Contact{
			"ann lee": {ann}, "+49170": {ann}, "BOB_": {bob}, "de.12": {ann}, "%": nil, "_": {bob}, "nobody": nil,
		} {
			found, err := r.Contacts(ctx, appmessaging.ContactQuery{AccountID: a, Search: search, Limit: 10})
			require.NoError(t, err)
			require.Equal(t, want, found, "search %q", search)
		}

		threads, err := r.ContactThreads(ctx, a, ann.ID)
		require.NoError(t, err)
		require.Len(t, threads, 1)
		require.Equal(t, ann.ID, threads[0].ContactID)
		stored, err := r.Message(ctx, a, m.ID)
		require.NoError(t, err)
		require.Equal(t, ann.ID, stored.ContactID)
		require.Equal(t, "DE.1234", stored.UserID)
		require.Equal(t, "ann", stored.Username)

		// A second write of a contact replaces its values.
		ann.Name, ann.Phones = "Ann", append(ann.Phones, "+4917099999999")
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Contacts: []writes.ContactWrite{{Contact: &ann}}}))
		got, err = r.Contact(ctx, a, ann.ID)
		require.NoError(t, err)
		require.Equal(t, ann, got)
		got, err = r.ContactByIdentity(ctx, a, messaging.Identity{Phone: "+4917099999999"})
		require.NoError(t, err)
		require.Equal(t, ann.ID, got.ID)
	})

	t.Run("LinksThreadsAndMerges", func(t *testing.T) {
		t.Parallel()
		f := open(t)
		a := f.owner(t)
		r := f.Store.Repos()
		wa := individualThread(a, account.WhatsApp, "+14155550100", "+4917012345678", at)
		tg := individualThread(a, account.Telegram, "+14155550103", "777000111", at.Add(time.Second))
		m1, m2 := chatMessage(wa, messaging.Inbound, "hi", at), chatMessage(tg, messaging.Inbound, "hallo", at.Add(time.Second))
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Threads: []writes.NewThread{{Thread: wa}, {Thread: tg}}, Messages: []messaging.Message{m1, m2}}))
		ann, tgAnn := contact(a, "Ann", at), contact(a, "Ann W", at.Add(time.Second))
		ann.Phones = []string{"+4917012345678"}
		tgAnn.TelegramUserID = "777000111"
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{Contacts: []writes.ContactWrite{
			{Contact: &ann, Threads: []string{wa.ID}}, {Contact: &tgAnn, Threads: []string{tg.ID}},
		}}))
		threads, err := r.ContactThreads(ctx, a, tgAnn.ID)
		require.NoError(t, err)
		require.Len(t, threads, 1, "a linked thread is the contact's")
		stored, err := r.Message(ctx, a, m2.ID)
		require.NoError(t, err)
		require.Equal(t, tgAnn.ID, stored.ContactID, "and so are its messages")

		merged := ann
		merged.Absorb(tgAnn, at.Add(time.Hour))
		require.NoError(t, f.Committer.Commit(ctx, writes.Batch{
			Contacts:      []writes.ContactWrite{{Contact: &merged}},
			ContactMerges: []writes.ContactMerge{{AccountID: a, Into: ann.ID, From: tgAnn.ID}},
		}))
		_, err = r.Contact(ctx, a, tgAnn.ID)
		notFound(t, err, "the merged contact")
		got, err := r.Contact(ctx, a, ann.ID)
		require.NoError(t, err)
		require.Equal(t, merged, got)
		require.Equal(t, "777000111", got.TelegramUserID)
		threads, err = r.ContactThreads(ctx, a, ann.ID)
		require.NoError(t, err)
		require.Len(t, threads, 2, "both threads stay, linked to the surviving contact")
		stored, err = r.Message(ctx, a, m2.ID)
		require.NoError(t, err)
		require.Equal(t, ann.ID, stored.ContactID)
		_, err = r.Contact(ctx, a, "con_missing")
		require.True(t, failure.Is(err, failure.KindNotFound))
	})
}
