package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// Mailbox runs the contract of appemail.Mailbox against the mailboxes
// that open returns; each call must give its own empty database.
func Mailbox(t *testing.T, open func(t *testing.T) appemail.Mailbox) {
	ctx := context.Background()
	// kept is a small email of account, numbered n.
	kept := func(account string, n int) appemail.KeptEmail {
		return appemail.KeptEmail{
			AccountID: account, MessageID: fmt.Sprintf("<%s.%d@mail.example.com>", account, n),
			From: "agent@mail.example.com", To: "ann@example.org", Subject: fmt.Sprintf("%s %d", account, n),
			Text: "Hello", Date: at.Add(time.Duration(n) * time.Second),
		}
	}
	keep := func(t *testing.T, m appemail.Mailbox, limits appemail.MailboxLimits, e appemail.KeptEmail) {
		t.Helper()
		require.NoError(t, m.Keep(ctx, e, limits))
	}
	// subjects lists what the mailbox holds of account, newest first, and
	// checks that its total says as much.
	subjects := func(t *testing.T, m appemail.Mailbox, account string) []string {
		t.Helper()
		page, err := m.Kept(ctx, account, 0, 1000)
		require.NoError(t, err)
		out := []string{}
		for _, e := range page.Emails {
			out = append(out, e.Subject)
		}
		require.Equal(t, len(out), page.Total, "the total of %s counts what it holds", account)
		return out
	}
	loose := appemail.DefaultMailboxLimits

	t.Run("KeepsEverythingNewestFirst", func(t *testing.T) {
		t.Parallel()
		m := open(t)
		full := appemail.KeptEmail{
			AccountID: "acc_a", MessageID: "<full@mail.example.com>", From: "agent@mail.example.com", To: "ann@example.org",
			Cc: []string{"cc1@example.org", "cc2@example.org"}, Bcc: []string{"hidden@example.org"}, ReplyTo: []string{"help@example.org"},
			Subject: "Grüße", Text: "Hello Ann", HTML: "<p>Hello <b>Ann</b></p>",
			Headers:    []email.Header{{Name: "X-Campaign", Value: "spring"}, {Name: "In-Reply-To", Value: "<x@y>"}},
			Attachment: &appemail.KeptAttachment{Name: "report.pdf", ContentType: "application/pdf", Size: 5 << 20, SHA256: strings.Repeat("ab", 32)},
			Date:       at,
		}
		keep(t, m, loose, full)
		for i := range 4 {
			keep(t, m, loose, kept("acc_a", i))
		}
		keep(t, m, loose, kept("acc_b", 0))

		page, err := m.Kept(ctx, "acc_a", 0, 3)
		require.NoError(t, err)
		require.Equal(t, 5, page.Total)
		require.Len(t, page.Emails, 3)
		require.Equal(t, []string{"acc_a 3", "acc_a 2", "acc_a 1"}, []string{page.Emails[0].Subject, page.Emails[1].Subject, page.Emails[2].Subject})
		rest, err := m.Kept(ctx, "acc_a", 3, 3)
		require.NoError(t, err)
		require.Equal(t, 5, rest.Total)
		require.Len(t, rest.Emails, 2)
		require.Equal(t, full, rest.Emails[1], "every field comes back, the attachment as its description")
		require.Equal(t, kept("acc_a", 0), rest.Emails[0])

		require.Equal(t, []string{"acc_b 0"}, subjects(t, m, "acc_b"))
		none, err := m.Kept(ctx, "acc_none", 0, 10)
		require.NoError(t, err)
		require.Zero(t, none.Total)
		require.Empty(t, none.Emails)
		past, err := m.Kept(ctx, "acc_a", 10, 10)
		require.NoError(t, err)
		require.Equal(t, 5, past.Total)
		require.Empty(t, past.Emails)
	})

	t.Run("AccountBoundByCountTakesItsOwnOldest", func(t *testing.T) {
		t.Parallel()
		m := open(t)
		limits := loose
		limits.AccountEmails = 3
		keep(t, m, limits, kept("acc_b", 0))
		keep(t, m, limits, kept("acc_b", 1))
		for i := range 2 * limits.AccountEmails {
			keep(t, m, limits, kept("acc_a", i))
		}
		require.Equal(t, []string{"acc_a 5", "acc_a 4", "acc_a 3"}, subjects(t, m, "acc_a"))
		require.Equal(t, []string{"acc_b 1", "acc_b 0"}, subjects(t, m, "acc_b"), "another account's emails stay")
	})

	t.Run("AccountBoundByBytesTakesItsOwnOldest", func(t *testing.T) {
		t.Parallel()
		m := open(t)
		big := func(account string, n int) appemail.KeptEmail {
			e := kept(account, n)
			e.Text = strings.Repeat("x", 1000)
			return e
		}
		limits := loose
		limits.AccountBytes = 3*big("acc_a", 0).Size() + 10
		keep(t, m, limits, big("acc_b", 0))
		for i := range 6 {
			keep(t, m, limits, big("acc_a", i))
		}
		require.Equal(t, []string{"acc_a 5", "acc_a 4", "acc_a 3"}, subjects(t, m, "acc_a"))
		require.Equal(t, []string{"acc_b 0"}, subjects(t, m, "acc_b"))

		// An email whose bytes alone exceed the bound is not kept, and
		// removes nothing.
		huge := kept("acc_b", 1)
		huge.HTML = strings.Repeat("y", int(limits.AccountBytes))
		keep(t, m, limits, huge)
		require.Equal(t, []string{"acc_b 0"}, subjects(t, m, "acc_b"))
		require.Equal(t, []string{"acc_a 5", "acc_a 4", "acc_a 3"}, subjects(t, m, "acc_a"))
	})

	t.Run("TotalBoundSparesAccountsWithinTheirShare", func(t *testing.T) {
		t.Parallel()
		m := open(t)
		limits := loose
		limits.AccountEmails, limits.TotalEmails = 5, 6
		for i := range 3 {
			keep(t, m, limits, kept("acc_b", i))
		}
		// Account A sends twice its bound into a mailbox that holds 6 in
		// all: B holds its share, so only A's own emails go.
		for i := range 2 * limits.AccountEmails {
			keep(t, m, limits, kept("acc_a", i))
		}
		require.Equal(t, []string{"acc_b 2", "acc_b 1", "acc_b 0"}, subjects(t, m, "acc_b"))
		require.Equal(t, []string{"acc_a 9", "acc_a 8", "acc_a 7"}, subjects(t, m, "acc_a"))

		// An account above its share gives way to a newcomer.
		keep(t, m, limits, kept("acc_c", 0))
		require.Equal(t, []string{"acc_c 0"}, subjects(t, m, "acc_c"))
		require.Len(t, subjects(t, m, "acc_a"), 2, "of the two largest, A and B, the first by id gave way")
		require.Len(t, subjects(t, m, "acc_b"), 3)
	})

	t.Run("LoweredTotalTakesFromTheLargestOnly", func(t *testing.T) {
		t.Parallel()
		m := open(t)
		for i := range 40 {
			keep(t, m, loose, kept("acc_a", i))
		}
		for i := range 20 {
			keep(t, m, loose, kept("acc_b", i))
		}
		limits := loose
		limits.AccountEmails, limits.TotalEmails = 10, 10
		// The total drops from 61 to 10 at once: A gives way alone down to
		// B's 20, then A and B in turns (A first among equals by id),
		// and the newcomer keeps its email.
		keep(t, m, limits, kept("acc_c", 0))
		a := subjects(t, m, "acc_a")
		require.Len(t, a, 4)
		require.Equal(t, "acc_a 39", a[0])
		require.Len(t, subjects(t, m, "acc_b"), 5)
		require.Equal(t, []string{"acc_c 0"}, subjects(t, m, "acc_c"))
	})

	t.Run("TotalBoundByBytesTakesFromTheLargest", func(t *testing.T) {
		t.Parallel()
		m := open(t)
		sized := func(account string, n, bytes int) appemail.KeptEmail {
			e := kept(account, n)
			e.Text = strings.Repeat("x", bytes)
			return e
		}
		unit := sized("acc_a", 0, 1000).Size()
		limits := loose
		limits.AccountBytes, limits.TotalBytes, limits.BodyBytes = 10*unit, 10*unit, 1000
		keep(t, m, limits, sized("acc_b", 0, 1000))
		keep(t, m, limits, sized("acc_b", 1, 1000))
		for i := range 20 {
			keep(t, m, limits, sized("acc_a", i, 1000))
		}
		require.Equal(t, []string{"acc_b 1", "acc_b 0"}, subjects(t, m, "acc_b"), "B within its share keeps its bytes")
		a := subjects(t, m, "acc_a")
		require.Equal(t, "acc_a 19", a[0])
		require.LessOrEqual(t, len(a), 8, "the total holds 10 units, 2 of them B's")
	})

	t.Run("ConcurrentKeepsHoldTheBounds", func(t *testing.T) {
		t.Parallel()
		m := open(t)
		limits := loose
		limits.AccountEmails, limits.TotalEmails = 10, 24
		for i := range 5 {
			keep(t, m, limits, kept("acc_quiet", i))
		}
		senders := []string{"acc_a", "acc_b", "acc_c"}
		const each = 20
		errs := make(chan error, len(senders)*each)
		var wg sync.WaitGroup
		for _, account := range senders {
			for i := range each {
				wg.Go(func() { errs <- m.Keep(ctx, kept(account, i), limits) })
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		total := 0
		for _, account := range senders {
			n := len(subjects(t, m, account))
			require.LessOrEqual(t, n, limits.AccountEmails, account)
			require.Positive(t, n, account)
			total += n
		}
		quiet := subjects(t, m, "acc_quiet")
		require.Equal(t, []string{"acc_quiet 4", "acc_quiet 3", "acc_quiet 2", "acc_quiet 1", "acc_quiet 0"}, quiet,
			"an account within its share (24/4) keeps all its emails")
		require.Equal(t, limits.TotalEmails, total+len(quiet), "the mailbox is full, not over")
	})
}
