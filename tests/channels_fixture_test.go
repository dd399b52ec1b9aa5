package tests

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
)

// channelsFixture is a served binary with an account that has a Telegram
// number (webhook inbound) and a WhatsApp Cloud API number on their fakes,
// a second account, and a webhook receiver for the first.
type channelsFixture struct {
	b            *testBundle
	tg           *telegramfake.Server
	wa           *whatsappfake.Server
	acct, other  createdAccount
	tgNum, waNum numberOut
	hooks        *hookReceiver
	srv          *serverProc
	api          *chAPI
}

// setupChannels starts a channelsFixture on dialect.
func setupChannels(t *testing.T, dialect store.Dialect, name string) channelsFixture {
	t.Helper()
	f := channelsFixture{tg: telegramfake.New(t, chTGToken), wa: whatsappfake.New(t, chWAPNID, chWAToken, chWADisplay)}
	f.b = setup(t, dialect)
	f.acct = f.b.createAccount(t, name)
	f.other = f.b.createAccount(t, "Other")
	f.b.cliJSON(t, &f.tgNum, "numbers", "add", "--account", f.acct.AccountID, "--number", chTGAgent,
		"--service", "telegram", "--provider", "telegram", "--bot-token", chTGToken,
		"--api-base-url", f.tg.URL, "--inbound", "webhook")
	f.b.cliJSON(t, &f.waNum, "numbers", "add", "--account", f.acct.AccountID, "--number", chWAAgent,
		"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", chWAPNID,
		"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", f.wa.URL,
		"--waba-id", whatsappfake.WABAID)
	return f
}

// serve sets the account's webhook to a new receiver and starts the
// server; numbers added after setupChannels and before serve are served.
func (f *channelsFixture) serve(t *testing.T) {
	t.Helper()
	f.hooks = newHookReceiver(t)
	var hook webhookOut
	f.b.cliJSON(t, &hook, "webhook", "set", "--account", f.acct.AccountID, "--url", f.hooks.URL, "--allow-private-urls", "127.0.0.1/32")
	f.hooks.setSecret(t, hook.Secret)
	f.srv = f.b.serve(t, "--allow-private-urls", "127.0.0.1/32", "--public-url", chPublicURL)
	f.api = &chAPI{client: f.srv.client(t), base: f.srv.URL, account: f.acct.AccountID, headers: auth(f.acct.APIKey, f.acct.APISecret)}
}

// waPost posts a signed notification to the WhatsApp number's webhook,
// which must answer 200.
func (f *channelsFixture) waPost(t *testing.T, body []byte) {
	t.Helper()
	r := f.api.client.Do(http.MethodPost, "/v1/providers/whatsapp/"+f.waNum.NumberID+"/webhook", body,
		"X-Hub-Signature-256", whatsappfake.Sign(body, chWASecret))
	require.Equal(t, http.StatusOK, r.StatusCode, "notification: %s", r.Body)
}

// tgPoster waits for the server to set the bot's webhook and returns what
// posts an update to it (remembered by the fake first), which must answer
// 200.
func (f *channelsFixture) tgPoster(t *testing.T) func(update []byte) {
	t.Helper()
	var secret string
	require.Eventually(t, func() bool {
		secret, _ = f.tg.Webhook()["secret_token"].(string)
		return secret != ""
	}, chWait, chTick, "the server sets the bot's webhook")
	route := "/v1/providers/telegram/" + f.tgNum.NumberID + "/webhook"
	return func(update []byte) {
		t.Helper()
		f.tg.Remember(update)
		r := f.api.client.Do(http.MethodPost, route, update, "X-Telegram-Bot-Api-Secret-Token", secret)
		require.Equal(t, http.StatusOK, r.StatusCode, "update: %s", r.Body)
	}
}
