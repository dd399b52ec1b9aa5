package smtp_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/emailtest"
	"github.com/switchboard-dev/switchboard/adapters/email/smtp"
	"github.com/switchboard-dev/switchboard/adapters/email/smtptest"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// start runs a server and a Sender configured by the server's URL.
func start(t *testing.T, opts smtptest.Options, tune ...func(*smtp.Config)) (*smtptest.Server, *smtp.Sender) {
	t.Helper()
	srv, err := smtptest.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg, err := smtp.ParseURL(srv.URL())
	require.NoError(t, err)
	cfg.TLSConfig = srv.ClientTLS
	for _, f := range tune {
		f(&cfg)
	}
	s, err := smtp.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return srv, s
}

func delivered(srv *smtptest.Server) func(t *testing.T) []emailtest.Delivered {
	return func(t *testing.T) []emailtest.Delivered {
		var out []emailtest.Delivered
		for _, m := range srv.Messages() {
			d, _, err := emailtest.FromMIME(m.From, m.To, m.Data)
			require.NoError(t, err)
			out = append(out, d)
		}
		return out
	}
}

func TestSenderContract(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{smtptest.TLSNone, smtptest.TLSStartTLS, smtptest.TLSImplicit} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			emailtest.Sender(t, func(t *testing.T) emailtest.Harness {
				srv, s := start(t, smtptest.Options{TLS: mode, Username: "relay-user", Password: "s3cret pass"})
				return emailtest.Harness{Sender: s, Delivered: delivered(srv)}
			})
		})
	}
}

func TestMIMEAndEnvelope(t *testing.T) {
	t.Parallel()
	srv, s := start(t, smtptest.Options{TLS: smtptest.TLSStartTLS})
	out := emailtest.Outgoing(1)
	out.HTML, out.Text = "<p>Grüße <b>aus</b> Köln</p>", "Grüße aus Köln"
	out.Headers = []email.Header{{Name: "In-Reply-To", Value: "<prev@example.org>"}, {Name: "X-Campaign", Value: "spring"}}
	_, err := s.Send(context.Background(), out)
	require.NoError(t, err)

	msgs := srv.Messages()
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.Equal(t, "agent@mail.example.com", m.From)
	require.ElementsMatch(t, []string{"user@example.org", "cc@example.org", "hidden@example.org"}, m.To, "Bcc is in the envelope")
	d, parsed, err := emailtest.FromMIME(m.From, m.To, m.Data)
	require.NoError(t, err)
	h := parsed.Header
	require.Equal(t, "<agent@mail.example.com>", h.Get("From"))
	require.Equal(t, "<user@example.org>", h.Get("To"))
	require.Equal(t, "<cc@example.org>", h.Get("Cc"))
	require.Equal(t, "<replies@example.com>", h.Get("Reply-To"))
	require.Empty(t, h.Get("Bcc"))
	require.NotContains(t, string(m.Data), "hidden@example.org", "Bcc never reaches the message")
	require.True(t, strings.HasPrefix(h.Get("Subject"), "=?UTF-8?"), "non-ASCII subject is encoded: %q", h.Get("Subject"))
	require.Equal(t, out.Subject, d.Subject)
	require.Equal(t, out.MessageID, h.Get("Message-Id"))
	require.Equal(t, "<prev@example.org>", h.Get("In-Reply-To"))
	require.Equal(t, "spring", h.Get("X-Campaign"))
	require.True(t, strings.HasPrefix(h.Get("Content-Type"), "multipart/alternative;"), "got %q", h.Get("Content-Type"))
	require.Equal(t, out.HTML, d.HTML)
	require.Equal(t, out.Text, d.Text)
	require.NotEmpty(t, h.Get("Date"))
}

func TestConnectionsAreReused(t *testing.T) {
	t.Parallel()
	srv, s := start(t, smtptest.Options{TLS: smtptest.TLSStartTLS, Username: "u", Password: "p"})
	for i := range 20 {
		_, err := s.Send(context.Background(), emailtest.Outgoing(i))
		require.NoError(t, err)
	}
	require.Equal(t, 20, srv.Accepted())
	require.Equal(t, 1, srv.Connections(), "one connection carries sequential sends")
	require.Equal(t, 1, srv.Authentications(), "one AUTH per connection")
}

func TestDroppedConnectionsAreReplaced(t *testing.T) {
	t.Parallel()
	srv, s := start(t, smtptest.Options{DropAfter: 2})
	for i := range 5 {
		_, err := s.Send(context.Background(), emailtest.Outgoing(i))
		require.NoError(t, err, "send %d", i)
	}
	require.Equal(t, 5, srv.Accepted(), "each email exactly once")
	require.Equal(t, 3, srv.Connections(), "a new connection after each drop")
}

func TestPoolBoundsConnections(t *testing.T) {
	t.Parallel()
	srv, s := start(t, smtptest.Options{}, func(c *smtp.Config) { c.PoolSize = 2 })
	done := make(chan error)
	for i := range 30 {
		go func() {
			_, err := s.Send(context.Background(), emailtest.Outgoing(i))
			done <- err
		}()
	}
	for range 30 {
		require.NoError(t, <-done)
	}
	require.Equal(t, 30, srv.Accepted())
	require.LessOrEqual(t, srv.Connections(), 2)
}

func TestRepliesBecomeSMTPErrors(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv, s := start(t, smtptest.Options{OnData: func(m smtptest.Message) error {
		switch calls.Add(1) {
		case 1:
			return smtptest.Reply(451, "4.7.1", "Greylisted, try again later")
		case 2:
			return smtptest.Reply(550, "5.1.1", "User unknown")
		}
		return nil
	}})

	_, err := s.Send(context.Background(), emailtest.Outgoing(1))
	var se *appemail.SMTPError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 451, se.Code)
	require.True(t, se.Temporary())
	require.Contains(t, se.Reply, "451")
	require.Contains(t, se.Reply, "Greylisted")

	_, err = s.Send(context.Background(), emailtest.Outgoing(2))
	require.ErrorAs(t, err, &se)
	require.Equal(t, 550, se.Code)
	require.False(t, se.Temporary())
	require.Contains(t, se.Reply, "User unknown")

	_, err = s.Send(context.Background(), emailtest.Outgoing(3))
	require.NoError(t, err, "a refusal leaves the connection usable")
	require.Equal(t, 1, srv.Accepted())
	require.Equal(t, 1, srv.Connections())
}

func TestWrongCredentialsAreNotDelivered(t *testing.T) {
	t.Parallel()
	srv, err := smtptest.Start(smtptest.Options{TLS: smtptest.TLSStartTLS, Username: "u", Password: "right"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg, err := smtp.ParseURL(strings.Replace(srv.URL(), "right", "wrong", 1))
	require.NoError(t, err)
	cfg.TLSConfig = srv.ClientTLS
	s, err := smtp.New(cfg)
	require.NoError(t, err)
	_, err = s.Send(context.Background(), emailtest.Outgoing(1))
	require.Error(t, err)
	var se *appemail.SMTPError
	require.False(t, errors.As(err, &se), "a relay login failure is the operator's to fix, so it is retried, not a permanent refusal")
	require.Zero(t, srv.Attempts())
}

func TestStartTLSIsRequired(t *testing.T) {
	t.Parallel()
	// A server without STARTTLS, and a client that requires it.
	srv, err := smtptest.Start(smtptest.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	cfg, err := smtp.ParseURL("smtp://" + srv.Addr() + "?tls=starttls")
	require.NoError(t, err)
	s, err := smtp.New(cfg)
	require.NoError(t, err)
	_, err = s.Send(context.Background(), emailtest.Outgoing(1))
	require.Error(t, err)
	require.Zero(t, srv.Attempts())
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	c, err := smtp.ParseURL("smtp://user%40x.com:p%40ss@relay.example.com:2525?tls=implicit&pool=8&helo=sb.example.com")
	require.NoError(t, err)
	require.Equal(t, smtp.Config{Host: "relay.example.com", Port: 2525, Username: "user@x.com", Password: "p@ss", TLS: "implicit", PoolSize: 8, HELO: "sb.example.com"}, c)
	require.NotContains(t, c.Redacted(), "p@ss")

	for raw, port := range map[string]int{"smtp://relay.example.com": 587, "smtps://relay.example.com": 465, "smtp://relay.example.com?tls=none": 25} {
		c, err := smtp.ParseURL(raw)
		require.NoError(t, err, raw)
		require.Equal(t, port, c.Port, raw)
	}
	for _, bad := range []string{"http://relay.example.com", "smtp://", "smtp://h?tls=sometimes", "smtp://h:0", "smtp://h:99999", "smtp://h?pool=0", "smtp://h?pool=x"} {
		_, err := smtp.ParseURL(bad)
		require.Error(t, err, bad)
	}
}

func TestDKIMSignsConfiguredDomains(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "dkim.pem")
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))
	keys, err := smtp.ParseDKIM("Mail.Example.com=sb2026:" + file)
	require.NoError(t, err)

	srv, s := start(t, smtptest.Options{}, func(c *smtp.Config) { c.DKIM = keys })
	// Signing is safe from concurrent deliveries, the first ones included.
	done := make(chan error)
	for i := range 8 {
		go func() {
			_, err := s.Send(context.Background(), emailtest.Outgoing(10+i))
			done <- err
		}()
	}
	for range 8 {
		require.NoError(t, <-done)
	}
	for _, m := range srv.Messages() {
		_, parsed, err := emailtest.FromMIME(m.From, m.To, m.Data)
		require.NoError(t, err)
		require.Contains(t, parsed.Header.Get("Dkim-Signature"), "d=mail.example.com")
	}

	signed := emailtest.Outgoing(1)
	_, err = s.Send(context.Background(), signed)
	require.NoError(t, err)
	other := emailtest.Outgoing(2)
	other.From = "agent@other.example.net"
	_, err = s.Send(context.Background(), other)
	require.NoError(t, err)

	msgs := srv.Messages()[8:]
	require.Len(t, msgs, 2)
	_, first, err := emailtest.FromMIME(msgs[0].From, msgs[0].To, msgs[0].Data)
	require.NoError(t, err)
	sig := first.Header.Get("Dkim-Signature")
	require.Contains(t, sig, "d=mail.example.com")
	require.Contains(t, sig, "s=sb2026")
	require.Contains(t, sig, "a=rsa-sha256")
	_, second, err := emailtest.FromMIME(msgs[1].From, msgs[1].To, msgs[1].Data)
	require.NoError(t, err)
	require.Empty(t, second.Header.Get("Dkim-Signature"), "domains without a key are not signed")

	for _, bad := range []string{"example.com", "example.com=sel", "example.com=sel:/does/not/exist", "not a domain=sel:" + file} {
		_, err := smtp.ParseDKIM(bad)
		require.Error(t, err, bad)
	}
}
