package email_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/domain/email"
)

// The mailbox keeps an attachment as its name, type, size and SHA-256,
// and every other field as it is.
func TestKeptFromDescribesTheAttachment(t *testing.T) {
	t.Parallel()
	data := []byte(strings.Repeat("%PDF-1.4 report ", 1000))
	out := appemail.Outgoing{
		AccountID: "acc_a", MessageID: "<m@x>", From: "a@x.example", To: []email.Mailbox{{Address: "b@y.example"}}, Subject: "Hi", Text: "Hello", HTML: "<p>Hello</p>",
		Attachment: &appemail.Attachment{Name: "r.pdf", ContentType: "application/pdf", Data: data},
	}
	k := appemail.KeptFrom(out, 1<<10)
	sum := sha256.Sum256(data)
	require.Equal(t, &appemail.KeptAttachment{Name: "r.pdf", ContentType: "application/pdf", Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, k.Attachment)
	require.Equal(t, "Hello", k.Text)
	require.Equal(t, "<p>Hello</p>", k.HTML)
	require.Less(t, k.Size(), int64(200), "the attachment's bytes do not count")

	out.Attachment = nil
	require.Nil(t, appemail.KeptFrom(out, 1<<10).Attachment)
}

// A part longer than the cap is cut at a character boundary and says so.
func TestKeptFromTruncatesLongParts(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("ü", 600) // 1,200 bytes of two-byte characters
	k := appemail.KeptFrom(appemail.Outgoing{Text: text, HTML: "<p>short</p>"}, 1001)
	require.True(t, utf8.ValidString(k.Text))
	require.True(t, strings.HasPrefix(k.Text, strings.Repeat("ü", 500)+"\n[…"), "cut at 1,000 bytes, not inside a character")
	require.True(t, strings.HasSuffix(k.Text, "truncated by the sandbox mailbox: 1200 bytes in all]"))
	require.Equal(t, "<p>short</p>", k.HTML)
	require.Equal(t, "abc", appemail.KeptFrom(appemail.Outgoing{Text: "abc"}, 3).Text, "a part at the cap stays whole")
}

func TestMailboxLimitsCheck(t *testing.T) {
	t.Parallel()
	require.NoError(t, appemail.DefaultMailboxLimits.Check())
	for name, change := range map[string]func(*appemail.MailboxLimits){
		"zero":             func(l *appemail.MailboxLimits) { l.TotalEmails = 0 },
		"account above":    func(l *appemail.MailboxLimits) { l.AccountBytes = l.TotalBytes + 1 },
		"body too long":    func(l *appemail.MailboxLimits) { l.BodyBytes = int(l.AccountBytes) },
		"negative bytes":   func(l *appemail.MailboxLimits) { l.AccountBytes = -1 },
		"emails above all": func(l *appemail.MailboxLimits) { l.AccountEmails = l.TotalEmails + 1 },
	} {
		l := appemail.DefaultMailboxLimits
		change(&l)
		require.Error(t, l.Check(), name)
	}
}
