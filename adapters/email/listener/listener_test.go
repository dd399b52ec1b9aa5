package listener_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"log/slog"
	"math/big"
	"net"
	"net/smtp"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/listener"
	"github.com/switchboard-dev/switchboard/adapters/email/mailauth"
	"github.com/switchboard-dev/switchboard/adapters/email/mailparse"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/email"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/jobs"
)

// fakeDNS answers TXT queries from a table and nothing else: the tests
// reach no DNS server.
type fakeDNS struct{ txt map[string][]string }

func notFound(name string) error {
	return &net.DNSError{Err: "no such host", Name: name, IsNotFound: true}
}

func (d fakeDNS) LookupTXT(_ context.Context, name string) ([]string, error) {
	if v, ok := d.txt[strings.TrimSuffix(strings.ToLower(name), ".")]; ok {
		return v, nil
	}
	return nil, notFound(name)
}
func (d fakeDNS) LookupMX(_ context.Context, name string) ([]*net.MX, error) {
	return nil, notFound(name)
}
func (d fakeDNS) LookupIPAddr(_ context.Context, name string) ([]net.IPAddr, error) {
	return nil, notFound(name)
}
func (d fakeDNS) LookupAddr(_ context.Context, addr string) ([]string, error) {
	return nil, notFound(addr)
}

// spoolCounter counts what the listener stored.
type spoolCounter struct {
	listener.Receiver
	mu  sync.Mutex
	ids []string
}

func (s *spoolCounter) Spool(ctx context.Context, m email.Spooled) (email.Spooled, error) {
	m, err := s.Receiver.Spool(ctx, m)
	if err == nil {
		s.mu.Lock()
		s.ids = append(s.ids, m.ID)
		s.mu.Unlock()
	}
	return m, err
}

func (s *spoolCounter) spooled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ids...)
}

type bundle struct {
	db      *store.DB
	svc     *appemail.Service
	spool   *spoolCounter
	l       *listener.Listener
	account string
	other   string
	admit   atomic.Bool
}

func setup(t *testing.T, dialect store.Dialect, cfg listener.Config) *bundle {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dialect)
	b := &bundle{db: db}
	b.admit.Store(true)
	for _, id := range []*string{&b.account, &b.other} {
		*id = ident.New(ident.Account)
		require.NoError(t, db.AccountStore().Repos().InsertAccount(ctx, account.Account{ID: *id, Name: "Acme", CreatedAt: time.Now(), UpdatedAt: time.Now()}))
	}
	dns := fakeDNS{txt: map[string][]string{
		"example.org":        {"v=spf1 ip4:127.0.0.1 -all"},
		"_dmarc.example.org": {"v=DMARC1; p=reject"},
		"_dmarc.forged.test": {"v=DMARC1; p=quarantine"},
		"forged.test":        {"v=spf1 ip4:192.0.2.1 -all"},
	}}
	b.svc = appemail.NewService(appemail.Deps{
		Store: db.EmailStore(), Committer: db, Inbox: db.InboxStore(), Parser: mailparse.New(mailparse.DefaultLimits),
		Authenticator: mailauth.New(dns, 5*time.Second), ServiceDomain: "mail.acme.test",
	})
	_, err := b.svc.CreateAddress(ctx, b.account, "support.bot", "mail.acme.test")
	require.NoError(t, err)
	_, err = b.svc.CreateAddress(ctx, b.other, "other.bot", "mail.acme.test")
	require.NoError(t, err)
	b.spool = &spoolCounter{Receiver: b.svc}
	cfg.Addr, cfg.Hostname = "127.0.0.1:0", "mx.acme.test"
	b.l, err = listener.Listen(cfg, b.spool, func(context.Context, string) bool { return b.admit.Load() }, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.l.Shutdown(context.Background()) })
	return b
}

// receive runs the receive job of every spooled message.
func (b *bundle) receive(t *testing.T) {
	t.Helper()
	// Every receive job queued, a copy of a message per account.
	var payloads [][]byte
	require.NoError(t, b.db.Bun().NewRaw("SELECT payload FROM jobs WHERE kind = ? ORDER BY id", appemail.ReceiveKind).
		Scan(context.Background(), &payloads))
	require.GreaterOrEqual(t, len(payloads), len(b.spool.spooled()))
	for _, p := range payloads {
		require.NoError(t, b.svc.Receive(context.Background(), jobs.Job{Kind: appemail.ReceiveKind, Payload: p}))
	}
}

// sendReport sends "Your report" from the account's mailbox to to.
func (b *bundle) sendReport(t *testing.T, to, body string) email.Email {
	t.Helper()
	sent, err := b.svc.Send(context.Background(), appemail.SendInput{AccountID: b.account, SenderAddress: "support.bot@mail.acme.test",
		RecipientAddress: to, Subject: "Your report", Body: body})
	require.NoError(t, err)
	return sent
}

func (b *bundle) mailbox(t *testing.T, accountID, address string) []email.Email {
	t.Helper()
	got, _, err := b.svc.MailboxEmails(context.Background(), accountID, address, nil, 100)
	require.NoError(t, err)
	return got
}

func read(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile("../mailparse/testdata/" + name)
	require.NoError(t, err)
	return raw
}

// A mail client delivers to the listener over SMTP; the message is
// stored before 250 and becomes an email of the receiving account with
// its parts, attachments, authentication results and event.
func TestReceivesMailForAccountAddresses(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, listener.Config{})
		err := smtp.SendMail(b.l.Addr().String(), nil, "ann@example.org", []string{"Support.Bot@mail.acme.test"}, read(t, "nested-mixed.eml"))
		require.NoError(t, err)
		require.Len(t, b.spool.spooled(), 1)
		b.receive(t)
		b.receive(t) // a second run of the job writes nothing again

		list := b.mailbox(t, b.account, "support.bot@mail.acme.test")
		require.Len(t, list, 1)
		e, err := b.svc.EmailWithAttachments(context.Background(), b.account, list[0].ID)
		require.NoError(t, err)
		require.Equal(t, email.Inbound, e.Direction)
		require.Equal(t, email.Received, e.Status)
		require.Equal(t, "Reports attached", e.Subject)
		require.Equal(t, "bob@example.net", e.From)
		require.Equal(t, "support.bot@mail.acme.test", e.To)
		require.Equal(t, "See the two files.", strings.TrimSpace(e.Body))
		require.Contains(t, e.HTMLBody, "cid:logo1")
		require.Len(t, e.Attachments, 3)
		require.Equal(t, "report.pdf", e.Attachments[1].Name)
		require.True(t, e.Attachments[1].Stored)
		a, err := b.svc.Attachment(context.Background(), b.account, e.ID, e.Attachments[1].ID)
		require.NoError(t, err)
		require.Equal(t, "PDF-1.4 fake report bytes\n", string(a.Content))
		// SPF passes for the envelope sender example.org from 127.0.0.1;
		// the From domain (example.net) publishes no DMARC.
		require.Equal(t, email.AuthPass, e.Auth.SPF)
		require.Equal(t, email.AuthNone, e.Auth.DKIM)
		require.Equal(t, email.AuthNone, e.Auth.DMARC)
		raw, err := b.svc.Raw(context.Background(), b.account, e.ID)
		require.NoError(t, err)
		require.Equal(t, read(t, "nested-mixed.eml"), raw)

		// Another account sees nothing of it.
		_, err = b.svc.EmailWithAttachments(context.Background(), b.other, e.ID)
		require.Error(t, err)
		_, err = b.svc.Attachment(context.Background(), b.other, e.ID, e.Attachments[1].ID)
		require.Error(t, err)
	})
}

// Mail for an address no account owns is refused with 550 at RCPT, and
// nothing is stored: the listener never relays.
func TestRefusesUnknownAddresses(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, listener.Config{})
	for _, rcpt := range []string{"nobody@mail.acme.test", "someone@gmail.com", "support.bot@mail.acme.test.evil.example"} {
		err := smtp.SendMail(b.l.Addr().String(), nil, "ann@example.org", []string{rcpt}, read(t, "alternative.eml"))
		require.Error(t, err, rcpt)
		require.Contains(t, err.Error(), "550", rcpt)
	}
	require.Empty(t, b.spool.spooled())
}

// A message past the size limit is answered 552 and nothing is stored.
func TestRefusesMessagesPastTheSizeLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, listener.Config{})
	big := append([]byte("From: ann@example.org\r\nSubject: big\r\n\r\n"), []byte(strings.Repeat(strings.Repeat("x", 998)+"\r\n", 60<<20/1000))...)
	err := smtp.SendMail(b.l.Addr().String(), nil, "ann@example.org", []string{"support.bot@mail.acme.test"}, big)
	require.Error(t, err)
	require.Contains(t, err.Error(), "552")
	require.Empty(t, b.spool.spooled())
}

// A sender past its rate is answered 450 at MAIL FROM.
func TestRefusesSendersPastTheirRate(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, listener.Config{})
	b.admit.Store(false)
	err := smtp.SendMail(b.l.Addr().String(), nil, "ann@example.org", []string{"support.bot@mail.acme.test"}, read(t, "alternative.eml"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "450")
	require.Empty(t, b.spool.spooled())
}

// With a certificate the listener offers STARTTLS, and a client that
// starts TLS delivers over it.
func TestStartTLS(t *testing.T) {
	t.Parallel()
	serverTLS, clientTLS := selfSigned(t)
	b := setup(t, store.SQLite, listener.Config{TLS: serverTLS})
	c, err := smtp.Dial(b.l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	ok, _ := c.Extension("STARTTLS")
	require.True(t, ok)
	require.NoError(t, c.StartTLS(clientTLS))
	require.NoError(t, c.Mail("ann@example.org"))
	require.NoError(t, c.Rcpt("support.bot@mail.acme.test"))
	w, err := c.Data()
	require.NoError(t, err)
	_, err = w.Write(read(t, "latin1.eml"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, c.Quit())
	b.receive(t)
	list := b.mailbox(t, b.account, "support.bot@mail.acme.test")
	require.Len(t, list, 1)
	require.Equal(t, "Grüße aus Köln", list[0].Subject)
}

// Debian's swaks, an ordinary SMTP client, delivers to the listener.
func TestSwaksDelivers(t *testing.T) {
	t.Parallel()
	swaks, err := exec.LookPath("swaks")
	if err != nil {
		t.Skip("swaks is not installed (apt-get install swaks)")
	}
	b := setup(t, store.SQLite, listener.Config{})
	host, port, _ := net.SplitHostPort(b.l.Addr().String())
	out, err := exec.Command(swaks, "--server", host, "--port", port, "--from", "ann@example.org", "--to", "support.bot@mail.acme.test",
		"--header", "Subject: Hello from swaks", "--body", "Sent by swaks", "--helo", "client.example.org").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "<-  250")
	out, err = exec.Command(swaks, "--server", host, "--port", port, "--from", "ann@example.org", "--to", "relay@example.com").CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "<** 550")
	b.receive(t)
	list := b.mailbox(t, b.account, "support.bot@mail.acme.test")
	require.Len(t, list, 1)
	require.Equal(t, "Hello from swaks", list[0].Subject)
	require.Equal(t, "Sent by swaks", strings.TrimSpace(list[0].Body))
}

// A forged From whose domain publishes DMARC is stored with the failed
// result, and its event flags it.
func TestForgedFromFailsDMARC(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, listener.Config{})
		msg := "From: CEO <ceo@forged.test>\r\nTo: support.bot@mail.acme.test\r\nSubject: Wire the money\r\nMessage-ID: <forged@forged.test>\r\n\r\nNow.\r\n"
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "ceo@forged.test", []string{"support.bot@mail.acme.test"}, []byte(msg)))
		b.receive(t)
		list := b.mailbox(t, b.account, "support.bot@mail.acme.test")
		require.Len(t, list, 1)
		require.Equal(t, email.AuthFail, list[0].Auth.SPF)
		require.Equal(t, email.AuthFail, list[0].Auth.DMARC)
		require.Equal(t, "quarantine", list[0].Auth.DMARCPolicy)

		evs, err := b.db.WebhookStore().EventsAfter(context.Background(), b.account, "", 10)
		require.NoError(t, err)
		require.Len(t, evs, 1)
		require.Equal(t, event.EmailReceived, evs[0].Type)
		var p map[string]any
		require.NoError(t, json.Unmarshal(evs[0].Payload, &p))
		require.Equal(t, true, p["dmarc_failed"])
		require.Equal(t, list[0].ID, p["email_id"])
		require.Equal(t, "Wire the money", p["subject"])
		require.Equal(t, "ceo@forged.test", p["sender_address"])
		require.Equal(t, "support.bot@mail.acme.test", p["recipient_address"])
		require.Equal(t, msg, p["raw_email_data"])
	})
}

func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mx.acme.test"}, DNSNames: []string{"mx.acme.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		&tls.Config{RootCAs: pool, ServerName: "mx.acme.test", MinVersion: tls.VersionTLS12}
}

// An answer to an email the agent sent, from an ordinary mail client
// with real reply headers, lands in the sent email's thread with its
// reply extracted; the agent's reply to it carries In-Reply-To,
// References and "Re:" and stays in the thread. A reply to another
// account's email is NotFound.
func TestRepliesThread(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, listener.Config{})
		ctx := context.Background()
		sent := b.sendReport(t, "ann@example.org", "Hello Ann, here is your report.")

		answer := "From: Ann <ann@example.org>\r\nTo: support.bot@mail.acme.test\r\nSubject: Re: Your report\r\n" +
			"Message-ID: <answer-1@example.org>\r\nIn-Reply-To: " + sent.MessageID + "\r\nReferences: " + sent.MessageID + "\r\n\r\n" +
			"Thanks!\r\n\r\nOn Tue, Nov 24, 2026 at 9:15 AM <support.bot@mail.acme.test> wrote:\r\n> Hello Ann, here is your report.\r\n"
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "ann@example.org", []string{"support.bot@mail.acme.test"}, []byte(answer)))
		// A message with no linking header and a new subject starts a
		// thread of its own.
		other := "From: Ann <ann@example.org>\r\nTo: support.bot@mail.acme.test\r\nSubject: Another question\r\n\r\nHi\r\n"
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "ann@example.org", []string{"support.bot@mail.acme.test"}, []byte(other)))
		b.receive(t)

		list := b.mailbox(t, b.account, "support.bot@mail.acme.test")
		require.Len(t, list, 3)
		byThread := map[string][]string{}
		for _, e := range list {
			byThread[e.ThreadID] = append(byThread[e.ThreadID], e.Subject)
		}
		require.ElementsMatch(t, []string{"Your report", "Re: Your report"}, byThread[sent.ThreadID])
		require.Len(t, byThread, 2)
		var received email.Email
		for _, e := range list {
			if e.MessageID == "<answer-1@example.org>" {
				received = e
			}
		}
		require.Equal(t, "Thanks!", received.ExtractedText)

		reply, err := b.svc.Reply(ctx, appemail.ReplyInput{AccountID: b.account, EmailID: received.ID, Body: "You are welcome."})
		require.NoError(t, err)
		require.Equal(t, sent.ThreadID, reply.ThreadID)
		require.Equal(t, "Re: Your report", reply.Subject)
		require.Equal(t, "ann@example.org", reply.To)
		require.Equal(t, "<answer-1@example.org>", reply.InReplyTo)
		require.Equal(t, []string{sent.MessageID, "<answer-1@example.org>"}, reply.References)

		_, err = b.svc.Reply(ctx, appemail.ReplyInput{AccountID: b.other, EmailID: received.ID, Body: "mine?"})
		require.Error(t, err)
		require.Contains(t, err.Error(), "not found")
	})
}

// outcomeEvents are the account's events of type typ, oldest first.
func (b *bundle) outcomeEvents(t *testing.T, accountID string, typ event.Type) []appemail.OutcomePayload {
	t.Helper()
	all, err := b.db.WebhookStore().EventsAfter(context.Background(), accountID, "", 100)
	require.NoError(t, err)
	var out []appemail.OutcomePayload
	for _, e := range all {
		if e.Type == typ {
			var p appemail.OutcomePayload
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			out = append(out, p)
		}
	}
	return out
}

// A delivery status notification about an email the agent sent, as a
// receiving server writes one (Postfix's: one recipient failed, one
// delayed, the returned headers), makes that email bounced, with the
// failed recipient and the reason in its email.bounced event, and lands
// in its thread. A report that fails no recipient, or that names no
// email of the receiving account, bounces nothing.
func TestBouncesReachTheSentEmail(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, listener.Config{})
		ctx := context.Background()
		sent := b.sendReport(t, "nobody@example.org", "Hello")
		theirs, err := b.svc.Send(ctx, appemail.SendInput{AccountID: b.other, SenderAddress: "other.bot@mail.acme.test",
			RecipientAddress: "nobody@example.org", Subject: "Theirs", Body: "Hello"})
		require.NoError(t, err)

		dsn := strings.ReplaceAll(string(read(t, "bounce-postfix.eml")), "<eml_0123456789abcdef@mail.acme.test>", sent.MessageID)
		// Bounces come from the null sender.
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "", []string{"support.bot@mail.acme.test"}, []byte(dsn)))
		delayedOnly := strings.Replace(dsn, "Action: failed\r\nStatus: 5.1.1", "Action: delayed\r\nStatus: 4.4.1", 1)
		delayedOnly = strings.Replace(delayedOnly, "<20261124092011.4BXk3Y0wQjz9sT@mx.example.org>", "<delayed@mx.example.org>", 1)
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "", []string{"support.bot@mail.acme.test"}, []byte(delayedOnly)))
		// A report naming another account's email, received by this one.
		foreign := strings.ReplaceAll(string(read(t, "bounce-postfix.eml")), "<eml_0123456789abcdef@mail.acme.test>", theirs.MessageID)
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "", []string{"support.bot@mail.acme.test"}, []byte(foreign)))
		b.receive(t)

		got, err := b.svc.Email(ctx, b.account, sent.ID)
		require.NoError(t, err)
		require.Equal(t, email.Bounced, got.Status)
		require.Equal(t, appemail.BounceCode, got.FailureCode)
		require.Equal(t, "nobody@example.org: 550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown in virtual mailbox table", got.Reply)
		mine, err := b.svc.Email(ctx, b.other, theirs.ID)
		require.NoError(t, err)
		require.Equal(t, email.Queued, mine.Status, "another account's email is not bounced by this account's mail")

		bounced := b.outcomeEvents(t, b.account, event.EmailBounced)
		require.Len(t, bounced, 1, "the delayed-only report bounces nothing")
		p := bounced[0]
		require.Equal(t, sent.ID, p.EmailID)
		require.Equal(t, sent.ThreadID, p.ThreadID)
		require.Equal(t, "bounced", p.Status)
		require.Equal(t, "nobody@example.org", p.Recipient)
		require.Equal(t, "550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown in virtual mailbox table", p.Reason)
		require.Equal(t, "mx.example.org", p.ReportingMTA)
		require.Len(t, p.BouncedRecipients, 1)
		require.Equal(t, "5.1.1", p.BouncedRecipients[0].Status)
		require.Empty(t, b.outcomeEvents(t, b.other, event.EmailBounced))

		var report email.Email
		for _, e := range b.mailbox(t, b.account, "support.bot@mail.acme.test") {
			if e.ID == p.ReportEmailID {
				report = e
			}
		}
		require.Equal(t, sent.ThreadID, report.ThreadID, "the report lands in the sent email's thread")
		require.Equal(t, "Undelivered Mail Returned to Sender", report.Subject)

		// A second report about the bounced email is received into its
		// thread and tells nothing again.
		again := strings.Replace(dsn, "<20261124092011.4BXk3Y0wQjz9sT@mx.example.org>", "<again@mx.example.org>", 1)
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "", []string{"support.bot@mail.acme.test"}, []byte(again)))
		b.receive(t)
		require.Len(t, b.outcomeEvents(t, b.account, event.EmailBounced), 1, "an email bounces once")
		require.Len(t, b.mailbox(t, b.account, "support.bot@mail.acme.test"), 5, "the second report is received")

		// A later delivery attempt leaves the bounced email alone.
		payload, _ := json.Marshal(map[string]string{"email_id": sent.ID})
		require.NoError(t, b.svc.Work(ctx, jobs.Job{Kind: appemail.DeliverKind, Payload: payload, Attempt: 1, MaxAttempts: 3}))
		got, err = b.svc.Email(ctx, b.account, sent.ID)
		require.NoError(t, err)
		require.Equal(t, email.Bounced, got.Status)
	})
}

// A delivery report about an email already failed (the relay refused it,
// and email.failed told so) is received into the email's thread and
// changes nothing: failed is final, and no email.bounced follows.
func TestReportsAboutFailedEmailsChangeNothing(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, listener.Config{})
		ctx := context.Background()
		sent := b.sendReport(t, "nobody@example.org", "Hello")
		failed := sent
		failed.Status, failed.FailureCode, failed.Reply, failed.UpdatedAt = email.Failed, "rejected", "550 5.7.1 relay refused", time.Now()
		require.NoError(t, b.db.Commit(ctx, writes.Batch{EmailOutcomes: []email.Email{failed}}))

		dsn := strings.ReplaceAll(string(read(t, "bounce-postfix.eml")), "<eml_0123456789abcdef@mail.acme.test>", sent.MessageID)
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "", []string{"support.bot@mail.acme.test"}, []byte(dsn)))
		b.receive(t)

		got, err := b.svc.Email(ctx, b.account, sent.ID)
		require.NoError(t, err)
		require.Equal(t, email.Failed, got.Status)
		require.Equal(t, "550 5.7.1 relay refused", got.Reply)
		require.Empty(t, b.outcomeEvents(t, b.account, event.EmailBounced))
		list := b.mailbox(t, b.account, "support.bot@mail.acme.test")
		require.Len(t, list, 2)
		require.Equal(t, email.Inbound, list[0].Direction)
		require.Equal(t, sent.ThreadID, list[0].ThreadID, "the report lands in the failed email's thread")
	})
}

// A message for addresses of two accounts is kept once per account; when
// an account is deleted, its copy of the raw message, its emails (sent
// and received), their attachments and what the sandbox mailbox kept of
// it go with it, and the mailbox's totals drop by its share. The other
// account keeps all of its own.
func TestDeletingAnAccountDeletesItsMail(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect, listener.Config{})
		ctx := context.Background()
		require.NoError(t, smtp.SendMail(b.l.Addr().String(), nil, "ann@example.org",
			[]string{"support.bot@mail.acme.test", "other.bot@mail.acme.test"}, read(t, "nested-mixed.eml")))
		_, err := b.svc.Send(ctx, appemail.SendInput{AccountID: b.other, SenderAddress: "other.bot@mail.acme.test",
			RecipientAddress: "ann@example.org", Subject: "Sent", Body: "Hello"})
		require.NoError(t, err)
		b.receive(t)
		require.Len(t, b.spool.spooled(), 1, "the listener spooled once")
		limits := appemail.MailboxLimits{AccountEmails: 100, AccountBytes: 1 << 20, TotalEmails: 1000, TotalBytes: 1 << 30}
		for _, acc := range []string{b.account, b.other, b.other} {
			require.NoError(t, b.db.MailboxStore().Keep(ctx, appemail.KeptEmail{AccountID: acc, Subject: "kept", Text: "text"}, limits))
		}

		count := func(table, accountID string) int {
			var n int
			require.NoError(t, b.db.Bun().NewRaw("SELECT count(*) FROM "+table+" WHERE account_id = ?", accountID).Scan(ctx, &n))
			return n
		}
		for _, acc := range []string{b.account, b.other} {
			require.Equal(t, 1, count("email_spool", acc), "each account has its copy of the raw message")
			require.Positive(t, count("email_attachments", acc))
		}
		require.Equal(t, 2, count("emails", b.other), "received and sent")
		theirs := b.mailbox(t, b.other, "other.bot@mail.acme.test")
		raw, err := b.svc.Raw(ctx, b.other, theirs[len(theirs)-1].ID)
		require.NoError(t, err)
		require.Equal(t, read(t, "nested-mixed.eml"), raw)
		mine := b.mailbox(t, b.account, "support.bot@mail.acme.test")
		require.Len(t, mine, 1)

		_, err = b.db.Bun().NewRaw("DELETE FROM accounts WHERE id = ?", b.other).Exec(ctx)
		require.NoError(t, err)
		for _, table := range []string{"email_spool", "emails", "email_attachments", "sandbox_emails", "sandbox_mailbox_usage"} {
			require.Zero(t, count(table, b.other), "%s of the deleted account", table)
		}
		var total int
		require.NoError(t, b.db.Bun().NewRaw("SELECT emails FROM sandbox_mailbox_totals").Scan(ctx, &total))
		require.Equal(t, 1, total, "the totals drop by the deleted account's share")
		require.Equal(t, 1, count("email_spool", b.account))
		require.Positive(t, count("email_attachments", b.account))
		raw, err = b.svc.Raw(ctx, b.account, mine[0].ID)
		require.NoError(t, err)
		require.Equal(t, read(t, "nested-mixed.eml"), raw)
	})
}
