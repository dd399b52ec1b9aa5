package browser

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
)

// A WhatsApp Cloud API conversation shows its reply window on its page:
// closed since 24 hours after the user's message of 25 hours ago.
func TestThreadShowsItsReplyWindow(t *testing.T) {
	t.Parallel()
	const pnid, token, secret, agent = "106540352242930", "EAAG-browser", "browser-app-secret-0123456789", "+14155550130"
	wa := whatsappfake.New(t, pnid, token, "+1 415-555-0130")
	var number struct {
		NumberID string `json:"number_id"`
	}
	s := startServer(t, serverOptions{seed: func(t *testing.T, _ string, s *server) {
		s.cliJSON(&number, "numbers", "add", "--account", s.Account.ID, "--number", agent, "--service", "whatsapp", "--provider", "whatsapp-cloud",
			"--phone-number-id", pnid, "--access-token", token, "--app-secret", secret, "--verify-token", "v", "--api-base-url", wa.URL)
	}})
	wrote := time.Now().Add(-25 * time.Hour)
	body := whatsappfake.SentAt(whatsappfake.TextMessage(pnid, "+1 415-555-0130", "14155550131", "Ola", "wamid.browser-window", "Still there?"), wrote)
	req, err := http.NewRequest(http.MethodPost, s.URL+"/v1/providers/whatsapp/"+number.NumberID+"/webhook", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", whatsappfake.Sign(body, secret))
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)

	tb := openFirstThread(t, s)
	tb.waitFor("the closed reply window to show", `() => {
		const w = document.querySelector('.facts dd.window');
		return w && w.textContent.startsWith('Closed since') && w.textContent.includes('only a template') && w.querySelector('time') !== null;
	}`)
	tb.requireHealthy()
}
