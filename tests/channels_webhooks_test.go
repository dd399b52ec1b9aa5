package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The agent numbers and provider credentials of the channels test.
const (
	chTGAgent   = "+14155550121"
	chTGToken   = "111222333:e2e-bot-token"
	chWAAgent   = "+14155550120"
	chWADisplay = "+1 415-555-0120"
	chWAPNID    = "106540352242922"
	chWAToken   = "EAAG-e2e-access-token"
	chWASecret  = "e2e-app-secret-0123456789abcdef"
	chWAVerify  = "e2e-verify-token"
	// chPublicURL is the server's public URL as Telegram would reach it.
	// Nothing connects to it: the server only tells the fake Bot API about
	// it (setWebhook), and the test posts updates to the local address.
	chPublicURL = "https://switchboard.example.test"
	// chWait bounds every wait for background work (deliveries to the
	// provider and to the customer's webhook) on a loaded machine.
	chWait = 60 * time.Second
	chTick = 50 * time.Millisecond
)

// Real channels and customer webhooks through the built binary: a Telegram
// bot and a WhatsApp Cloud API number (both on fake provider servers)
// receive messages on the provider routes, the agent replies through the
// API, the providers get the replies, and the account's webhook receiver
// gets every step as a verified Standard Webhooks delivery.
func TestChannelsAndWebhooksEndToEnd(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		tg := telegramfake.New(t, chTGToken)
		wa := whatsappfake.New(t, chWAPNID, chWAToken, chWADisplay)
		hooks := newHookReceiver(t)

		b := setup(t, dialect)
		acct := b.createAccount(t, "Channels")

		var tgNum, waNum numberOut
		b.cliJSON(t, &tgNum, "numbers", "add", "--account", acct.AccountID, "--number", chTGAgent,
			"--service", "telegram", "--provider", "telegram", "--bot-token", chTGToken,
			"--api-base-url", tg.URL, "--inbound", "webhook")
		require.Equal(t, numberOut{NumberID: tgNum.NumberID, AccountID: acct.AccountID, Number: chTGAgent, Service: "telegram",
			Provider: "telegram", Enabled: true, CreatedAt: tgNum.CreatedAt}, tgNum)
		b.cliJSON(t, &waNum, "numbers", "add", "--account", acct.AccountID, "--number", chWAAgent,
			"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", chWAPNID,
			"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", wa.URL)
		require.Equal(t, numberOut{NumberID: waNum.NumberID, AccountID: acct.AccountID, Number: chWAAgent, Service: "whatsapp",
			Provider: "whatsapp-cloud", Enabled: true, CreatedAt: waNum.CreatedAt}, waNum)

		var hook webhookOut
		b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", hooks.URL, "--allow-private-urls", "127.0.0.1/32")
		require.True(t, strings.HasPrefix(hook.Secret, "whsec_"), "the first set prints the signing secret: %q", hook.Secret)
		// Without --events the list is empty: every event type is delivered.
		require.Equal(t, webhookOut{AccountID: acct.AccountID, URL: hooks.URL, Enabled: true, Events: []string{}, Secret: hook.Secret}, hook)
		hooks.setSecret(t, hook.Secret)

		srv := b.serve(t, "--allow-private-urls", "127.0.0.1/32", "--public-url", chPublicURL)
		api := &chAPI{client: srv.client(t), base: srv.URL, account: acct.AccountID, headers: auth(acct.APIKey, acct.APISecret)}

		telegramRoundTrip(t, api, tg, hooks, tgNum.NumberID)
		whatsappRoundTrip(t, api, wa, hooks, waNum.NumberID)

		require.Empty(t, hooks.rejections(), "every webhook delivery verifies with the signing secret")
		// Per channel: received, sent and the status moves of the reply
		// (Telegram: sent; WhatsApp: sent, delivered, read), the
		// unsupported message of each received, and nothing for the
		// refused updates.
		all := hooks.all()
		require.Len(t, all, 4+6, "the events: %v", all)
		for _, ev := range all {
			require.Equal(t, acct.AccountID, ev["a1_account_id"], "every event is the account's: %v", ev)
		}
		srv.stop(t)
	})
}

// telegramRoundTrip: the server sets the bot's webhook with its secret
// token; an update posted with that token reaches a thread and the
// customer's webhook; the reply to the user's @username reaches the Bot API
// and its sent and status events reach the webhook.
func telegramRoundTrip(t *testing.T, api *chAPI, tg *telegramfake.Server, hooks *hookReceiver, numberID string) {
	t.Helper()
	route := "/v1/providers/telegram/" + numberID + "/webhook"
	var secret string
	require.Eventually(t, func() bool {
		wh := tg.Webhook()
		if wh == nil || wh["url"] != chPublicURL+route {
			return false
		}
		secret, _ = wh["secret_token"].(string)
		return secret != ""
	}, chWait, chTick, "the server sets the bot's webhook under its public URL, with a secret token")
	require.Len(t, secret, 64, "the derived secret token: %q", secret)

	// A wrong secret token is refused and stores nothing.
	forged := telegramfake.PrivateText(7000, 10, 777000111, "Alice_W", "Alice", "forged update")
	r := api.client.Do(http.MethodPost, route, forged, "X-Telegram-Bot-Api-Secret-Token", secret[:63]+"x")
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, "forged update: %s", r.Body)

	const hello = "hello from telegram"
	update := telegramfake.PrivateText(7001, 11, 777000111, "Alice_W", "Alice", hello)
	r = api.client.Do(http.MethodPost, route, update, "X-Telegram-Bot-Api-Secret-Token", secret)
	require.Equal(t, http.StatusOK, r.StatusCode, "update: %s", r.Body)
	require.Equal(t, "ok", r.JSON(t)["status"])

	thread := api.thread(t, "individual", "Alice")
	require.Equal(t, "telegram", thread["service"])
	threadID := thread["thread_id"].(string)
	recent := api.recent(t, threadID)
	require.Len(t, recent, 1, "the forged update stored nothing: %v", recent)
	in := recent[0]
	require.Equal(t, hello, in["content"])
	require.Equal(t, "777000111", in["from"])
	require.Equal(t, chTGAgent, in["to"])
	inID := in["message_id"].(string)

	received := hooks.waitOne(t, "message.received", inID)
	requireEventFields(t, received, map[string]any{
		"event": "message.received", "thread_id": threadID, "message_id": inID, "thread_type": "individual",
		"sender_number": "777000111", "sender_name": "Alice", "a1_account_id": api.account, "a1_phone_number": chTGAgent,
		"service": "telegram", "message_type": "text", "is_from_agent": false, "agent_mentioned": true,
		"message_content": map[string]any{"text": hello}, "content": hello,
	})

	// The reply names the user by @username (case-insensitively).
	const answer = "hi Alice, the agent here"
	r = api.post(t, "/v1/messages/individual/"+api.account+"/send",
		map[string]any{"service": "telegram", "from": chTGAgent, "to": "@alice_w", "content": answer})
	require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
	sent := r.JSON(t)
	require.Equal(t, threadID, sent["thread_id"], "the @username names the same conversation")
	replyID := sent["message_id"].(string)

	require.Eventually(t, func() bool { return len(tg.Calls("sendMessage")) > 0 }, chWait, chTick, "the reply reaches the Bot API")
	calls := tg.Calls("sendMessage")
	require.Len(t, calls, 1)
	require.Equal(t, "777000111", fmt.Sprint(calls[0].Params["chat_id"]), "the reply goes to the user's chat")
	require.Equal(t, answer, calls[0].Params["text"])
	api.waitStatus(t, replyID, "sent")

	sentEv := hooks.waitOne(t, "message.sent", replyID)
	requireEventFields(t, sentEv, map[string]any{
		"event": "message.sent", "thread_id": threadID, "message_id": replyID, "thread_type": "individual",
		"sender_number": chTGAgent, "a1_account_id": api.account, "a1_phone_number": chTGAgent,
		"service": "telegram", "message_type": "text", "is_from_agent": true, "recipient_number": "777000111",
		"message_content": map[string]any{"text": answer}, "content": answer,
	})
	hooks.waitStatuses(t, replyID, "sent")

	// A poll, which Switchboard does not read, is stored and delivered as
	// an unsupported message, never dropped.
	poll := []byte(`{"update_id":7002,"message":{"message_id":12,"from":{"id":777000111,"is_bot":false,"first_name":"Alice","username":"Alice_W"},` +
		`"chat":{"id":777000111,"type":"private"},"date":1763800000,"poll":{"id":"5","question":"Lunch?","options":[]}}}`)
	r = api.client.Do(http.MethodPost, route, poll, "X-Telegram-Bot-Api-Secret-Token", secret)
	require.Equal(t, http.StatusOK, r.StatusCode, "poll: %s", r.Body)
	var pollID string
	for _, m := range api.recent(t, threadID) {
		if m["content"] == "[unsupported poll message]" {
			pollID = m["message_id"].(string)
		}
	}
	require.NotEmpty(t, pollID, "the poll is in the thread")
	hooks.waitOne(t, "message.received", pollID)
}

// whatsappRoundTrip: the verify handshake; a signed inbound text reaches a
// thread and the customer's webhook; the reply reaches the Cloud API; the
// signed delivered and read statuses of its wamid move the message and
// reach the webhook.
func whatsappRoundTrip(t *testing.T, api *chAPI, wa *whatsappfake.Server, hooks *hookReceiver, numberID string) {
	t.Helper()
	route := "/v1/providers/whatsapp/" + numberID + "/webhook"

	r := api.client.Do(http.MethodGet, route+"?hub.mode=subscribe&hub.verify_token="+chWAVerify+"&hub.challenge=8402617315", nil)
	require.Equal(t, http.StatusOK, r.StatusCode, "handshake: %s", r.Body)
	require.Equal(t, "8402617315", string(r.Body), "the handshake echoes the challenge")
	r = api.client.Do(http.MethodGet, route+"?hub.mode=subscribe&hub.verify_token=not-"+chWAVerify+"&hub.challenge=1", nil)
	require.Equal(t, http.StatusForbidden, r.StatusCode, "a wrong verify token: %s", r.Body)

	// A notification signed with another secret is refused and stores nothing.
	forged := whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-forged", "forged")
	r = api.client.Do(http.MethodPost, route, forged, "X-Hub-Signature-256", whatsappfake.Sign(forged, "not the app secret"))
	require.Equal(t, http.StatusUnauthorized, r.StatusCode, "forged notification: %s", r.Body)

	const question = "Does it come in blue?"
	body := whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.e2e-inbound-1", question)
	r = api.client.Do(http.MethodPost, route, body, "X-Hub-Signature-256", whatsappfake.Sign(body, chWASecret))
	require.Equal(t, http.StatusOK, r.StatusCode, "notification: %s", r.Body)

	thread := api.thread(t, "individual", "Sheena Nelson")
	require.Equal(t, "whatsapp", thread["service"])
	threadID := thread["thread_id"].(string)
	recent := api.recent(t, threadID)
	require.Len(t, recent, 1, "the forged notification stored nothing: %v", recent)
	in := recent[0]
	require.Equal(t, question, in["content"])
	require.Equal(t, "+14155550111", in["from"])
	require.Equal(t, chWAAgent, in["to"])
	inID := in["message_id"].(string)

	received := hooks.waitOne(t, "message.received", inID)
	requireEventFields(t, received, map[string]any{
		"event": "message.received", "thread_id": threadID, "message_id": inID, "thread_type": "individual",
		"sender_number": "+14155550111", "sender_name": "Sheena Nelson", "a1_account_id": api.account, "a1_phone_number": chWAAgent,
		"service": "whatsapp", "message_type": "text", "is_from_agent": false, "agent_mentioned": true,
		"message_content": map[string]any{"text": question}, "content": question,
	})

	const answer = "Yes, it comes in blue."
	r = api.post(t, "/v1/messages/individual/"+api.account+"/send",
		map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550111", "content": answer})
	require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
	sent := r.JSON(t)
	require.Equal(t, threadID, sent["thread_id"])
	replyID := sent["message_id"].(string)

	require.Eventually(t, func() bool { return len(wa.Sends()) > 0 }, chWait, chTick, "the reply reaches the Cloud API")
	sends := wa.Sends()
	require.Len(t, sends, 1)
	require.Equal(t, "14155550111", sends[0]["to"])
	require.Equal(t, "text", sends[0]["type"])
	require.Equal(t, answer, sends[0]["text"].(map[string]any)["body"])
	wamid := wa.LastID() // the id the Cloud API gave the one send
	api.waitStatus(t, replyID, "sent")

	sentEv := hooks.waitOne(t, "message.sent", replyID)
	requireEventFields(t, sentEv, map[string]any{
		"event": "message.sent", "thread_id": threadID, "message_id": replyID, "thread_type": "individual",
		"sender_number": chWAAgent, "a1_account_id": api.account, "a1_phone_number": chWAAgent,
		"service": "whatsapp", "message_type": "text", "is_from_agent": true, "recipient_number": "+14155550111",
		"message_content": map[string]any{"text": answer}, "content": answer,
	})
	hooks.waitStatuses(t, replyID, "sent")

	for _, status := range []string{"delivered", "read"} {
		p := whatsappfake.Status(chWAPNID, chWADisplay, wamid, "14155550111", status, 0)
		r = api.client.Do(http.MethodPost, route, p, "X-Hub-Signature-256", whatsappfake.Sign(p, chWASecret))
		require.Equal(t, http.StatusOK, r.StatusCode, "%s status: %s", status, r.Body)
		api.waitStatus(t, replyID, status)
	}
	details := api.details(t, replyID)
	require.Equal(t, "read", details["status"])
	require.Equal(t, answer, details["body"])
	require.Equal(t, "+14155550111", details["to"])
	// The status events come in the order the status moved.
	hooks.waitStatuses(t, replyID, "sent", "delivered", "read")
	for _, ev := range hooks.find("message.status", replyID) {
		requireEventFields(t, ev, map[string]any{"thread_id": threadID, "service": "whatsapp", "is_from_agent": true, "content": answer})
	}

	// A message of a type Switchboard does not read is stored and
	// delivered as an unsupported one, never dropped.
	order := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[{"field":"messages","value":{"messaging_product":"whatsapp",` +
		`"metadata":{"phone_number_id":"` + chWAPNID + `"},"messages":[{"from":"14155550111","id":"wamid.e2e-order","type":"order","order":{"catalog_id":"1"}}]}}]}]}`)
	r = api.client.Do(http.MethodPost, route, order, "X-Hub-Signature-256", whatsappfake.Sign(order, chWASecret))
	require.Equal(t, http.StatusOK, r.StatusCode, "order: %s", r.Body)
	var orderID string
	for _, m := range api.recent(t, threadID) {
		if m["content"] == "[unsupported order message]" {
			orderID = m["message_id"].(string)
		}
	}
	require.NotEmpty(t, orderID, "the order message is in the thread")
	hooks.waitOne(t, "message.received", orderID)
}

// chAPI calls the server's API as one account.
type chAPI struct {
	client  *openapitest.Client
	base    string
	account string
	headers []string
}

func (a *chAPI) get(t *testing.T, path string) openapitest.Response {
	t.Helper()
	return a.client.Do(http.MethodGet, path, nil, a.headers...)
}

func (a *chAPI) post(t *testing.T, path string, body any) openapitest.Response {
	t.Helper()
	return a.client.Do(http.MethodPost, path, body, a.headers...)
}

// thread finds the account's thread of type typ named name.
func (a *chAPI) thread(t *testing.T, typ, name string) map[string]any {
	t.Helper()
	r := a.get(t, "/v1/messages/threads/"+a.account+"/get-all")
	require.Equal(t, http.StatusOK, r.StatusCode, "threads: %s", r.Body)
	for _, it := range r.JSON(t)["data"].([]any) {
		th := it.(map[string]any)
		if th["thread_type"] == typ && th["chat_name"] == name {
			return th
		}
	}
	t.Fatalf("no %s thread %q in %s", typ, name, r.Body)
	return nil
}

// recent lists a thread's newest messages.
func (a *chAPI) recent(t *testing.T, threadID string) []map[string]any {
	t.Helper()
	r := a.get(t, "/v1/messages/threads/"+a.account+"/get-recent/"+threadID)
	require.Equal(t, http.StatusOK, r.StatusCode, "recent: %s", r.Body)
	var out []map[string]any
	for _, it := range r.JSON(t)["data"].([]any) {
		out = append(out, it.(map[string]any))
	}
	return out
}

// details reads a message's details.
func (a *chAPI) details(t *testing.T, messageID string) map[string]any {
	t.Helper()
	r := a.get(t, "/v1/messages/individual/"+a.account+"/get-details/"+messageID)
	require.Equal(t, http.StatusOK, r.StatusCode, "details: %s", r.Body)
	return r.JSON(t)["data"].(map[string]any)
}

// status reads a message's status without failing the test, so it can run
// inside require.Eventually; the response is still checked against the
// OpenAPI document.
func (a *chAPI) status(messageID string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, a.base+"/v1/messages/individual/"+a.account+"/get-details/"+messageID, nil)
	if err != nil {
		return "", err
	}
	for i := 0; i+1 < len(a.headers); i += 2 {
		req.Header.Set(a.headers[i], a.headers[i+1])
	}
	r, err := sendValidated(http.DefaultClient, req, nil)
	if err != nil {
		return "", err
	}
	if r.StatusCode != http.StatusOK {
		return "", fmt.Errorf("get-details: %d %s", r.StatusCode, r.Body)
	}
	var body struct {
		Data struct {
			Status string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return "", err
	}
	return body.Data.Status, nil
}

// waitStatus waits until the message's status, read through the API, is want.
func (a *chAPI) waitStatus(t *testing.T, messageID, want string) {
	t.Helper()
	var mu sync.Mutex
	var last string
	ok := assertEventually(func() bool {
		s, err := a.status(messageID)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			last = err.Error()
			return false
		}
		last = s
		return s == want
	})
	mu.Lock()
	defer mu.Unlock()
	require.True(t, ok, "message %s should reach status %s; last seen: %s", messageID, want, last)
}

// assertEventually is require.Eventually's loop without failing, so that
// the caller can report what it saw last.
func assertEventually(cond func() bool) bool {
	deadline := time.Now().Add(chWait)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(chTick)
	}
}

// requireEventFields checks that an event carries every documented field of
// a message event and the wanted values.
func requireEventFields(t *testing.T, ev map[string]any, want map[string]any) {
	t.Helper()
	for _, field := range []string{"event", "thread_id", "message_id", "thread_type", "sender_number", "sender_name",
		"a1_account_id", "a1_phone_number", "timestamp", "service", "message_type", "is_from_agent", "agent_mentioned",
		"message_content", "content"} {
		require.Contains(t, ev, field, "event %v", ev)
	}
	for field, value := range want {
		require.Equal(t, value, ev[field], "field %s of event %v", field, ev)
	}
	ts, _ := ev["timestamp"].(string)
	_, err := time.Parse(time.RFC3339Nano, ts)
	require.NoError(t, err, "timestamp of event %v", ev)
}

// hookReceiver is a customer's webhook endpoint on 127.0.0.1: it verifies
// every delivery with the Standard Webhooks library and records the events,
// once per webhook-id (a retried delivery keeps its id).
type hookReceiver struct {
	URL string

	mu       sync.Mutex
	verifier *standardwebhooks.Webhook
	seen     map[string]bool
	events   []map[string]any
	rejected []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{seen: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(srv.Close)
	h.URL = srv.URL + "/hooks"
	return h
}

// setSecret gives the receiver the endpoint's signing secret.
func (h *hookReceiver) setSecret(t *testing.T, secret string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err, "the signing secret %q", secret)
	h.mu.Lock()
	h.verifier = wh
	h.mu.Unlock()
}

func (h *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	reject := func(status int, why string) {
		h.rejected = append(h.rejected, fmt.Sprintf("%s %s: %s: %s", r.Method, r.URL.Path, why, body))
		http.Error(w, why, status)
	}
	switch {
	case err != nil:
		reject(http.StatusBadRequest, "read body: "+err.Error())
		return
	case r.Method != http.MethodPost || r.URL.Path != "/hooks":
		reject(http.StatusNotFound, "not the webhook route")
		return
	case h.verifier == nil:
		reject(http.StatusServiceUnavailable, "a delivery before the secret was known")
		return
	}
	if err := h.verifier.Verify(body, r.Header); err != nil {
		reject(http.StatusUnauthorized, "signature: "+err.Error())
		return
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		reject(http.StatusBadRequest, "not a JSON object")
		return
	}
	if id := r.Header.Get("webhook-id"); !h.seen[id] {
		h.seen[id] = true
		h.events = append(h.events, ev)
	}
	w.WriteHeader(http.StatusNoContent)
}

// all returns the recorded events in arrival order.
func (h *hookReceiver) all() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.events...)
}

// find returns the events of type typ about messageID, in arrival order.
func (h *hookReceiver) find(typ, messageID string) []map[string]any {
	var out []map[string]any
	for _, ev := range h.all() {
		if ev["event"] == typ && ev["message_id"] == messageID {
			out = append(out, ev)
		}
	}
	return out
}

func (h *hookReceiver) rejections() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.rejected...)
}

// waitOne waits for the event of type typ about messageID and requires it
// to be the only one.
func (h *hookReceiver) waitOne(t *testing.T, typ, messageID string) map[string]any {
	t.Helper()
	ok := assertEventually(func() bool { return len(h.find(typ, messageID)) > 0 })
	require.True(t, ok, "the webhook should receive %s for %s; it has %v; rejected deliveries: %v", typ, messageID, h.all(), h.rejections())
	got := h.find(typ, messageID)
	require.Len(t, got, 1, "one %s event for %s", typ, messageID)
	return got[0]
}

// waitStatuses waits until the message.status events about messageID carry
// exactly the statuses want, in order.
func (h *hookReceiver) waitStatuses(t *testing.T, messageID string, want ...string) {
	t.Helper()
	statuses := func() []string {
		var out []string
		for _, ev := range h.find("message.status", messageID) {
			s, _ := ev["status"].(string)
			out = append(out, s)
		}
		return out
	}
	ok := assertEventually(func() bool { return len(statuses()) >= len(want) })
	require.True(t, ok, "the webhook should receive %d message.status events for %s; has %v", len(want), messageID, statuses())
	require.Equal(t, want, statuses(), "the message.status events of %s", messageID)
}
