package browser

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Threads page as an agent developer uses it beside their code: a
// user writes to the sandbox number and the thread appears live, without
// a reload; the thread shows the message, and a reply goes out, queued
// and then delivered, with its timeline; the next message arrives live in
// the thread. Message text and chat names with HTML and script stay text.
func TestThreadsLiveAndReply(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	tb := newTab(t, s.URL)
	tb.signedIn(s)

	tb.clickText("Threads")
	tb.waitPath("/dashboard/threads")
	tb.waitReady()
	tb.waitText(".thread-list-box", "No conversations yet")
	tb.waitVisible(`.live-indicator[data-status="live"]`)
	tb.do(evalVoid(`window.__sameDocument = true`))

	const user = "+14155550123"
	tb.untilShown(".thread-list", "Hi from Ann", func(i int) {
		s.inbound(user, "Ann", fmt.Sprintf("Hi from Ann (%d)", i))
	})
	require.True(t, eval[bool](tb, `window.__sameDocument === true`), "the thread appeared without a reload")
	require.Contains(t, tb.text(".thread-list li:first-child .name"), "Ann")
	require.Contains(t, tb.text(".thread-list li:first-child .meta"), "WhatsApp")

	tb.click(".thread-list li:first-child a")
	tb.waitReady()
	require.Regexp(t, `^/dashboard/threads/thr_`, tb.path())
	tb.waitText(".messages", "Hi from Ann")
	require.Equal(t, "RECEIVED", eval[string](tb, `document.querySelector('.message.inbound').dataset.status`))
	tb.waitVisible(`.live-indicator[data-status="live"]`)

	tb.fill(`textarea[name="text"]`, "Hello Ann, how can I help?")
	tb.clickText("Send")
	tb.waitText(".message.outbound", "Hello Ann, how can I help?")
	tb.waitFor("the reply to be delivered", `() => {
		const m = document.querySelector('.message.outbound');
		return m && m.dataset.status === 'DELIVERED';
	}`)
	// Its timeline: queued (with its time), then sent, delivered.
	require.Equal(t, 1, tb.count(`.message.outbound [data-step="QUEUED"].done time`))
	require.Equal(t, 1, tb.count(`.message.outbound [data-step="SENT"].done`))
	require.Equal(t, 1, tb.count(`.message.outbound [data-step="DELIVERED"].done time`))
	require.Equal(t, 1, tb.count(`.message.outbound [data-step="READ"].todo`))
	require.Equal(t, "", eval[string](tb, `document.querySelector('textarea[name="text"]').value`), "the box is empty again")

	tb.untilShown(".messages", "Thanks!", func(i int) {
		s.inbound(user, "Ann", fmt.Sprintf("Thanks! (%d)", i))
	})
	require.True(t, eval[bool](tb, `window.__sameDocument === true`), "the message arrived without a reload")

	// A send the sandbox fails: the timeline says why.
	const unreachable = "+15005550001"
	s.inbound(unreachable, "Nobody", "write me back")
	tb.open("/dashboard/threads?phone=" + "%2B15005550001")
	tb.waitReady()
	tb.waitText(".thread-list", "write me back")
	require.Equal(t, 1, tb.count(".thread-list li"), "the filter keeps the one thread")
	tb.click(".thread-list li:first-child a")
	tb.waitReady()
	tb.fill(`textarea[name="text"]`, "Are you there?")
	tb.clickText("Send")
	tb.waitFor("the send to fail", `() => {
		const m = document.querySelector('.message.outbound');
		return m && m.dataset.status === 'FAILED';
	}`)
	tb.waitText(".message.outbound .failure", "recipient_unreachable")
	tb.requireHealthy()
}

// HTML and script in a message's text and a chat's name (the user's name)
// are shown as the characters they are: no alert, no element made of them,
// on the list and in the thread, as they arrive and when read again.
func TestThreadsShowMessagesAsText(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	const (
		name = `<img src=x onerror=alert(1)>`
		text = `<script>alert(2)</script><img src=x onerror=alert(3)> & <b>bold</b>`
	)
	tb := newTab(t, s.URL)
	tb.signedIn(s)
	tb.open("/dashboard/threads")
	tb.waitReady()
	tb.waitVisible(`.live-indicator[data-status="live"]`)
	tb.untilShown(".thread-list", "<script>alert(2)</script>", func(int) {
		s.inbound("+14155550124", name, text)
	})
	requireNoInjectedElements(tb)
	require.Equal(t, name, tb.text(".thread-list li:first-child .name"))

	tb.click(".thread-list li:first-child a")
	tb.waitReady()
	tb.waitText(".messages", text)
	require.Equal(t, name, tb.text("#thread-title"))
	require.Equal(t, text, tb.text(".message.inbound .text"))
	requireNoInjectedElements(tb)

	// Sent by the agent and arriving live: text too.
	tb.fill(`textarea[name="text"]`, text)
	tb.clickText("Send")
	tb.waitFor("the reply to be delivered", `() => {
		const m = document.querySelector('.message.outbound');
		return m && m.dataset.status === 'DELIVERED';
	}`)
	require.Equal(t, text, tb.text(".message.outbound .text"))
	requireNoInjectedElements(tb)
	tb.requireHealthy()
	status, _ := s.api(http.MethodGet, "/v1/messages/threads/{account}/get-all", nil)
	require.Equal(t, http.StatusOK, status)
}

// requireNoInjectedElements fails when the page has an element the
// payloads could have made: an img or a script in the console's content.
func requireNoInjectedElements(tb *tab) {
	tb.t.Helper()
	require.Zero(tb.t, tb.count("#app img, #app script, #app b"), "elements made of message data")
	require.Empty(tb.t, tb.dialogsSeen(), "alerts opened by message data")
}
