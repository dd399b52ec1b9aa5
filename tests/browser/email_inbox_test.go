package browser

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Email page's inbox and threads: an address's emails, received and
// sent, newest first; an email simulated with the page's form lands in the
// thread of the email it answers (by subject, as it names no Message-ID);
// the thread page shows both, oldest first, with the reply extracted and
// the HTML part as its source, never rendered; the reply form answers in
// the thread.
func TestEmailInboxAndThreads(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	domain := s.mustAPI(http.MethodGet, "/v1/accounts/{account}", nil)["data"].(map[string]any)["service_email_domain"].(string)
	mailbox := "support.bot@" + domain
	s.mustAPI(http.MethodPost, "/v1/emails/{account}/create-email", map[string]any{"address": "support.bot", "domain_name": domain})
	sent := s.mustAPI(http.MethodPost, "/v1/emails/{account}/send", map[string]any{
		"sender_address": `"Acme Support" <` + mailbox + ">", "recipient_address": "Ann Example <ann@example.org>", "subject": "Your report", "body": "Here it is.",
	})
	// An email answering it with HTML that must stay text.
	const html = `<p>Also <img src=x onerror=alert(3)> this</p>`
	s.mustAPI(http.MethodPost, "/v1/sandbox/{account}/inbound-email", map[string]any{
		"from": "Bob <bob@example.net>", "to": mailbox, "subject": "Re: Your report", "in_reply_to": sent["email_id"],
		"text": "Also this.\n\nOn Tue, Acme Support wrote:\n> Here it is.", "html": html,
	})

	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.clickText("Email")
	tb.waitPath("/dashboard/email")
	tb.waitReady()
	tb.waitText(".inbox caption", "Emails of "+mailbox)
	tb.waitFor("two emails in the inbox", `() => document.querySelectorAll('.inbox tbody tr').length === 2`)
	require.Equal(t, "INBOUND", eval[string](tb, `document.querySelector('.inbox tbody tr').dataset.direction`), "newest first")
	require.Contains(t, tb.text(".inbox tbody tr"), "Bob")
	require.Contains(t, tb.text(".inbox tbody tr"), "Also this.")

	// Ann answers through the page's form, with no header linking it.
	tb.fill(`.simulate-email input[name="from"]`, "Ann Example <ann@example.org>")
	tb.fill(`.simulate-email input[name="subject"]`, "Re: Your report")
	tb.fill(`.simulate-email textarea[name="text"]`, "Thanks!\n\nOn Tue, Acme Support wrote:\n> Here it is.")
	tb.clickText("Simulate received email")
	tb.waitText(".simulate-email", "Received")
	tb.waitFor("three emails in the inbox", `() => document.querySelectorAll('.inbox tbody tr').length === 3`)
	threads := eval[[]string](tb, `[...document.querySelectorAll('.inbox tbody tr')].map((tr) => tr.dataset.thread)`)
	require.Equal(t, []string{sent["thread_id"].(string), sent["thread_id"].(string), sent["thread_id"].(string)}, threads, "one thread")

	tb.click(".inbox tbody tr .thread-link")
	tb.waitPath("/dashboard/email/" + sent["thread_id"].(string))
	tb.waitReady()
	tb.waitFor("the thread's three emails", `() => document.querySelectorAll('.email-thread .email').length === 3`)
	require.Equal(t, []string{"OUTBOUND", "INBOUND", "INBOUND"}, eval[[]string](tb, `[...document.querySelectorAll('.email-thread .email')].map((e) => e.dataset.direction)`))
	require.Contains(t, tb.text(".email-thread .email-outbound .from"), "Acme Support")
	require.Equal(t, "Thanks!", eval[string](tb, `[...document.querySelectorAll('.email-thread .email-inbound pre.shown')].pop().textContent`), "the reply without its quoted history")
	require.Equal(t, html, tb.text(".email-thread .html-source"), "the HTML part as its source")
	require.Zero(t, tb.count("#app img, #app script, #app p p"), "no element made of the email")
	require.Contains(t, tb.text(".email-thread .email-inbound .checks"), "simulated")
	require.Contains(t, tb.text(".reply-email"), "to ann@example.org")

	tb.clickText("Send reply")
	tb.waitFor("the empty reply refused at the field", `() => document.querySelector('.reply-email textarea').getAttribute('aria-invalid') === 'true'`)
	tb.fill(`.reply-email textarea[name="body"]`, "You are welcome.")
	tb.clickText("Send reply")
	tb.waitText(".reply-email", "Reply queued")
	tb.waitFor("the reply in the thread", `() => document.querySelectorAll('.email-thread .email').length === 4`)
	require.Contains(t, eval[string](tb, `[...document.querySelectorAll('.email-thread .email')].pop().textContent`), "Re: Your report")
	require.Contains(t, eval[string](tb, `[...document.querySelectorAll('.email-thread .email')].pop().textContent`), "You are welcome.")

	// A thread of no email of the account says so.
	tb.open("/dashboard/email/eth_nosuchthread")
	tb.waitReady()
	tb.waitText("#app", "No such email thread")
	tb.requireHealthy()
}
