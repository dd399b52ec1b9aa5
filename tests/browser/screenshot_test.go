package browser

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// readmeScreenshot is the picture of the Threads page that the README's
// tour and docs/dashboard.md show, written when
// SWITCHBOARD_UPDATE_SCREENSHOT=1:
//
//	SWITCHBOARD_UPDATE_SCREENSHOT=1 go test ./tests/browser -run TestREADMEScreenshot
const readmeScreenshot = "../../docs/dashboard-threads.png"

// The README's screenshot of a thread at 1280 px: a conversation with a
// user, a reply delivered, its timeline. Always taken (so the page it
// shows works); written to docs/ only on request.
func TestREADMEScreenshot(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{accountName: "Acme Support"})
	answer := s.inbound("+14155550123", "Ann Lee", "Hi! Is my order #1042 on its way?")
	tb := newTab(t, s.URL)
	tb.viewport(1280, 860)
	tb.signedIn(s)
	tb.open("/dashboard/threads/" + answer["thread_id"].(string))
	tb.waitReady()
	tb.waitVisible(`.live-indicator[data-status="live"]`)
	tb.fill(`textarea[name="text"]`, "Yes! It left our warehouse this morning and arrives tomorrow.")
	tb.clickText("Send")
	tb.waitFor("the reply to be delivered", `() => {
		const m = document.querySelector('.message.outbound');
		return m && m.dataset.status === 'DELIVERED';
	}`)
	tb.untilShown(".messages", "Great, thank you!", func(int) {
		s.inbound("+14155550123", "Ann Lee", "Great, thank you!")
	})
	tb.do(evalVoid(`document.activeElement.blur(); window.scrollTo(0, 0)`))
	ctx, cancel := context.WithTimeout(tb.ctx, waitTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	require.Greater(t, len(png), 10_000)
	if os.Getenv("SWITCHBOARD_UPDATE_SCREENSHOT") == "1" {
		require.NoError(t, os.MkdirAll(filepath.Dir(readmeScreenshot), 0o755))
		require.NoError(t, os.WriteFile(readmeScreenshot, png, 0o644))
		t.Logf("wrote %s", readmeScreenshot)
	}
	tb.requireHealthy()
}
