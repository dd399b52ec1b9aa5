package browser

import (
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"
)

// Every page of the console, with data on it, fits a 390 px phone and a
// 1280 px laptop without scrolling sideways, labels every field, and
// renders without an exception or a CSP violation.
func TestEveryPageFitsAndIsLabelled(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{accountName: "A rather long account name, to see it wrap in the top bar"})
	answer := s.inbound("+14155550123", "Annabelle Longname-Withaverylongsurname", "A message with a long unbroken word: "+
		"Supercalifragilisticexpialidocious-and-then-some-more-characters-that-never-break-anywhere-at-all")
	thread := answer["thread_id"].(string)
	acc := s.mustAPI(http.MethodGet, "/v1/accounts/{account}", nil)
	domain := acc["data"].(map[string]any)["service_email_domain"].(string)
	s.mustAPI(http.MethodPost, "/v1/emails/{account}/create-email", map[string]any{"address": "support.bot", "domain_name": domain})
	s.mustAPI(http.MethodPost, "/v1/emails/{account}/send", map[string]any{
		"sender_address": "support.bot@" + domain, "recipient_address": "ann@example.org", "subject": "A report",
		"body": "<p>" + "averyveryverylongwordwithoutanyspaceinitatall-" + "averyveryverylongwordwithoutanyspaceinitatall</p>",
	})

	tb := newTab(t, s.URL)
	tb.signedIn(s)
	pages := []string{"/dashboard/", "/dashboard/threads", "/dashboard/threads/" + thread, "/dashboard/webhook", "/dashboard/cron", "/dashboard/email"}
	for _, size := range []struct{ w, h int64 }{{390, 844}, {1280, 900}} {
		tb.viewport(size.w, size.h)
		for _, p := range pages {
			tb.open(p)
			tb.waitReady()
			tb.requireNoHorizontalScroll(p)
			unlabelled := eval[[]string](tb, `[...document.querySelectorAll('input, select, textarea')]
				.filter((el) => el.type !== 'hidden' && el.labels.length === 0 && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
				.map((el) => el.outerHTML.slice(0, 120))`)
			require.Empty(t, unlabelled, "fields without a label on %s", p)
		}
	}
	tb.requireHealthy()
}

// The Overview shows the numbers with their service, provider and state,
// the queue's health and the recent activity.
func TestOverview(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	s.inbound("+14155550123", "Ann", "Hello from the overview test")
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	require.Equal(t, "/dashboard/", tb.path())
	row := "#app table.data tbody tr"
	tb.waitText(row, s.Number)
	require.Contains(t, tb.text(row), "WhatsApp")
	require.Contains(t, tb.text(row), "sandbox")
	require.Contains(t, tb.text(row), "enabled")
	tb.waitText(".queue-health", "due now")
	require.Contains(t, tb.text(".queue-health"), "failed for good")
	tb.waitText(".recent-activity", "Hello from the overview test")
	tb.requireHealthy()
}

// The console works from the keyboard: the first Tab reaches "Skip to
// content" with a visible focus ring, Enter moves to the page, and the
// Threads page's filter is reachable and submits with Enter.
func TestKeyboard(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	s.inbound("+14155550123", "Ann", "Hi")
	s.inbound("+14155550999", "Zed", "Hello")
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/threads")
	tb.waitReady()
	tb.do(chromedp.KeyEvent(kb.Tab))
	require.Equal(t, "Skip to content", eval[string](tb, `document.activeElement.textContent`))
	require.NotEqual(t, "none", eval[string](tb, `getComputedStyle(document.activeElement).outlineStyle`), "a visible focus")
	require.True(t, eval[bool](tb, `(window.renderedView = document.querySelector('#app > .page')) !== null`), "the page has rendered")
	tb.do(chromedp.KeyEvent(kb.Enter))
	tb.waitFor("the main part to have the focus", `() => document.activeElement && document.activeElement.id === 'main'`)
	// The move to #main fires popstate; the page stays as it was (a render
	// would take the focus and the live socket away).
	require.True(t, eval[bool](tb, `document.querySelector('#app > .page') === window.renderedView`), "the skip link rendered the page again")
	// Tab on to the filter field, type a number, Enter.
	for i := 0; i < 10 && eval[string](tb, `document.activeElement.name || ''`) != "phone"; i++ {
		tb.do(chromedp.KeyEvent(kb.Tab))
	}
	require.Equal(t, "phone", eval[string](tb, `document.activeElement.name`), "the filter is reachable by Tab")
	require.NotEqual(t, "none", eval[string](tb, `getComputedStyle(document.activeElement).outlineStyle`))
	tb.do(chromedp.KeyEvent("+14155550999"), chromedp.KeyEvent(kb.Enter))
	tb.waitFor("one thread left", `() => document.querySelectorAll('.thread-list li').length === 1`)
	require.Contains(t, tb.text(".thread-list"), "Zed")
	// The filter is in the address now; the skip link still keeps the page.
	require.True(t, eval[bool](tb, `(window.renderedView = document.querySelector('#app > .page')) !== null`))
	tb.do(chromedp.Focus(".skip-link"), chromedp.KeyEvent(kb.Enter))
	tb.waitFor("the main part to have the focus", `() => document.activeElement && document.activeElement.id === 'main'`)
	require.True(t, eval[bool](tb, `document.querySelector('#app > .page') === window.renderedView`), "the skip link rendered the filtered page again")
	require.Equal(t, "?phone=%2B14155550999", eval[string](tb, `location.search`))
	tb.requireHealthy()
}
