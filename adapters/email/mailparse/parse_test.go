package mailparse_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/mailparse"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

func parseFile(t *testing.T, name string) appemail.Parsed {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return mailparse.New(mailparse.DefaultLimits).Parse(raw)
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestCorpus(t *testing.T) {
	t.Parallel()
	t.Run("multipart/alternative with quoted-printable UTF-8", func(t *testing.T) {
		p := parseFile(t, "alternative.eml")
		require.Empty(t, p.Problem)
		require.Equal(t, "Order 1234", p.Subject)
		require.Equal(t, "ann@example.org", p.From)
		require.Equal(t, "Ann Example", p.FromName)
		require.Equal(t, []email.Mailbox{{Address: "support.bot@mail.acme.test"}}, p.To)
		require.Equal(t, "<alt-1@example.org>", p.MessageID)
		require.Equal(t, "Hello, where is my order? Café au lait ☕", strings.TrimSpace(p.Text))
		require.Equal(t, "<p>Hello, where is my <b>order</b>?</p>", strings.TrimSpace(p.HTML))
		require.Empty(t, p.Attachments)
		require.Equal(t, 2026, p.Date.Year())
	})
	t.Run("nested multipart/mixed with base64 attachments and an inline image", func(t *testing.T) {
		p := parseFile(t, "nested-mixed.eml")
		require.Empty(t, p.Problem)
		require.Equal(t, "See the two files.", strings.TrimSpace(p.Text))
		require.Contains(t, p.HTML, `cid:logo1`)
		require.Len(t, p.Attachments, 3)
		logo, pdf, txt := p.Attachments[0], p.Attachments[1], p.Attachments[2]
		require.Equal(t, "image/png", logo.ContentType)
		require.Equal(t, "logo1", logo.ContentID)
		require.True(t, logo.Inline)
		require.Equal(t, "report.pdf", pdf.Name)
		require.Equal(t, "application/pdf", pdf.ContentType)
		require.Equal(t, "PDF-1.4 fake report bytes\n", string(pdf.Content))
		require.Equal(t, int64(len("PDF-1.4 fake report bytes\n")), pdf.Size)
		require.Equal(t, digest("PDF-1.4 fake report bytes\n"), pdf.SHA256)
		// An archive named .txt is kept as it came, never unpacked.
		require.Equal(t, "résumé.txt", txt.Name)
		require.Equal(t, "PK\x03\x04 this is not really a zip", string(txt.Content))
	})
	t.Run("ISO-8859-1 encoded words and body", func(t *testing.T) {
		p := parseFile(t, "latin1.eml")
		require.Equal(t, "Grüße aus Köln", p.Subject)
		require.Equal(t, "Jörg Müller", p.FromName)
		require.Equal(t, "Schöne Grüße", strings.TrimSpace(p.Text))
	})
	t.Run("UTF-8 base64 words and body", func(t *testing.T) {
		p := parseFile(t, "utf8-base64.eml")
		require.Equal(t, "こんにちは", p.Subject)
		require.Equal(t, "山田", p.FromName)
		require.Equal(t, "こんにちは世界", strings.TrimSpace(p.Text))
	})
	t.Run("a Gmail reply with quoted history", func(t *testing.T) {
		p := parseFile(t, "gmail-reply.eml")
		require.Equal(t, "<eml_sent@mail.acme.test>", p.InReplyTo)
		require.Equal(t, []string{"<eml_sent@mail.acme.test>"}, p.References)
		require.Equal(t, "Thanks, that works for me.\n\nAnn", email.ExtractReply(p.Text))
	})
	t.Run("an Outlook reply with quoted history", func(t *testing.T) {
		p := parseFile(t, "outlook-reply.eml")
		require.Equal(t, "<eml_sent@mail.acme.test>", p.InReplyTo)
		require.Equal(t, "Please send it again as a PDF.", email.ExtractReply(p.Text))
	})
	t.Run("a bounce (delivery status notification)", func(t *testing.T) {
		p := parseFile(t, "bounce-dsn.eml")
		require.Empty(t, p.Problem)
		require.Contains(t, p.Text, "could not be delivered to nobody@example.org")
		require.Len(t, p.Attachments, 2)
		require.Equal(t, "message/delivery-status", p.Attachments[0].ContentType)
		require.Contains(t, string(p.Attachments[0].Content), "Status: 5.1.1")
		require.Equal(t, "text/rfc822-headers", p.Attachments[1].ContentType)
		require.Equal(t, &email.DeliveryReport{ReportingMTA: "mx.example.org", Recipients: []email.ReportedRecipient{
			{Address: "nobody@example.org", Action: "failed", Status: "5.1.1", DiagnosticCode: "550 5.1.1 User unknown"},
		}}, p.Report, "the returned headers carry no Message-ID")
	})
	t.Run("a Postfix bounce: one recipient failed, one delayed, the returned headers", func(t *testing.T) {
		p := parseFile(t, "bounce-postfix.eml")
		require.Empty(t, p.Problem)
		require.NotNil(t, p.Report)
		require.Equal(t, "mx.example.org", p.Report.ReportingMTA)
		require.Equal(t, "<eml_0123456789abcdef@mail.acme.test>", p.Report.OriginalMessageID)
		require.Len(t, p.Report.Recipients, 2)
		failed := p.Report.FailedRecipients()
		require.Len(t, failed, 1)
		require.Equal(t, "nobody@example.org", failed[0].Address)
		require.Equal(t, "Nobody@example.org", failed[0].OriginalAddress)
		require.Equal(t, "5.1.1", failed[0].Status)
		require.Equal(t, "550 5.1.1 <nobody@example.org>: Recipient address rejected: User unknown in virtual mailbox table", failed[0].Reason())
		require.Equal(t, email.ActionDelayed, p.Report.Recipients[1].Action)
		require.False(t, p.Report.Recipients[1].Failed())
	})
	t.Run("an ordinary message is no report", func(t *testing.T) {
		require.Nil(t, parseFile(t, "nested-mixed.eml").Report)
	})
	t.Run("a multipart body without its boundary", func(t *testing.T) {
		p := parseFile(t, "missing-boundary.eml")
		require.Equal(t, "No boundary", p.Subject)
		require.NotEmpty(t, p.Problem)
	})
}

// Hostile shapes are read as far as the limits allow and say why they
// stopped; none makes the parser fail.
func TestBadInput(t *testing.T) {
	t.Parallel()
	parser := mailparse.New(mailparse.DefaultLimits)
	t.Run("a header of 1 MB", func(t *testing.T) {
		raw := "From: a@example.org\r\nSubject: big\r\nX-Big: " + strings.Repeat("a", 1<<20) + "\r\n\r\nbody\r\n"
		p := parser.Parse([]byte(raw))
		require.Contains(t, p.Problem, "header")
		require.Empty(t, p.Text)
	})
	t.Run("10,000 parts", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("From: a@example.org\r\nSubject: many\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n")
		for i := range 10000 {
			fmt.Fprintf(&b, "--x\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=f%d.bin\r\n\r\n%d\r\n", i, i)
		}
		b.WriteString("--x--\r\n")
		p := parser.Parse([]byte(b.String()))
		require.Equal(t, "many", p.Subject)
		require.Contains(t, p.Problem, "more than 1000 parts")
		require.Len(t, p.Attachments, mailparse.DefaultLimits.MaxParts-1)
	})
	t.Run("parts nested 100 deep", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("From: a@example.org\r\nSubject: deep\r\nContent-Type: multipart/mixed; boundary=b0\r\n\r\n")
		for i := range 100 {
			fmt.Fprintf(&b, "--b%d\r\nContent-Type: multipart/mixed; boundary=b%d\r\n\r\n", i, i+1)
		}
		b.WriteString("--b100\r\nContent-Type: text/plain\r\n\r\ndeep text\r\n")
		p := parser.Parse([]byte(b.String()))
		require.Contains(t, p.Problem, "nested deeper")
		require.Empty(t, p.Text)
	})
	t.Run("broken base64 and an unknown charset", func(t *testing.T) {
		raw := "From: a@example.org\r\nSubject: broken\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n" +
			"--x\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n\r\nhello\r\n" +
			"--x\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename=a.pdf\r\n\r\n!!!not base64!!!\r\n--x--\r\n"
		p := parser.Parse([]byte(raw))
		require.NotEmpty(t, p.Problem)
		require.Equal(t, "broken", p.Subject)
	})
	t.Run("a multipart without its boundary", func(t *testing.T) {
		raw := "From: a@example.org\r\nSubject: no boundary\r\nContent-Type: multipart/mixed\r\n\r\n" +
			"--x\r\nContent-Type: text/plain\r\n\r\nhello\r\n--x--\r\n"
		p := parser.Parse([]byte(raw))
		require.Equal(t, "no boundary", p.Subject, "the header is kept")
		require.Equal(t, "a@example.org", p.From)
		require.NotEmpty(t, p.Problem)
	})
	t.Run("a boundary never closed and a part without a header end", func(t *testing.T) {
		raw := "From: a@example.org\r\nSubject: unclosed\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n" +
			"--x\r\nContent-Type: text/plain\r\n\r\nfirst part\r\n--x\r\nContent-Type: text/plain\r\nX-Broken"
		p := parser.Parse([]byte(raw))
		require.Equal(t, "unclosed", p.Subject)
		require.Equal(t, "first part", strings.TrimSpace(p.Text), "kept as far as read")
	})
	t.Run("a zip bomb named .txt", func(t *testing.T) {
		// 64 MiB of zeros packed into a few hundred KiB: kept as the
		// bytes that came, never unpacked, so memory follows the message.
		var packed bytes.Buffer
		zw := zip.NewWriter(&packed)
		w, err := zw.Create("zeros.bin")
		require.NoError(t, err)
		zeros := make([]byte, 1<<20)
		for range 64 {
			_, err = w.Write(zeros)
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		raw := "From: a@example.org\r\nSubject: bomb\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n" +
			"--x\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n" +
			"--x\r\nContent-Type: text/plain; name=notes.txt\r\nContent-Disposition: attachment; filename=notes.txt\r\n" +
			"Content-Transfer-Encoding: base64\r\n\r\n" + base64.StdEncoding.EncodeToString(packed.Bytes()) + "\r\n--x--\r\n"
		p := parser.Parse([]byte(raw))
		require.Empty(t, p.Problem)
		require.Len(t, p.Attachments, 1)
		a := p.Attachments[0]
		require.Equal(t, "notes.txt", a.Name)
		require.Equal(t, int64(packed.Len()), a.Size, "the archive as it came")
		require.Equal(t, packed.Bytes(), a.Content)
		require.Less(t, a.Size, int64(len(raw)))
	})
	t.Run("not a message at all", func(t *testing.T) {
		p := parser.Parse([]byte("\x00\x01\x02 garbage without a header end"))
		require.NotEmpty(t, p.Problem)
	})
}

// FuzzParse holds Parse to its contract on any input: no panic, valid
// UTF-8 in every text it returns, and decoded bytes within twice the
// input.
func FuzzParse(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	require.NoError(f, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".eml") {
			raw, err := os.ReadFile(filepath.Join("testdata", e.Name()))
			require.NoError(f, err)
			f.Add(raw)
		}
	}
	parser := mailparse.New(mailparse.DefaultLimits)
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := parser.Parse(raw)
		var decoded int64
		for _, s := range []string{p.Subject, p.From, p.FromName, p.Text, p.HTML, p.Problem} {
			if !utf8Valid(s) {
				t.Fatalf("invalid UTF-8 in %q", s)
			}
		}
		decoded += int64(len(p.Text) + len(p.HTML))
		for _, a := range p.Attachments {
			decoded += a.Size
		}
		if decoded > 2*int64(len(raw))+4096 {
			t.Fatalf("decoded %d bytes of a %d-byte message", decoded, len(raw))
		}
	})
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "") == s }
