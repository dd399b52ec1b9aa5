package browser

import (
	"net/http"
	"testing"
)

// A message the user edited shows its new text marked "edited"; one they
// deleted shows "This message was deleted" and none of its text.
func TestThreadsShowEditsAndDeletions(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	kept := s.inbound("+14155550126", "Quinn", "meet at 5")
	gone := s.inbound("+14155550126", "Quinn", "my secret code 4242")
	s.mustAPI(http.MethodPost, "/v1/sandbox/{account}/edit", map[string]any{
		"service": "whatsapp", "from": "+14155550126", "to": s.Number, "message_id": kept["message_id"], "text": "meet at 6",
	})
	s.mustAPI(http.MethodPost, "/v1/sandbox/{account}/delete", map[string]any{
		"service": "whatsapp", "from": "+14155550126", "to": s.Number, "message_id": gone["message_id"],
	})
	tb := openFirstThread(t, s)
	tb.waitFor("the edit and the deletion to show", `() => {
		const edited = document.querySelector('#msg-`+kept["message_id"].(string)+`');
		const deleted = document.querySelector('#msg-`+gone["message_id"].(string)+`');
		return edited && deleted &&
			edited.textContent.includes('meet at 6') && edited.querySelector('.edited') !== null &&
			deleted.querySelector('.deleted') !== null && deleted.textContent.includes('This message was deleted') &&
			!deleted.textContent.includes('4242');
	}`)
	tb.requireHealthy()
}
