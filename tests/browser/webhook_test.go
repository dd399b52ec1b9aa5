package browser

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// receiver is a local webhook endpoint (127.0.0.1) that checks each
// delivery's Standard Webhooks signature against the secret the test
// read off the page, and answers with markup, to be shown as text.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	// signed and unsigned count the deliveries whose signature the
	// current secret does or does not verify.
	signed, unsigned int
	events           []string
}

// receiverAnswer is every delivery's answer body: it must show in the
// delivery log as these characters, never as markup.
const receiverAnswer = `<script>window.__xss = 1</script><img src="x" onerror="window.__xss = 2"><b>accepted</b>`

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		ok := verifySignature(rc.secret, r.Header, body)
		if ok {
			rc.signed++
		} else {
			rc.unsigned++
		}
		rc.events = append(rc.events, string(body))
		rc.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, receiverAnswer)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) useSecret(secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secret = secret
}

func (rc *receiver) counts() (signed, unsigned int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.signed, rc.unsigned
}

// verifySignature checks webhook-signature ("v1,<base64 HMAC-SHA256 of
// id.timestamp.body>", space-separated during a rotation) with secret.
func verifySignature(secret string, h http.Header, body []byte) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || secret == "" {
		return false
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return true
		}
	}
	return false
}

// The Webhook page as a newcomer uses it: a refused URL shows the API's
// message at the field; a local receiver's URL creates the endpoint and
// shows its signing secret once (with a copy button; not after a
// reload); "Send test" puts a delivery in the log with the receiver's
// status code, signed with that secret, and the receiver's markup as
// text; a rotation shows the new secret once; disable, enable and replay;
// no sideways scrolling at 390 and 1280 px.
func TestWebhookPage(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.0/8"}})
	rc := newReceiver(t)
	tb := newTab(t, s.URL)
	tb.signedIn(s)

	tb.open("/dashboard/webhook")
	tb.waitReady()
	require.Equal(t, 0, tb.count(".secret-value"), "no secret before there is an endpoint")
	tb.waitText(".retention", "kept 30 days")
	require.Greater(t, tb.count(`input[name="events"]`), 3, "the event types to choose from")
	require.Equal(t, 1, tb.count(`label[for="`+eval[string](tb, `document.querySelector('input[name="url"]').id`)+`"]`), "the URL field is labelled")

	// A URL the API refuses: its message, at the field.
	tb.fill(`input[name="url"]`, "ftp://example.com/hooks")
	tb.clickText("Create webhook")
	tb.waitText(".field-error", "url must be a complete https:// URL")
	require.Equal(t, "true", eval[string](tb, `document.querySelector('input[name="url"]').getAttribute('aria-invalid')`))
	require.Equal(t, 0, tb.count(".secret-value"))

	// The local receiver: created, the secret shown once.
	tb.fill(`input[name="url"]`, rc.URL+"/hooks")
	tb.clickText("Create webhook")
	tb.waitVisible(".secret-value")
	secret := eval[string](tb, `document.querySelector('.secret-value').value`)
	require.True(t, strings.HasPrefix(secret, "whsec_"), "secret %q", secret)
	rc.useSecret(secret)
	require.Equal(t, "secret-value", eval[string](tb, `document.activeElement.className`), "the secret has the focus, selected, to copy")
	tb.clickText("Copy")
	tb.waitFor("the copy to be confirmed", `() => document.querySelector('.copy-status').textContent !== ''`)
	tb.waitText(".webhook-status", "enabled")

	tb.open("/dashboard/webhook")
	tb.waitReady()
	require.Equal(t, 0, tb.count(".secret-value"), "the secret is never shown again")
	require.NotContains(t, eval[string](tb, `document.body.innerText`), secret)
	require.Equal(t, rc.URL+"/hooks", eval[string](tb, `document.querySelector('input[name="url"]').value`))

	// Send test: the delivery appears in the log with the receiver's
	// status code, signed with the secret the page showed.
	tb.clickText("Send test")
	tb.waitFor("the test delivery in the log with status code 202", `() =>
		[...document.querySelectorAll('.webhook-log tr.delivery')].some((tr) =>
			tr.querySelector('.event-type').textContent === 'webhook.test' && tr.querySelector('.status-code').textContent === '202')`)
	signed, unsigned := rc.counts()
	require.Equal(t, 1, signed, "the delivery verifies with the secret shown")
	require.Zero(t, unsigned)
	require.Equal(t, "1", tb.text(".webhook-log tr.delivery .attempts"))
	require.Contains(t, tb.text(".webhook-log tr.delivery .latency"), "ms")

	// The receiver's answer is text: its markup shows, nothing runs.
	require.Contains(t, tb.text(".webhook-log .response-excerpt"), "<script>window.__xss = 1</script>")
	require.Equal(t, 0, tb.count("#app script, #app img, #app b"), "no element made from the response")
	require.Equal(t, "undefined", eval[string](tb, `typeof window.__xss`))

	// Rotation: a new secret, shown once; the previous one signs a while.
	tb.clickText("Rotate secret")
	tb.waitFor("a new secret", `(old) => { const el = document.querySelector('.secret-value'); return el && el.value.startsWith('whsec_') && el.value !== old; }`, secret)
	rotated := eval[string](tb, `document.querySelector('.secret-value').value`)
	tb.waitText(".webhook-facts", "signs too until")
	rc.useSecret(rotated)
	tb.clickText("I have stored it — hide")
	tb.waitFor("the secret to go", `() => !document.querySelector('.secret-value')`)
	tb.open("/dashboard/webhook")
	tb.waitReady()
	require.Equal(t, 0, tb.count(".secret-value"), "the rotated secret is not shown again either")

	// Replay: the same delivery again, signed with the new secret.
	tb.clickText("Replay")
	tb.waitFor("the replayed delivery's second attempt", `() => {
		const tr = document.querySelector('.webhook-log tr.delivery');
		return tr && tr.querySelector('.attempts').textContent === '2' && tr.dataset.status === 'succeeded';
	}`)
	signed, unsigned = rc.counts()
	require.Equal(t, 2, signed, "the replay verifies with the rotated secret")
	require.Zero(t, unsigned)
	tb.click("details.attempts-log summary")
	require.Equal(t, 2, tb.count("details.attempts-log[open] ol.attempt-list li"))

	// Disable: no test then; enable again.
	tb.clickText("Disable")
	tb.waitText(".webhook-status", "disabled")
	require.True(t, eval[bool](tb, `document.querySelector('button.send-test').disabled`), "no test to a disabled endpoint")
	tb.clickText("Enable")
	tb.waitText(".webhook-status", "enabled")

	// Events: a choice of types is kept.
	tb.click(`input[name="all_events"]`)
	tb.do(chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('input[name="events"]:checked')]
		.filter((b) => b.value !== 'message.received').forEach((b) => b.click())`))
	tb.clickText("Save")
	tb.waitText(".notice-success", "The webhook is saved.")
	tb.open("/dashboard/webhook")
	tb.waitReady()
	require.False(t, eval[bool](tb, `document.querySelector('input[name="all_events"]').checked`))
	require.Equal(t, []string{"message.received"}, eval[[]string](tb, `[...document.querySelectorAll('input[name="events"]:checked')].map((b) => b.value)`))

	for _, width := range []int64{390, 1280} {
		tb.viewport(width, 900)
		tb.requireNoHorizontalScroll("the Webhook page")
	}
	tb.requireHealthy()
}

// The delivery log is paged, newest first: 21 test deliveries are 20
// and 1.
func TestWebhookLogPaging(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.0/8"}})
	rc := newReceiver(t)
	s.mustAPI(http.MethodPut, "/v1/accounts/{account}/webhook", map[string]any{"url": rc.URL + "/hooks"})
	var first string
	for i := range 21 {
		out := s.mustAPI(http.MethodPost, "/v1/accounts/{account}/webhook/test", nil)
		if i == 0 {
			first = out["data"].(map[string]any)["id"].(string)
		}
	}
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/webhook")
	tb.waitReady()
	require.Equal(t, 20, tb.count(".webhook-log tr.delivery"))
	require.Equal(t, "1–20 of 21", tb.text(".webhook-log .pager-status"))
	tb.clickText("Older")
	tb.waitText(".webhook-log .pager-status", "21–21 of 21")
	require.Equal(t, first, eval[string](tb, `document.querySelector('.webhook-log tr.delivery').dataset.id`), "the oldest last")
	tb.clickText("Newer")
	tb.waitText(".webhook-log .pager-status", "1–20 of 21")
	tb.requireHealthy()
}

// A signing secret of one's own (an A1Base template's API secret), set on
// the Webhook page: too short is refused at the field; accepted, it is
// neither shown nor kept in the form, and the next delivery's
// x-signature (hex HMAC-SHA256 of x-timestamp and the body) verifies
// with it, as the template checks.
func TestWebhookSecretOfYourOwn(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{args: []string{"--allow-private-urls", "127.0.0.0/8"}})
	var (
		mu         sync.Mutex
		signatures []string
	)
	const own = "sws_the-templates-own-api-secret-0123456789"
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(own))
		mac.Write([]byte(r.Header.Get("x-timestamp")))
		mac.Write(body)
		mu.Lock()
		signatures = append(signatures, fmt.Sprint(hex.EncodeToString(mac.Sum(nil)) == r.Header.Get("x-signature")))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.Close)
	s.mustAPI(http.MethodPut, "/v1/accounts/{account}/webhook", map[string]any{"url": rc.URL + "/hooks"})
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/webhook")
	tb.waitReady()
	require.Equal(t, "password", eval[string](tb, `document.querySelector('input[name="secret"]').type`))

	tb.fill(`input[name="secret"]`, "too-short")
	tb.clickText("Save")
	tb.waitText(".field-error", "secret must be at least 24 characters")
	require.Equal(t, "true", eval[string](tb, `document.querySelector('input[name="secret"]').getAttribute('aria-invalid')`))

	tb.fill(`input[name="secret"]`, own)
	tb.clickText("Save")
	tb.waitText(".notice-success", "The webhook is saved.")
	require.Equal(t, 0, tb.count(".secret-value"), "a chosen secret is not shown")
	require.Equal(t, "", eval[string](tb, `document.querySelector('input[name="secret"]').value`), "nor kept in the form")
	tb.waitText(".webhook-facts", "signs too until")

	tb.clickText("Send test")
	tb.waitFor("the test delivery in the log", `() => !!document.querySelector('.webhook-log tr.delivery')`)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"true"}, signatures, "x-signature is keyed with the secret chosen")
	tb.requireHealthy()
}

// The Webhook page says how long deliveries and messages are kept: the
// history retention, and the account's message retention when one is
// set; a message retention shorter than the history's takes the
// deliveries with it.
func TestWebhookPageShowsTheRetentions(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	tb := newTab(t, s.URL)
	tb.signedIn(s)

	tb.open("/dashboard/webhook")
	tb.waitReady()
	tb.waitText(".retention", "kept 30 days")
	tb.waitText(".message-retention", "no message retention")

	s.mustAPI(http.MethodPatch, "/v1/accounts/{account}", map[string]any{"message_retention_days": 90})
	tb.open("/dashboard/webhook")
	tb.waitReady()
	tb.waitText(".retention", "kept 30 days")
	tb.waitText(".message-retention", "Messages are kept 90 days (the account's message retention).")

	s.mustAPI(http.MethodPatch, "/v1/accounts/{account}", map[string]any{"message_retention_days": 1})
	tb.open("/dashboard/webhook")
	tb.waitReady()
	tb.waitText(".retention", "kept 1 day")
	tb.waitText(".lead", "the account's message retention, shorter than its history retention of 30 days")
	tb.waitText(".message-retention", "Messages are kept 1 day")
	tb.requireHealthy()
}
