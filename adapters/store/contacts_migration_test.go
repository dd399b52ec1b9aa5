package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	appmessaging "github.com/switchboard-dev/switchboard/application/messaging"
)

// The contacts migration, on a database at the previous schema with
// threads in it: every individual thread gets a contact, one per account
// and user address (the same user through two agent numbers is one
// contact; another account's user with the same number is another), with
// what the address says (a phone number, a WhatsApp user id, a Telegram
// user id); their messages name it; group threads get none; no thread is
// lost.
func TestContactsMigrationFromThePreviousSchema(t *testing.T) {
	t.Parallel()
	forEachDialectBefore(t, "20261129000401", func(t *testing.T, db *store.DB) {
		ctx := context.Background()

		at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
		exec := func(query string, args ...any) { t.Helper(); require.NoError(t, db.Exec(ctx, query, args...)) }
		for _, acc := range []string{"acc_aaaa", "acc_bbbb"} {
			exec("INSERT INTO accounts (id, name, created_at, updated_at) VALUES (?, ?, ?, ?)", acc, acc, at, at)
		}
		threads := []struct{ id, account, service, typ, agent, contact, name string }{
			{"thr_0001", "acc_aaaa", "whatsapp", "individual", "+14155550100", "+4917012345678", "Ann"},
			{"thr_0002", "acc_aaaa", "whatsapp", "individual", "+14155550101", "+4917012345678", "Ann L"},
			{"thr_0003", "acc_aaaa", "telegram", "individual", "+14155550103", "777000111", "Bob"},
			{"thr_0004", "acc_aaaa", "whatsapp", "individual", "+14155550100", "US.13491208655302741918", "Cleo"},
			{"thr_0005", "acc_aaaa", "whatsapp", "group", "+14155550100", "", "Team"},
			{"thr_0006", "acc_bbbb", "whatsapp", "individual", "+14155550200", "+4917012345678", "Ann B"},
		}
		for i, th := range threads {
			var contact any = th.contact
			if th.contact == "" {
				contact = nil
			}
			created := at.Add(time.Duration(i) * time.Minute)
			exec("INSERT INTO threads (id, account_id, service, type, agent_number, contact, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
				th.id, th.account, th.service, th.typ, th.agent, contact, th.name, created, created)
			exec(`INSERT INTO messages (id, account_id, thread_id, service, direction, from_address, to_address, kind, body, status, created_at, updated_at)
				VALUES (?, ?, ?, ?, 'inbound', ?, ?, 'text', 'hi', 'received', ?, ?)`,
				"msg_000"+th.id[len(th.id)-1:], th.account, th.id, th.service, th.contact, th.agent, created, created)
		}

		_, err := db.Migrate(ctx)
		require.NoError(t, err)

		r := db.MessagingStore()
		thread := func(account, id string) string {
			t.Helper()
			th, err := r.Thread(ctx, account, id)
			require.NoError(t, err)
			return th.ContactID
		}
		ann := thread("acc_aaaa", "thr_0001")
		require.NotEmpty(t, ann)
		require.Equal(t, ann, thread("acc_aaaa", "thr_0002"), "one user through two agent numbers is one contact")
		bob, cleo := thread("acc_aaaa", "thr_0003"), thread("acc_aaaa", "thr_0004")
		require.Empty(t, thread("acc_aaaa", "thr_0005"), "a group has no contact")
		annB := thread("acc_bbbb", "thr_0006")
		require.NotEqual(t, ann, annB, "another account's user is another contact")

		list, err := r.Contacts(ctx, appmessaging.ContactQuery{AccountID: "acc_aaaa", Limit: 10})
		require.NoError(t, err)
		require.Len(t, list, 3, "one contact per account and user address")
		c, err := r.Contact(ctx, "acc_aaaa", ann)
		require.NoError(t, err)
		require.Equal(t, []string{"+4917012345678"}, c.Phones)
		require.Equal(t, at, c.CreatedAt, "created when the first thread was")
		c, err = r.Contact(ctx, "acc_aaaa", bob)
		require.NoError(t, err)
		require.Equal(t, "777000111", c.TelegramUserID)
		require.Equal(t, "Bob", c.Name)
		require.Empty(t, c.Phones)
		c, err = r.Contact(ctx, "acc_aaaa", cleo)
		require.NoError(t, err)
		require.Equal(t, "US.13491208655302741918", c.WhatsAppUserID)
		c, err = r.Contact(ctx, "acc_bbbb", annB)
		require.NoError(t, err)
		require.Equal(t, "acc_bbbb", c.AccountID)

		annThreads, err := r.ContactThreads(ctx, "acc_aaaa", ann)
		require.NoError(t, err)
		require.Len(t, annThreads, 2)
		m, err := r.Message(ctx, "acc_aaaa", "msg_0002")
		require.NoError(t, err)
		require.Equal(t, ann, m.ContactID, "messages name their thread's contact")
		m, err = r.Message(ctx, "acc_aaaa", "msg_0005")
		require.NoError(t, err)
		require.Empty(t, m.ContactID)

		// Every individual thread is some contact's, and that contact
		// exists.
		for _, th := range threads {
			if th.typ != "individual" {
				continue
			}
			id := thread(th.account, th.id)
			_, err := r.Contact(ctx, th.account, id)
			require.NoError(t, err, "the contact of %s", th.id)
		}
	})
}
