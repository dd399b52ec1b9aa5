package mcp_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// emailItem is an email as list_emails, get_email and wait_for_message
// show it.
type emailItem struct {
	EmailID        string         `json:"email_id"`
	ThreadID       string         `json:"thread_id"`
	Direction      string         `json:"direction"`
	Status         string         `json:"status"`
	Mailbox        string         `json:"mailbox"`
	From           string         `json:"from"`
	FromName       string         `json:"from_name"`
	To             []string       `json:"to"`
	Subject        string         `json:"subject"`
	Text           string         `json:"text"`
	Body           string         `json:"body"`
	MessageID      string         `json:"message_id"`
	Authentication map[string]any `json:"authentication"`
	Attachments    []struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Size   int    `json:"size"`
		Stored bool   `json:"stored"`
	} `json:"attachments"`
}

// sentItem is send_email's and reply_email's answer.
type sentItem struct {
	EmailID    string   `json:"email_id"`
	ThreadID   string   `json:"thread_id"`
	Recipient  string   `json:"recipient"`
	Recipients []string `json:"recipients"`
	Subject    string   `json:"subject"`
	MessageID  string   `json:"message_id"`
	InReplyTo  string   `json:"in_reply_to"`
}

// receive hands a message for mailbox to the email use cases as the SMTP
// listener does after DATA; the app's job parses it.
func (b *testBundle) receive(t *testing.T, accountID, mailbox, raw string) {
	t.Helper()
	_, err := b.email.Spool(t.Context(), email.Spooled{RemoteIP: "127.0.0.1", Helo: "mx.example.org", MailFrom: "ann@example.org",
		Recipients: []email.SpooledRecipient{{Address: mailbox, AccountID: accountID}}, Raw: []byte(raw)})
	require.NoError(t, err)
}

// The email tools with the SDK's client: an email sent to several with
// display names; wait_for_message waits for the answer to it, which lands
// in its thread; list_emails pages the mailbox and reads the thread;
// get_email reads the answer whole; reply_email answers it in the thread.
// Another account's emails, mailboxes and threads are not found, and bad
// arguments are named.
func TestEmailTools(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		cs := b.connect(t, b.acme)
		for _, c := range []struct {
			who   credentials
			local string
		}{{b.acme, "support.bot"}, {b.other, "other.bot"}} {
			status, raw := b.rest(t, c.who, http.MethodPost, "/v1/emails/"+c.who.accountID+"/create-email",
				map[string]any{"address": c.local, "domain_name": "mail.switchboard.local"})
			require.Equal(t, http.StatusOK, status, "body: %s", raw)
		}
		const mailbox = "support.bot@mail.switchboard.local"

		var sent sentItem
		ok(t, cs, "send_email", map[string]any{"sender_address": `"Acme Support" <` + mailbox + ">",
			"recipient_address": `Ann Example <ann@example.org>, "Doe, John" <john@example.net>`, "subject": "Your report", "body": "Here it is."}, &sent)
		require.Equal(t, "ann@example.org", sent.Recipient)
		require.Equal(t, []string{"ann@example.org", "john@example.net"}, sent.Recipients)

		type waited struct {
			TimedOut bool       `json:"timed_out"`
			Email    *emailItem `json:"email"`
			Message  any        `json:"message"`
		}
		got := make(chan waited, 1)
		go func() {
			var w waited
			ok(t, cs, "wait_for_message", map[string]any{"kind": "email", "mailbox": "Support.Bot@mail.switchboard.local", "timeout_seconds": 30}, &w)
			got <- w
		}()
		require.Eventually(t, func() bool { _, waits := b.mcp.Waiting(); return waits == 1 }, 10*time.Second, 5*time.Millisecond, "the wait begins")
		answer := "From: Ann Example <ann@example.org>\r\nTo: " + mailbox + "\r\nSubject: Re: Your report\r\nMessage-ID: <answer-1@example.org>\r\n" +
			"In-Reply-To: " + sent.MessageID + "\r\nReferences: " + sent.MessageID + "\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
			"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nThanks!\r\n\r\nOn Tue, Nov 24, 2026 at 9:15 AM Acme Support wrote:\r\n> Here it is.\r\n" +
			"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=signed.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n"
		b.receive(t, b.acme.accountID, mailbox, answer)
		var w waited
		select {
		case w = <-got:
		case <-time.After(40 * time.Second):
			t.Fatal("wait_for_message did not return")
		}
		require.False(t, w.TimedOut)
		require.Nil(t, w.Message)
		require.NotNil(t, w.Email)
		require.Equal(t, "Thanks!", w.Email.Text)
		require.Equal(t, sent.ThreadID, w.Email.ThreadID, "the answer lands in the sent email's thread")
		require.Equal(t, "inbound", w.Email.Direction)
		require.Equal(t, "Ann Example", w.Email.FromName)

		type listPage struct {
			Emails     []emailItem `json:"emails"`
			NextCursor string      `json:"next_cursor"`
		}
		var page listPage
		ok(t, cs, "list_emails", map[string]any{"mailbox": mailbox, "limit": 1}, &page)
		require.Len(t, page.Emails, 1)
		require.Equal(t, w.Email.EmailID, page.Emails[0].EmailID, "newest first")
		require.NotEmpty(t, page.NextCursor)
		cursor := page.NextCursor
		page = listPage{}
		ok(t, cs, "list_emails", map[string]any{"mailbox": mailbox, "limit": 1, "cursor": cursor}, &page)
		require.Len(t, page.Emails, 1)
		require.Equal(t, sent.EmailID, page.Emails[0].EmailID)
		require.Equal(t, "outbound", page.Emails[0].Direction)
		require.Equal(t, []string{"ann@example.org", "john@example.net"}, page.Emails[0].To)
		page = listPage{}
		ok(t, cs, "list_emails", map[string]any{"thread_id": sent.ThreadID}, &page)
		require.Len(t, page.Emails, 2)
		require.Equal(t, []string{sent.EmailID, w.Email.EmailID}, []string{page.Emails[0].EmailID, page.Emails[1].EmailID}, "a thread oldest first")
		require.Empty(t, page.NextCursor)
		ok(t, cs, "list_emails", map[string]any{}, &page)
		require.Len(t, page.Emails, 2, "all of the account's emails")

		var full emailItem
		ok(t, cs, "get_email", map[string]any{"email_id": w.Email.EmailID}, &full)
		require.Contains(t, full.Body, "> Here it is.")
		require.Equal(t, "Thanks!", full.Text)
		require.Len(t, full.Attachments, 1)
		require.Equal(t, "signed.pdf", full.Attachments[0].Name)
		require.True(t, full.Attachments[0].Stored)
		require.Contains(t, full.Authentication, "spf")

		var reply sentItem
		ok(t, cs, "reply_email", map[string]any{"email_id": w.Email.EmailID, "body": "You are welcome.", "idempotency_key": "reply-1"}, &reply)
		require.Equal(t, sent.ThreadID, reply.ThreadID)
		require.Equal(t, "Re: Your report", reply.Subject)
		require.Equal(t, "ann@example.org", reply.Recipient)
		require.Equal(t, "<answer-1@example.org>", reply.InReplyTo)
		var again sentItem
		ok(t, cs, "reply_email", map[string]any{"email_id": w.Email.EmailID, "body": "You are welcome.", "idempotency_key": "reply-1"}, &again)
		require.Equal(t, reply.EmailID, again.EmailID, "the key answers the first reply")

		// Another account's emails, mailbox and thread are not found.
		theirs := b.connect(t, b.other)
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"get_email", map[string]any{"email_id": w.Email.EmailID}},
			{"reply_email", map[string]any{"email_id": w.Email.EmailID, "body": "mine?"}},
			{"list_emails", map[string]any{"mailbox": mailbox}},
			{"list_emails", map[string]any{"thread_id": sent.ThreadID}},
			{"wait_for_message", map[string]any{"thread_id": sent.ThreadID, "timeout_seconds": 1}},
			{"wait_for_message", map[string]any{"kind": "email", "mailbox": mailbox, "timeout_seconds": 1}},
			{"get_email", map[string]any{"email_id": "eml_nosuchemail"}},
		} {
			e := fails(t, theirs, c.tool, c.args)
			require.Equal(t, "not_found", e.Code, "%s %v: %+v", c.tool, c.args, e)
		}
		// Bad arguments are named.
		for _, c := range []struct {
			tool  string
			args  map[string]any
			field string
		}{
			{"get_email", map[string]any{}, "email_id"},
			{"reply_email", map[string]any{"email_id": w.Email.EmailID}, "body"},
			{"reply_email", map[string]any{"email_id": w.Email.EmailID, "body": " "}, "body"},
			{"reply_email", map[string]any{"email_id": w.Email.EmailID, "body": "x", "cc": []string{"nope"}}, "cc.0"},
			{"list_emails", map[string]any{"cursor": "not-a-cursor"}, "cursor"},
			{"list_emails", map[string]any{"limit": 101}, "limit"},
			{"list_emails", map[string]any{"thread_id": sent.ThreadID, "mailbox": mailbox}, "thread_id"},
			{"wait_for_message", map[string]any{"kind": "email", "thread_id": "thr_notanemailthread", "timeout_seconds": 1}, "thread_id"},
			{"wait_for_message", map[string]any{"kind": "message", "mailbox": mailbox, "timeout_seconds": 1}, "mailbox"},
			{"wait_for_message", map[string]any{"kind": "mail", "timeout_seconds": 1}, "kind"},
			{"send_email", map[string]any{"sender_address": mailbox, "recipient_address": "Ann <ann@example.org>, nope", "subject": "s", "body": "b"}, "recipient_address"},
			{"send_email", map[string]any{"sender_address": mailbox, "recipient_address": []string{"ann@example.org", "nope"}, "subject": "s", "body": "b"}, "recipient_address.1"},
		} {
			e := fails(t, cs, c.tool, c.args)
			require.Equal(t, "validation_error", e.Code, "%s %v: %+v", c.tool, c.args, e)
			require.NotEmpty(t, e.Fields, "%s %v", c.tool, c.args)
			require.Equal(t, c.field, e.Fields[0].Field, "%s %v: %+v", c.tool, c.args, e)
		}
		// The recipients as a list, one an item, as REST takes them.
		var listed sentItem
		ok(t, cs, "send_email", map[string]any{"sender_address": mailbox,
			"recipient_address": []string{"Ann Example <ann@example.org>", `"Doe, John" <john@example.net>`, "eve@example.com"},
			"subject":           "Listed", "body": "Here too."}, &listed)
		require.Equal(t, "ann@example.org", listed.Recipient)
		require.Equal(t, []string{"ann@example.org", "john@example.net", "eve@example.com"}, listed.Recipients)
		var details emailItem
		ok(t, cs, "get_email", map[string]any{"email_id": listed.EmailID}, &details)
		require.Equal(t, []string{"ann@example.org", "john@example.net", "eve@example.com"}, details.To)
	})
}
