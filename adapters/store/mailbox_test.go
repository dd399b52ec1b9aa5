package store_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/adapters/storetest"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

func TestMailboxContract(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		storetest.Mailbox(t, func(t *testing.T) appemail.Mailbox { return dbtest.Open(t, dialect).MailboxStore() })
	})
}

// storedBytes is what the sandbox mailbox's tables take on disk.
func storedBytes(t *testing.T, db *store.DB) int64 {
	t.Helper()
	var n int64
	q := "SELECT pg_total_relation_size('sandbox_emails') + pg_total_relation_size('sandbox_mailbox_usage')"
	if db.Dialect() == store.SQLite {
		q = "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE 'sandbox%'"
	}
	require.NoError(t, db.Bun().NewRaw(q).Scan(context.Background(), &n))
	return n
}

// The mailbox keeps an attachment as its name, type, size and SHA-256:
// no column can hold its bytes, and a 5 MiB attachment of random bytes
// adds no more to the database than an email without one.
func TestMailboxKeepsNoAttachmentBytes(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		ctx := context.Background()
		db := dbtest.Open(t, dialect)
		var types []string
		q := "SELECT data_type FROM information_schema.columns WHERE table_name = 'sandbox_emails'"
		if dialect == store.SQLite {
			q = "SELECT type FROM pragma_table_info('sandbox_emails')"
		}
		require.NoError(t, db.Bun().NewRaw(q).Scan(ctx, &types))
		require.NotEmpty(t, types)
		for _, typ := range types {
			require.NotContains(t, []string{"bytea", "blob"}, strings.ToLower(typ), "a column that could hold the bytes")
		}

		data := make([]byte, 5<<20)
		_, _ = rand.Read(data)
		out := appemail.Outgoing{
			AccountID: "acc_a", MessageID: "<a@mail.example.com>", From: "agent@mail.example.com", To: []email.Mailbox{{Address: "ann@example.org"}},
			Subject: "Report", Text: strings.Repeat("Hello. ", 200),
			Attachment: &appemail.Attachment{Name: "report.bin", ContentType: "application/octet-stream", Data: data},
		}
		mailbox := db.MailboxStore()
		// Bounds far above what the bytes would take if they were kept.
		limits := appemail.MailboxLimits{AccountEmails: 10, AccountBytes: 1 << 30, TotalEmails: 10, TotalBytes: 1 << 30, BodyBytes: 1 << 20}
		// The first email allocates the tables' first pages.
		keep := func(out appemail.Outgoing) int64 {
			before := storedBytes(t, db)
			require.NoError(t, mailbox.Keep(ctx, appemail.KeptFrom(out, limits.BodyBytes), limits))
			return storedBytes(t, db) - before
		}
		keep(out)
		withAttachment := keep(out)
		out.Attachment = nil
		without := keep(out)
		t.Logf("%s: an email with a 5 MiB attachment took %d bytes, one without %d", dialect, withAttachment, without)
		require.Less(t, withAttachment, int64(64<<10), "the attachment's bytes are not stored")

		page, err := mailbox.Kept(ctx, "acc_a", 0, 10)
		require.NoError(t, err)
		require.Len(t, page.Emails, 3)
		require.Nil(t, page.Emails[0].Attachment)
		require.Equal(t, int64(5<<20), page.Emails[1].Attachment.Size)
		require.Len(t, page.Emails[1].Attachment.SHA256, 64)
	})
}

// Two processes on one database share one mailbox: what one keeps, the
// other lists, and the bounds hold across both.
func TestMailboxIsSharedByReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.URL(t, store.Postgres)
	open := func() *store.DB {
		db, err := store.Open(ctx, url, store.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	one, two := open().MailboxStore(), open().MailboxStore()
	limits := appemail.DefaultMailboxLimits
	limits.AccountEmails = 4
	for i := range 6 {
		replica := []appemail.Mailbox{one, two}[i%2]
		require.NoError(t, replica.Keep(ctx, appemail.KeptEmail{AccountID: "acc_a", Subject: string(rune('a' + i))}, limits))
	}
	for _, replica := range []appemail.Mailbox{one, two} {
		page, err := replica.Kept(ctx, "acc_a", 0, 10)
		require.NoError(t, err)
		require.Equal(t, 4, page.Total)
		require.Equal(t, "f", page.Emails[0].Subject)
		require.Equal(t, "c", page.Emails[3].Subject)
	}
}
