package browser

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// A thread shows the reply buttons the agent offered under its message,
// and the user's press as a button reply quoting that message.
func TestThreadsShowButtonsAndPresses(t *testing.T) {
	t.Parallel()
	s := startServer(t, serverOptions{})
	s.inbound("+14155550126", "Ravi", "When can you deliver?")
	sent := s.mustAPI(http.MethodPost, "/v1/messages/individual/{account}/send", map[string]any{
		"service": "whatsapp", "from": s.Number, "to": "+14155550126", "content": "Tomorrow morning?",
		"buttons": []any{map[string]any{"id": "slot-am", "title": "Yes, morning"}, map[string]any{"id": "slot-pm", "title": "Afternoon"}},
	})
	offer, _ := sent["message_id"].(string)
	require.NotEmpty(t, offer)
	s.mustAPI(http.MethodPost, "/v1/sandbox/{account}/button-press", map[string]any{
		"service": "whatsapp", "from": "+14155550126", "to": s.Number, "message_id": offer, "button_id": "slot-pm",
	})
	tb := openFirstThread(t, s)
	tb.waitFor("the buttons and the press", `(offer) => {
		const buttons = [...document.querySelectorAll('.messages [data-id="' + offer + '"] ul.buttons li')].map((li) => li.textContent);
		const press = document.querySelector('.messages .button-reply .pressed');
		const quote = press && press.closest('.message').querySelector('.quote');
		return buttons.join('|') === 'Yes, morning|Afternoon' && press.textContent === 'Afternoon' &&
			quote && quote.textContent === 'Tomorrow morning?';
	}`, offer)
	tb.requireHealthy()
}
