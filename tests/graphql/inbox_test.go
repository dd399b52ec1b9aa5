package graphql_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// gqlEmail is an Email as the inbox queries select it.
type gqlEmail struct {
	ID            string `json:"id"`
	Direction     string `json:"direction"`
	ThreadID      string `json:"threadId"`
	Mailbox       string `json:"mailbox"`
	From          string `json:"from"`
	FromName      string `json:"fromName"`
	To            string `json:"to"`
	ToList        []struct{ Name, Address string }
	Subject       string   `json:"subject"`
	Status        string   `json:"status"`
	InReplyTo     string   `json:"inReplyTo"`
	References    []string `json:"references"`
	ExtractedText string   `json:"extractedText"`
	HTMLBody      string   `json:"htmlBody"`
	DMARCFailed   bool     `json:"dmarcFailed"`
	Size          int      `json:"size"`
	Auth          *struct {
		SPF         string   `json:"spf"`
		DKIMDomains []string `json:"dkimDomains"`
	} `json:"authentication"`
	Attachments []struct {
		ID, Name, ContentType, SHA256 string
		Size                          int
		Stored                        bool
	} `json:"attachments"`
}

const emailFields = `id direction threadId mailbox from fromName to toList { name address } subject status inReplyTo references
  extractedText htmlBody dmarcFailed size authentication { spf dkimDomains } attachments { id name contentType size sha256 stored }`

// GraphQL reads a mailbox's emails in cursor pages, an email with its
// parts and attachments' metadata, and an email thread, and answers an
// email with replyEmail in its thread; another account's mailbox is not
// found, its email and thread null, its reply not found; an empty body is
// a validation error naming body.
func TestMailboxEmailsThreadsAndReplies(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		var svc *appemail.Service
		b := setupWith(t, dialect, appOptions{extra: []fx.Option{fx.Populate(&svc)}})
		acc := b.rest(t, b.acme, http.MethodGet, "/v1/accounts/"+b.acme.accountID, nil)
		domain := acc["data"].(map[string]any)["service_email_domain"].(string)
		b.rest(t, b.acme, http.MethodPost, "/v1/emails/"+b.acme.accountID+"/create-email", map[string]any{"address": "support.bot", "domain_name": domain})
		mailbox := "support.bot@" + domain
		sent := b.rest(t, b.acme, http.MethodPost, "/v1/emails/"+b.acme.accountID+"/send", map[string]any{
			"sender_address": `"Acme Support" <` + mailbox + ">", "recipient_address": []string{"Ann Example <ann@example.org>", "bob@example.org"},
			"subject": "Your report", "body": "Here it is.",
		})
		answer := "From: Ann Example <ann@example.org>\r\nTo: " + mailbox + "\r\nSubject: Re: Your report\r\nMessage-ID: <answer-1@example.org>\r\n" +
			"In-Reply-To: " + sent["message_id"].(string) + "\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
			"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>Thanks!</p>\r\n" +
			"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=signed.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n"
		_, err := svc.Spool(t.Context(), email.Spooled{RemoteIP: "127.0.0.1", MailFrom: "ann@example.org",
			Recipients: []email.SpooledRecipient{{Address: mailbox, AccountID: b.acme.accountID}}, Raw: []byte(answer)})
		require.NoError(t, err)

		type page struct {
			MailboxEmails struct {
				Nodes    []gqlEmail `json:"nodes"`
				PageInfo pageInfo   `json:"pageInfo"`
			} `json:"mailboxEmails"`
		}
		const mailboxQuery = `query($address: String!, $after: String) { mailboxEmails(address: $address, first: 1, after: $after) {
			nodes { ` + emailFields + ` } pageInfo { hasNextPage endCursor } } }`
		var first page
		eventually(t, func() bool {
			first = page{}
			b.data(t, b.acme, mailboxQuery, map[string]any{"address": mailbox}, &first)
			return len(first.MailboxEmails.Nodes) == 1 && first.MailboxEmails.Nodes[0].Direction == "INBOUND"
		}, "the answer is received")
		got := first.MailboxEmails.Nodes[0]
		require.Equal(t, "RECEIVED", got.Status)
		require.Equal(t, sent["thread_id"], got.ThreadID, "the answer lands in the sent email's thread")
		require.Equal(t, "Ann Example", got.FromName)
		require.Equal(t, "Thanks!", got.ExtractedText)
		require.Equal(t, "<p>Thanks!</p>", got.HTMLBody)
		require.NotNil(t, got.Auth)
		require.NotNil(t, got.Auth.DKIMDomains)
		require.Len(t, got.Attachments, 1, "a listing shows attachments too")
		require.True(t, first.MailboxEmails.PageInfo.HasNextPage)
		var second page
		b.data(t, b.acme, mailboxQuery, map[string]any{"address": mailbox, "after": *first.MailboxEmails.PageInfo.EndCursor}, &second)
		require.Len(t, second.MailboxEmails.Nodes, 1)
		out := second.MailboxEmails.Nodes[0]
		require.Equal(t, sent["email_id"], out.ID)
		require.Equal(t, "OUTBOUND", out.Direction)
		require.Equal(t, "Acme Support", out.FromName)
		require.Equal(t, []struct{ Name, Address string }{{"Ann Example", "ann@example.org"}, {"", "bob@example.org"}}, out.ToList)
		require.Nil(t, out.Auth, "a sent email has no authentication")
		require.Empty(t, out.Attachments)
		require.False(t, second.MailboxEmails.PageInfo.HasNextPage)

		var one struct {
			Email gqlEmail `json:"email"`
		}
		b.data(t, b.acme, `query($id: ID!) { email(id: $id) { `+emailFields+` } }`, map[string]any{"id": got.ID}, &one)
		require.Len(t, one.Email.Attachments, 1)
		require.Equal(t, "signed.pdf", one.Email.Attachments[0].Name)
		require.Equal(t, "application/pdf", one.Email.Attachments[0].ContentType)
		require.Equal(t, 9, one.Email.Attachments[0].Size)
		require.True(t, one.Email.Attachments[0].Stored)
		require.Positive(t, one.Email.Size)

		var replied struct {
			ReplyEmail gqlEmail `json:"replyEmail"`
		}
		b.data(t, b.acme, `mutation($id: ID!) { replyEmail(input: {emailId: $id, body: "You are welcome.", cc: ["boss@example.org"]}) { `+emailFields+` } }`,
			map[string]any{"id": got.ID}, &replied)
		require.Equal(t, sent["thread_id"], replied.ReplyEmail.ThreadID)
		require.Equal(t, "Re: Your report", replied.ReplyEmail.Subject)
		require.Equal(t, "ann@example.org", replied.ReplyEmail.To)
		require.Equal(t, "<answer-1@example.org>", replied.ReplyEmail.InReplyTo)
		require.Equal(t, "QUEUED", replied.ReplyEmail.Status)

		var thread struct {
			EmailThread struct {
				ID      string     `json:"id"`
				Subject string     `json:"subject"`
				Emails  []gqlEmail `json:"emails"`
			} `json:"emailThread"`
		}
		b.data(t, b.acme, `query($id: ID!) { emailThread(id: $id) { id subject emails { id direction } } }`, map[string]any{"id": sent["thread_id"]}, &thread)
		require.Equal(t, "Your report", thread.EmailThread.Subject)
		require.Len(t, thread.EmailThread.Emails, 3)
		require.Equal(t, []string{"OUTBOUND", "INBOUND", "OUTBOUND"}, []string{thread.EmailThread.Emails[0].Direction,
			thread.EmailThread.Emails[1].Direction, thread.EmailThread.Emails[2].Direction}, "oldest first")

		// Another account: the mailbox not found, the email and thread
		// null, the reply not found.
		resp := b.query(t, b.other, `query($a: String!) { mailboxEmails(address: $a) { nodes { id } } }`, map[string]any{"a": mailbox})
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "not_found", resp.Errors[0].Extensions["code"])
		resp = b.query(t, b.other, `query($id: ID!, $t: ID!) { email(id: $id) { id } emailThread(id: $t) { id } }`,
			map[string]any{"id": got.ID, "t": sent["thread_id"]})
		require.Empty(t, resp.Errors)
		require.JSONEq(t, `{"email":null,"emailThread":null}`, string(resp.Data))
		resp = b.query(t, b.other, `mutation($id: ID!) { replyEmail(input: {emailId: $id, body: "mine?"}) { id } }`, map[string]any{"id": got.ID})
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "not_found", resp.Errors[0].Extensions["code"])
		// Bad input is named.
		resp = b.query(t, b.acme, `mutation($id: ID!) { replyEmail(input: {emailId: $id, body: " "}) { id } }`, map[string]any{"id": got.ID})
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
		require.Equal(t, []any{"body"}, resp.Errors[0].Extensions["fields"].([]any)[0].(map[string]any)["path"])
		resp = b.query(t, b.acme, `mutation($id: ID!) { replyEmail(input: {emailId: $id, body: "x", cc: ["nope"]}) { id } }`, map[string]any{"id": got.ID})
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, []any{"cc", float64(0)}, resp.Errors[0].Extensions["fields"].([]any)[0].(map[string]any)["path"])
		resp = b.query(t, b.acme, `{ mailboxEmails(address: "x@y.example", after: "nonsense") { nodes { id } } }`, nil)
		require.NotEmpty(t, resp.Errors)
		require.Equal(t, "validation_error", resp.Errors[0].Extensions["code"])
	})
}
