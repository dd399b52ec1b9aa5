package email

import (
	"net/smtp"
	"net/url"
	"strings"
	"testing"
)

// The relay a Deliver slice delivers to accepts what a client sends and counts it.
func TestSMTPServerAcceptsAndCounts(t *testing.T) {
	t.Parallel()
	s, err := startSMTP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	u, err := url.Parse(s.URL())
	if err != nil || u.Scheme != "smtp" || u.Query().Get("tls") != "none" {
		t.Fatalf("URL %q (%v): want smtp://host:port?tls=none", s.URL(), err)
	}
	for range 2 {
		msg := "Subject: bench\r\n\r\nHello from the bench\r\n"
		if err := smtp.SendMail(u.Host, nil, senderAddress(), []string{"user0@example.org", "copy@example.org"}, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.accepted.Load(); got != 2 {
		t.Errorf("accepted %d messages, want 2", got)
	}
	if got := s.conns.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

// The seeding SQL writes the bench's own sends: the sender on the service domain the
// servers are started with.
func TestSeedUsesTheServersDomain(t *testing.T) {
	t.Parallel()
	if !strings.HasSuffix(senderAddress(), "@"+domain) || Flags()[1] != domain {
		t.Errorf("sender %s, flags %v: want both on %s", senderAddress(), Flags(), domain)
	}
	if got, want := seqIDSQL("i"), "'eml_' || lpad((i)::text, 26, 'a')"; got != want {
		t.Errorf("seqIDSQL = %s, want %s", got, want)
	}
}

// The bench's received message is about the size asked for, a MIME message
// whose Message-ID and To each delivery writes.
func TestBenchMessageSize(t *testing.T) {
	t.Parallel()
	m, err := newBenchMessage(50 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := m.size(); n < 48<<10 || n > 50<<10 {
		t.Errorf("the message is %d bytes, want about 50 KiB", n)
	}
	whole := string(m.with("<a@bench.example>", "bench.inbox@example.org"))
	if !strings.HasPrefix(whole, "Message-ID: <a@bench.example>\r\nTo: bench.inbox@example.org\r\nFrom: ") ||
		!strings.Contains(whole, "Content-Type: multipart/mixed; boundary=") || !strings.HasSuffix(whole, "--\r\n") {
		t.Errorf("not the message: %.300q … %q", whole, whole[len(whole)-40:])
	}
}
