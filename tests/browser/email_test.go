package browser

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The Email page: create an address (the API's validation message at the
// field first), send an email from it, see it sent in the list and read
// it in the sandbox mailbox, HTML and all as text.
func TestEmailPageAndSandboxMailbox(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.clickText("Email")
	tb.waitPath("/dashboard/email")
	tb.waitReady()
	tb.waitText(".mailbox", "The mailbox is empty")
	tb.waitText(".sent-emails", "No emails sent yet")

	tb.fill(`input[name="address"]`, "ab")
	tb.clickText("Create address")
	tb.waitFor("the refusal at the field", `() => document.querySelector('input[name="address"]').getAttribute('aria-invalid') === 'true'`)
	require.Contains(t, tb.text(".create-address .field-error"), "at least 5 characters")

	tb.fill(`input[name="address"]`, "support.bot")
	tb.clickText("Create address")
	tb.waitText("table", "support.bot@")

	const (
		subject = `Your report <script>alert(1)</script>`
		body    = `<p>Hello <img src=x onerror=alert(2)> Ann</p>`
	)
	tb.fill(`input[name="recipient_address"]`, "ann@example.org")
	tb.fill(`input[name="subject"]`, subject)
	tb.fill(`textarea[name="body"]`, body)
	tb.clickText("Send email")
	tb.waitText(".send-email", "Queued")
	tb.waitFor("the email to be sent", `() => !!document.querySelector('.sent-emails tr[data-status="SENT"]')`)
	tb.waitText(".mailbox .kept-email .subject", subject)
	require.Equal(t, subject, tb.text(".mailbox .kept-email .subject"))
	require.Equal(t, body, tb.text(".mailbox .kept-email .html-source"), "the HTML part as its source")
	require.Contains(t, tb.text(".mailbox .kept-email pre.body"), "Hello")
	require.Contains(t, tb.text(".mailbox .kept-email"), "ann@example.org")
	require.Zero(t, tb.count("#app img, #app script, #app p p"), "no element made of the email")
	require.Contains(t, tb.text(".sent-emails"), "sandbox mailbox", "the relay's reply")
	tb.requireHealthy()
}
