package browser

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/email/smtptest"
)

// attachment is the file the test's email attaches.
const attachment = "%PDF-1.4\nreport\n"

// The Email page: create an address (the API's validation message at the
// field first), send an email from it, see it sent in the list and read
// it in the sandbox mailbox, HTML and all as text; an attachment shows as
// its name, type, size and SHA-256.
func TestEmailPageAndSandboxMailbox(t *testing.T) {
	t.Parallel()
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte(attachment))
	}))
	t.Cleanup(files.Close)
	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.0/8"}})
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

	domain := s.mustAPI(http.MethodGet, "/v1/accounts/{account}", nil)["data"].(map[string]any)["service_email_domain"].(string)
	id := s.mustAPI(http.MethodPost, "/v1/emails/{account}/send", map[string]any{
		"sender_address": "support.bot@" + domain, "recipient_address": "ann@example.org",
		"subject": "With a file", "body": "See the file.", "attachment_uri": files.URL + "/report.pdf",
	})["email_id"].(string)
	require.Eventually(t, func() bool {
		return s.mustAPI(http.MethodGet, "/v1/emails/{account}/messages/"+id, nil)["data"].(map[string]any)["status"] == "sent"
	}, 30*time.Second, 100*time.Millisecond, "the email with the file is sent")
	// The mailbox's Refresh is the page's last.
	tb.do(chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('button')].filter((b) => b.textContent.trim() === 'Refresh').pop().click()`))
	tb.waitText(".mailbox .kept-email .subject", "With a file")
	sum := sha256.Sum256([]byte(attachment))
	require.Equal(t, hex.EncodeToString(sum[:]), tb.text(".mailbox .kept-email .attachment .sha256"))
	require.Contains(t, tb.text(".mailbox .kept-email .attachment"), "report.pdf (application/pdf, 16 bytes)")
	tb.requireHealthy()
}

// An email sent from the page shows as sent once a slow relay has taken
// it, without a reload: the page follows the queued email until its
// status is final. The relay (a real SMTP server) answers each message's
// data after two seconds, so the email is still queued at the page's
// first looks.
func TestEmailPageFollowsASlowRelay(t *testing.T) {
	t.Parallel()
	relay, err := smtptest.Start(smtptest.Options{OnData: func(smtptest.Message) error {
		time.Sleep(2 * time.Second)
		return nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = relay.Close() })
	s := startServer(t, serverOptions{args: []string{"--smtp-url", relay.URL()}})
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/email")
	tb.waitReady()
	tb.fill(`input[name="address"]`, "slow.relay")
	tb.clickText("Create address")
	tb.waitText("table", "slow.relay@")
	tb.fill(`input[name="recipient_address"]`, "ann@example.org")
	tb.fill(`input[name="subject"]`, "Through a slow relay")
	tb.fill(`textarea[name="body"]`, "Hello Ann")
	tb.clickText("Send email")
	tb.waitText(".send-email", "Queued")
	tb.waitFor("the email to show as sent", `() => !!document.querySelector('.sent-emails tr[data-status="SENT"]')`)
	require.Len(t, relay.Messages(), 1, "the relay took the email once")
	tb.requireHealthy()
}
