package storetest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/application/accounts"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/failure"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// EmailStores are the views of one database the email contract needs: the
// email port under test, the committer that writes sends, and the account
// port to create owners.
type EmailStores struct {
	Email     appemail.Store
	Inbox     appemail.Inbox
	Committer writes.Committer
	Accounts  accounts.Store
}

// insert commits e as a send does.
func (s EmailStores) insert(t *testing.T, e email.Email) {
	t.Helper()
	require.NoError(t, s.Committer.Commit(context.Background(), writes.Batch{Emails: []email.Email{e}}))
}

func newEmail(accountID string) email.Email {
	id := ident.New(ident.Email)
	return email.Email{
		ID: id, AccountID: accountID, Direction: email.Outbound, Mailbox: "agent@mail.example.com", ThreadID: email.StartedThreadID(id),
		From: "agent@mail.example.com", To: "user@example.org", InReplyTo: "<x@example.org>", References: []string{"<root@example.org>", "<x@example.org>"},
		Cc: []string{"cc1@example.org", "cc2@example.org"}, Bcc: []string{"hidden@example.org"}, ReplyTo: []string{"replies@example.com"},
		Subject: "Grüße", Body: "<p>Hello</p>", HTML: true,
		Headers:       []email.Header{{Name: "In-Reply-To", Value: "<x@example.org>"}, {Name: "X-Campaign", Value: "spring"}},
		AttachmentURI: "https://files.example.com/report.pdf", MessageID: email.SentMessageID(id, "mail.example.com"),
		Status: email.Queued, CreatedAt: at, UpdatedAt: at,
	}
}

// Email runs the contract of the email store port against the stores that
// open returns; each call must give its own empty, migrated database.
func Email(t *testing.T, open func(t *testing.T) EmailStores) {
	owner := func(t *testing.T, s EmailStores, name string) account.Account {
		t.Helper()
		a := newAccount(name)
		require.NoError(t, s.Accounts.Repos().InsertAccount(context.Background(), a))
		return a
	}

	t.Run("AddressesAreUniqueAcrossAccounts", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, b := owner(t, s, "A"), owner(t, s, "B")
		addr := account.EmailAddress{ID: ident.New(ident.Email), AccountID: a.ID, LocalPart: "sales", Domain: "mail.example.com", CreatedAt: at}
		require.NoError(t, s.Email.Repos().InsertEmailAddress(ctx, addr, false))

		got, err := s.Email.Repos().EmailAddressByAddress(ctx, "sales", "mail.example.com")
		require.NoError(t, err)
		require.Equal(t, addr, got)
		_, err = s.Email.Repos().EmailAddressByAddress(ctx, "sales", "other.example.com")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)

		dup := addr
		dup.ID, dup.AccountID = ident.New(ident.Email), b.ID
		err = s.Email.Repos().InsertEmailAddress(ctx, dup, false)
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)

		listed, err := s.Accounts.Repos().EmailAddresses(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, []account.EmailAddress{addr}, listed, "the account overview lists the new address")
	})

	t.Run("AddressOnACustomDomainNeedsTheDomain", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, b := owner(t, s, "A"), owner(t, s, "B")
		require.NoError(t, s.Accounts.Repos().InsertDomain(ctx, account.Domain{ID: ident.New(ident.Domain), AccountID: b.ID, Name: "b.example.com", CreatedAt: at}))
		addr := account.EmailAddress{ID: ident.New(ident.Email), AccountID: a.ID, LocalPart: "sales", Domain: "b.example.com", CreatedAt: at}
		err := s.Email.Repos().InsertEmailAddress(ctx, addr, true)
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's domain is not this one's, got %v", err)
		_, err = s.Email.Repos().EmailAddressByAddress(ctx, "sales", "b.example.com")
		require.True(t, failure.Is(err, failure.KindNotFound), "nothing was stored, got %v", err)

		require.NoError(t, s.Accounts.Repos().InsertDomain(ctx, account.Domain{ID: ident.New(ident.Domain), AccountID: a.ID, Name: "a.example.com", CreatedAt: at}))
		addr.Domain = "a.example.com"
		require.NoError(t, s.Email.Repos().InsertEmailAddress(ctx, addr, true))
		dup := addr
		dup.ID = ident.New(ident.Email)
		err = s.Email.Repos().InsertEmailAddress(ctx, dup, true)
		require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
	})

	t.Run("ConcurrentCreatesOfOneAddressLetOneWin", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a := owner(t, s, "A")
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Email.Repos().InsertEmailAddress(ctx, account.EmailAddress{ID: ident.New(ident.Email), AccountID: a.ID, LocalPart: "race", Domain: "mail.example.com", CreatedAt: at}, false)
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
				continue
			}
			require.True(t, failure.Is(err, failure.KindConflict), "got %v", err)
		}
		require.Equal(t, 1, wins)
	})

	t.Run("EmailRoundTripScopedByAccount", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, b := owner(t, s, "A"), owner(t, s, "B")
		e := newEmail(a.ID)
		s.insert(t, e)

		got, err := s.Email.Repos().Email(ctx, a.ID, e.ID)
		require.NoError(t, err)
		require.Equal(t, e, got)
		got, err = s.Email.Repos().EmailByID(ctx, e.ID)
		require.NoError(t, err)
		require.Equal(t, e, got)

		_, err = s.Email.Repos().Email(ctx, b.ID, e.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "another account's email is not found: %v", err)
		_, err = s.Email.Repos().EmailByID(ctx, "eml_missing")
		require.True(t, failure.Is(err, failure.KindNotFound), "got %v", err)

		plain := newEmail(a.ID)
		plain.Cc, plain.Bcc, plain.ReplyTo, plain.Headers, plain.HTML = nil, nil, nil, nil, false
		s.insert(t, plain)
		got, err = s.Email.Repos().Email(ctx, a.ID, plain.ID)
		require.NoError(t, err)
		require.Equal(t, plain, got)
	})

	t.Run("EmailsListNewestFirstScopedByAccount", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, b := owner(t, s, "A"), owner(t, s, "B")
		var sent []email.Email
		for i := range 5 {
			e := newEmail(a.ID)
			e.CreatedAt = at.Add(time.Duration(i/2) * time.Second) // two at each instant: the id orders them
			e.UpdatedAt = e.CreatedAt
			s.insert(t, e)
			sent = append(sent, e)
		}
		s.insert(t, newEmail(b.ID))
		want := slices.Clone(sent)
		slices.SortFunc(want, func(x, y email.Email) int {
			if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
				return c
			}
			return strings.Compare(y.ID, x.ID)
		})

		page, err := s.Email.Repos().Emails(ctx, a.ID, nil, 3)
		require.NoError(t, err)
		require.Equal(t, want[:3], page)
		last := page[2]
		page, err = s.Email.Repos().Emails(ctx, a.ID, &appemail.EmailCursor{CreatedAt: last.CreatedAt, ID: last.ID}, 3)
		require.NoError(t, err)
		require.Equal(t, want[3:], page)

		none, err := s.Email.Repos().Emails(ctx, owner(t, s, "C").ID, nil, 3)
		require.NoError(t, err)
		require.Empty(t, none)
	})

	t.Run("DeliveryUpdatesOnlyQueuedEmails", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a := owner(t, s, "A")
		{
			update := func(e email.Email) {
				t.Helper()
				require.NoError(t, s.Committer.Commit(ctx, writes.Batch{EmailOutcomes: []email.Email{e}}))
			}
			e := newEmail(a.ID)
			s.insert(t, e)

			retry := e
			retry.Reply, retry.Attempts, retry.UpdatedAt = "451 4.7.1 try later", 1, at.Add(time.Second)
			update(retry)
			got, err := s.Email.Repos().Email(ctx, a.ID, e.ID)
			require.NoError(t, err)
			require.Equal(t, retry, got)

			sentAt := at.Add(time.Minute)
			sent := retry
			sent.Status, sent.Reply, sent.Attempts, sent.SentAt, sent.UpdatedAt = email.Sent, "250 2.0.0 Ok", 2, &sentAt, sentAt
			update(sent)
			got, err = s.Email.Repos().Email(ctx, a.ID, e.ID)
			require.NoError(t, err)
			require.Equal(t, sent, got)

			late := sent
			late.Status, late.FailureCode, late.SentAt = email.Failed, "rejected", nil
			update(late)
			got, err = s.Email.Repos().Email(ctx, a.ID, e.ID)
			require.NoError(t, err)
			require.Equal(t, sent, got, "a sent email is final")
		}
	})

	t.Run("ASendIsWrittenWholeOrNotAtAll", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a := owner(t, s, "A")
		answer := writes.Answer{AccountID: a.ID, Key: "k1", Response: idempotency.Response{Status: 200, Body: []byte("{}")}}
		require.NoError(t, s.Committer.Commit(ctx, writes.Batch{Answers: []writes.Answer{answer}}))
		e := newEmail(a.ID)
		send := writes.Batch{
			Emails:  []email.Email{e},
			Jobs:    []jobs.EnqueueParams{{Kind: appemail.DeliverKind, Payload: []byte(`{}`)}},
			Answers: []writes.Answer{answer},
		}
		require.ErrorIs(t, s.Committer.Commit(ctx, send), idempotency.ErrAnsweredElsewhere)
		_, err := s.Email.Repos().EmailByID(ctx, e.ID)
		require.True(t, failure.Is(err, failure.KindNotFound), "the refused send wrote no email: %v", err)

		send.Answers = nil
		require.NoError(t, s.Committer.Commit(ctx, send))
		_, err = s.Email.Repos().EmailByID(ctx, e.ID)
		require.NoError(t, err)
	})

	t.Run("ThreadsAreFoundByMessageIDAndReadFromTheirFirstEmail", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		ctx := context.Background()
		a, b := owner(t, s, "A"), owner(t, s, "B")
		received := func(accountID, messageID, thread string, second int) email.Email {
			e := newEmail(accountID)
			e.Direction, e.MessageID, e.CreatedAt = email.Inbound, messageID, at.Add(time.Duration(second)*time.Second)
			if thread != "" {
				e.ThreadID = thread
			}
			return e
		}
		// A sent email starts a thread; a reply to it and our answer join it.
		first := newEmail(a.ID)
		thread := first.ThreadID
		reply := received(a.ID, "<reply@example.org>", thread, 1)
		answer := newEmail(a.ID)
		answer.ThreadID, answer.CreatedAt = thread, at.Add(2*time.Second)
		// Another thread, started by a received email; another account's
		// email with the reply's Message-ID, in a thread of its own.
		other := received(a.ID, "<other@example.org>", "", 3)
		elsewhere := received(b.ID, "<reply@example.org>", "", 4)
		later := newEmail(a.ID)
		later.CreatedAt = at.Add(4 * time.Second)
		for _, e := range []email.Email{first, reply, answer, other, elsewhere, later} {
			s.insert(t, e)
		}

		threadOf := func(accountID string, ids ...string) string {
			t.Helper()
			got, err := s.Inbox.ThreadByMessageIDs(ctx, accountID, ids)
			require.NoError(t, err)
			return got
		}
		require.Equal(t, thread, threadOf(a.ID, first.MessageID), "a sent email, by its own Message-ID")
		require.Equal(t, thread, threadOf(a.ID, "<reply@example.org>"), "a received email")
		require.Equal(t, other.ThreadID, threadOf(a.ID, "<nobody@example.org>", other.MessageID, answer.MessageID), "the newest of those named")
		require.Equal(t, later.ThreadID, threadOf(a.ID, other.MessageID, later.MessageID), "the newest of those named")
		require.Equal(t, other.ThreadID, threadOf(a.ID, other.MessageID))
		require.Equal(t, elsewhere.ThreadID, threadOf(b.ID, "<reply@example.org>"), "each account its own")
		require.Empty(t, threadOf(b.ID, first.MessageID), "another account's sent email")
		require.Empty(t, threadOf(a.ID, email.SentMessageID(ident.New(ident.Email), "mail.example.com")), "an email that never was")
		require.Empty(t, threadOf(a.ID))

		list := func(accountID, thread string, limit int) []string {
			t.Helper()
			got, err := s.Inbox.ThreadEmails(ctx, accountID, thread, limit)
			require.NoError(t, err)
			var ids []string
			for _, e := range got {
				ids = append(ids, e.ID)
			}
			return ids
		}
		require.Equal(t, []string{first.ID, reply.ID, answer.ID}, list(a.ID, thread, 10), "its first email, then the others, oldest first")
		require.Equal(t, []string{first.ID, reply.ID}, list(a.ID, thread, 2))
		require.Equal(t, []string{other.ID}, list(a.ID, other.ThreadID, 10), "a thread of one received email")
		require.Empty(t, list(b.ID, thread, 10), "another account's thread")

		sent := func(accountID string, ids ...string) (string, bool) {
			t.Helper()
			e, found, err := s.Inbox.SentEmail(ctx, accountID, ids)
			require.NoError(t, err)
			return e.ID, found
		}
		got, found := sent(a.ID, first.MessageID, answer.MessageID)
		require.True(t, found)
		require.Equal(t, answer.ID, got, "the newest sent email named")
		_, found = sent(a.ID, "<reply@example.org>")
		require.False(t, found, "a received email is not a sent one")
		_, found = sent(b.ID, first.MessageID)
		require.False(t, found, "another account's sent email")

		// A received email that claims a sent email's Message-ID joins the
		// lookups by Message-ID as the newest, and is never taken for the
		// sent email.
		forged := received(a.ID, first.MessageID, "", 5)
		s.insert(t, forged)
		require.Equal(t, forged.ThreadID, threadOf(a.ID, first.MessageID))
		got, found = sent(a.ID, first.MessageID)
		require.True(t, found)
		require.Equal(t, first.ID, got)
	})
}
