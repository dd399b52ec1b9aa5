package rest_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/emailtest"
	"github.com/switchboard-dev/switchboard/adapters/email/smtp"
	"github.com/switchboard-dev/switchboard/adapters/email/smtptest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// smtpBundle is the email bundle delivering through the SMTP adapter to a
// real SMTP server on 127.0.0.1.
func smtpBundle(t *testing.T, dialect store.Dialect, opts smtptest.Options) (*emailBundle, *smtptest.Server) {
	t.Helper()
	srv, err := smtptest.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg, err := smtp.ParseURL(srv.URL())
	require.NoError(t, err)
	cfg.TLSConfig = srv.ClientTLS
	sender, err := smtp.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sender.Close() })
	return setupEmail(t, dialect, emailOptions{sender: sender}), srv
}

func TestEmailEndToEndOverSMTP(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b, srv := smtpBundle(t, dialect, smtptest.Options{TLS: smtptest.TLSStartTLS, Username: "relay", Password: "relay-pass"})
		b.createAddress(t, "agent", acmeDomain)
		r := b.post("/v1/emails/"+b.account+"/send", map[string]any{
			"sender_address": "agent@" + acmeDomain, "recipient_address": "user@example.org",
			"subject": "Rechnung für Köln ✓", "body": "<h1>Hello</h1><p>See <a href=\"https://example.com/r\">the report</a>.</p>",
			"headers": map[string]any{"cc": []any{"cc@example.org"}, "bcc": "hidden1@example.org, hidden2@example.org", "Reply-To": "replies@" + acmeDomain},
		})
		require.Equal(t, 200, r.StatusCode, "body: %s", r.Body)
		out := r.JSON(t)
		d := b.waitEmail(t, out["email_id"].(string))
		require.Equal(t, "sent", d["status"], "details: %v", d)
		require.True(t, strings.HasPrefix(d["smtp_reply"].(string), "250"), "reply %v", d["smtp_reply"])

		msgs := srv.Messages()
		require.Len(t, msgs, 1)
		m := msgs[0]
		require.Equal(t, "agent@"+acmeDomain, m.From, "envelope sender")
		require.ElementsMatch(t, []string{"user@example.org", "cc@example.org", "hidden1@example.org", "hidden2@example.org"}, m.To, "envelope recipients include Bcc")

		got, parsed, err := emailtest.FromMIME(m.From, m.To, m.Data)
		require.NoError(t, err)
		h := parsed.Header
		require.Equal(t, "<agent@"+acmeDomain+">", h.Get("From"))
		require.Equal(t, "<user@example.org>", h.Get("To"))
		require.Equal(t, "<cc@example.org>", h.Get("Cc"))
		require.Equal(t, "<replies@"+acmeDomain+">", h.Get("Reply-To"))
		require.Empty(t, h.Get("Bcc"), "no Bcc header")
		require.NotContains(t, string(m.Data), "hidden1@example.org")
		require.NotContains(t, string(m.Data), "hidden2@example.org")
		require.True(t, strings.HasPrefix(h.Get("Subject"), "=?UTF-8?"), "subject is encoded: %q", h.Get("Subject"))
		require.Equal(t, "Rechnung für Köln ✓", got.Subject)
		require.Equal(t, out["message_id"], h.Get("Message-Id"))
		require.True(t, strings.HasSuffix(h.Get("Message-Id"), "@"+acmeDomain+">"), "Message-ID on the sender's domain: %q", h.Get("Message-Id"))
		require.True(t, strings.HasPrefix(h.Get("Content-Type"), "multipart/alternative;"), "got %q", h.Get("Content-Type"))
		require.Equal(t, "<h1>Hello</h1><p>See <a href=\"https://example.com/r\">the report</a>.</p>", got.HTML)
		require.Equal(t, "Hello\nSee the report (https://example.com/r).", got.Text)
		require.Equal(t, 1, srv.Authentications())
	})
}

// Several To recipients, given as a list or as one comma-separated
// string, and display names on the sender and the recipients, reach the
// relay as the From and To headers go-mail writes (names quoted or
// encoded) and as the envelope; the answer names the first recipient as
// before, and every one besides.
func TestEmailToSeveralWithDisplayNames(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b, srv := smtpBundle(t, dialect, smtptest.Options{})
		b.createAddress(t, "agent", acmeDomain)
		want := []email.Mailbox{{Name: "Ann Example", Address: "ann@example.org"}, {Name: "Doe, John", Address: "john@example.net"},
			{Name: "Zoë Ünver", Address: "zoe@example.com"}, {Address: "bob@example.org"}}
		for i, to := range []any{
			[]any{"Ann Example <ann@example.org>", `"Doe, John" <john@example.net>`, "=?UTF-8?Q?Zo=C3=AB_=C3=9Cnver?= <zoe@example.com>", "bob@example.org"},
			`Ann Example <ann@example.org>, "Doe, John" <john@example.net>, Zoë Ünver <zoe@example.com>, bob@example.org`,
		} {
			r := b.post("/v1/emails/"+b.account+"/send", map[string]any{
				"sender_address": `"Acme Support" <agent@` + acmeDomain + ">", "recipient_address": to,
				"subject": "Hello", "body": "Hello all", "headers": map[string]any{"cc": "cc@example.org"},
			})
			require.Equal(t, 200, r.StatusCode, "body: %s", r.Body)
			out := r.JSON(t)
			require.Equal(t, "ann@example.org", out["recipient"])
			require.Equal(t, []any{"ann@example.org", "john@example.net", "zoe@example.com", "bob@example.org"}, out["recipients"])
			require.Equal(t, "agent@"+acmeDomain, out["sender"])
			d := b.waitEmail(t, out["email_id"].(string))
			require.Equal(t, "sent", d["status"], "details: %v", d)
			require.Equal(t, "Acme Support", d["sender_name"])
			require.Equal(t, "ann@example.org", d["recipient_address"])
			require.Len(t, d["to"], 4)
			require.Equal(t, map[string]any{"name": "Doe, John", "address": "john@example.net"}, d["to"].([]any)[1])

			msgs := srv.Messages()
			require.Len(t, msgs, i+1)
			m := msgs[i]
			require.ElementsMatch(t, []string{"ann@example.org", "john@example.net", "zoe@example.com", "bob@example.org", "cc@example.org"}, m.To)
			got, parsed, err := emailtest.FromMIME(m.From, m.To, m.Data)
			require.NoError(t, err)
			require.Equal(t, email.Mailbox{Name: "Acme Support", Address: "agent@" + acmeDomain}, got.Sender)
			require.Equal(t, want, got.To)
			require.Contains(t, parsed.Header.Get("To"), `"Doe, John" <john@example.net>`)
		}
	})
}

func TestEmailRetriesA451AndSendsOnce(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		var calls atomic.Int32
		b, srv := smtpBundle(t, dialect, smtptest.Options{OnData: func(smtptest.Message) error {
			if calls.Add(1) == 1 {
				return smtptest.Reply(451, "4.7.1", "Greylisted, please try again")
			}
			return nil
		}})
		b.createAddress(t, "agent", serviceDomain)
		id := b.send(t, map[string]any{"sender_address": "agent@" + serviceDomain, "recipient_address": "user@example.org", "subject": "Hi", "body": "Hello"})
		d := b.waitEmail(t, id)
		require.Equal(t, "sent", d["status"], "details: %v", d)
		require.EqualValues(t, 2, d["attempts"])
		require.True(t, strings.HasPrefix(d["smtp_reply"].(string), "250"))
		require.Equal(t, "completed", b.jobState(t, id), "the delivery job is finished, so no attempt can follow")
		require.Equal(t, 2, srv.Attempts(), "one refused and one accepted transaction")
		require.Equal(t, 1, srv.Accepted(), "sent once")
	})
}

func TestEmailFailsOnA550WithTheReply(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b, srv := smtpBundle(t, dialect, smtptest.Options{OnData: func(smtptest.Message) error {
			return smtptest.Reply(550, "5.1.1", "User unknown")
		}})
		b.createAddress(t, "agent", serviceDomain)
		id := b.send(t, map[string]any{"sender_address": "agent@" + serviceDomain, "recipient_address": "nobody@example.org", "subject": "Hi", "body": "Hello"})
		d := b.waitEmail(t, id)
		require.Equal(t, "failed", d["status"], "details: %v", d)
		require.Equal(t, "rejected", d["error_code"])
		require.Contains(t, d["smtp_reply"], "550")
		require.Contains(t, d["smtp_reply"], "User unknown")
		require.Nil(t, d["date_sent"])
		require.Equal(t, "dead", b.jobState(t, id), "the delivery job stopped for good")
		require.Equal(t, 1, srv.Attempts(), "a 5xx is not retried")
		require.Zero(t, srv.Accepted())
	})
}
