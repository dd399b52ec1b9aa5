package rest_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/channels/telegram"
	"github.com/switchboard-dev/switchboard/adapters/channels/telegram/telegramfake"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp"
	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/channels"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/domain/account"
)

// The real-channel agent numbers.
const (
	agentTGReal = "+14155550121"
	agentTGPoll = "+14155550122"
	agentWACld  = "+14155550120"
	waPNID      = "106540352242922"
	waSecret    = "app-secret-0123456789abcdef"
	waVerify    = "verify-me"

	agentWAOther  = "+14155550123"
	agentSandbox  = "+14155550124"
	waOtherSecret = "another-apps-secret"
)

// chanBundle is the real HTTP interface with the Telegram and WhatsApp
// providers talking to fake provider servers on 127.0.0.1.
type chanBundle struct {
	*msgBundle
	tg, tgPoll         *telegramfake.Server
	wa                 *whatsappfake.Server
	tgNumber, waNumber account.Number
	// waOther is a second Cloud API number of another Meta app.
	waOther  account.Number
	tgSecret string
	poller   *telegram.Connector
	// url is the server's address on 127.0.0.1.
	url string
	// links signs media links with the server's key.
	links *messaging.MediaLinks
}

// providerRoutes serves the provider routes the way bootstrap wires them.
type providerRoutes struct {
	tg *telegram.Inbound
	wa *whatsapp.Inbound
}

func (w providerRoutes) TelegramWebhook(ctx context.Context, id, secret string, body []byte) (rest.VerifiedPost, error) {
	v, err := w.tg.Authenticate(ctx, id, secret, body)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (w providerRoutes) WhatsAppVerify(ctx context.Context, id, mode, token, challenge string) (string, error) {
	return w.wa.Verify(ctx, id, mode, token, challenge)
}

func (w providerRoutes) WhatsAppWebhook(ctx context.Context, id, signature string, body []byte) (rest.VerifiedPost, error) {
	v, err := w.wa.Authenticate(ctx, id, signature, body)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// numbers lists a provider's numbers with their settings.
type numbers struct {
	dir *channels.Directory
	acc *accounts.Service
}

func (n numbers) Numbers(ctx context.Context, p account.Provider) ([]account.Number, error) {
	return n.dir.Numbers(ctx, p)
}

func (n numbers) NumberSettings(num account.Number) (map[string]string, error) {
	return n.acc.NumberSettings(num)
}

func setupChannels(t testing.TB, dialect store.Dialect, limits ...edge.Limits) *chanBundle {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, cred, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	o, oCred, err := acc.CreateAccount(ctx, "Other")
	require.NoError(t, err)
	// The server's address is known once it listens; the handler is
	// built after.
	var handler http.Handler
	srv := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))

	b := &chanBundle{
		tg: telegramfake.New(t, "111:bot-token"), tgPoll: telegramfake.New(t, "222:poll-token"),
		wa: whatsappfake.New(t, waPNID, "EAAG-access-token", "+1 415-555-0120"),
	}
	pollSettings := b.tgPoll.Settings()
	pollSettings["inbound"] = "polling"
	for _, in := range []accounts.NumberInput{
		{Number: agentTGReal, Service: "telegram", Provider: "telegram", Settings: b.tg.Settings()},
		{Number: agentTGPoll, Service: "telegram", Provider: "telegram", Settings: pollSettings},
		{Number: agentWACld, Service: "whatsapp", Provider: "whatsapp-cloud", Settings: b.wa.Settings(waSecret, waVerify)},
		{Number: agentSandbox, Service: "whatsapp", Provider: "sandbox"},
		{Number: agentWAOther, Service: "whatsapp", Provider: "whatsapp-cloud", Settings: map[string]string{
			"phone_number_id": "200000000000001", "access_token": "other", "app_secret": waOtherSecret, "verify_token": "v", "api_base_url": b.wa.URL,
		}},
	} {
		in.AccountID, in.Enabled = a.ID, true
		n, err := acc.AddNumber(ctx, in)
		require.NoError(t, err)
		switch in.Number {
		case agentTGReal:
			b.tgNumber = n
		case agentWACld:
			b.waNumber = n
		case agentWAOther:
			b.waOther = n
		}
	}
	b.tgSecret = telegram.WebhookSecret(b.tgNumber.ID, b.tg.Settings())
	b.links = messaging.NewMediaLinks(keys, srv, time.Hour)

	guard := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	dir := channels.NewDirectory(db.ChannelStore())
	svc := messaging.NewService(messaging.Deps{
		Committer: db, Store: db.MessagingStore(),
		Providers: messaging.ProviderSet{
			sandbox.Name:  sandbox.Provider{Media: guard.Client(httpguard.ClientOptions{Timeout: 5 * time.Second})},
			telegram.Name: &telegram.Provider{Client: telegram.NewClient(), Chats: dir},
			whatsapp.Name: &whatsapp.Provider{Client: whatsapp.NewClient(), Chats: dir},
		},
		Opener: acc, URLs: guard, Media: guard.NewProber(5 * time.Second), Logger: quiet, Recipients: dir,
		MediaLinks: b.links,
	})
	inbox := channels.NewService(channels.Deps{
		Store: db.ChannelStore(), Receiver: svc, Opener: acc, Logger: quiet,
	})
	tgIn := &telegram.Inbound{Inbox: inbox}
	waIn := &whatsapp.Inbound{Inbox: inbox, Siblings: numbers{dir, acc}}

	jobs, err := runner.New(db.JobQueue(), db, runner.Config{PollInterval: 20 * time.Millisecond, Logger: quiet},
		runner.Kind{Name: messaging.DeliverKind, Handler: svc, Backoff: messaging.DeliveryBackoff, Timeout: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, jobs.Start(ctx))
	b.poller = &telegram.Connector{Client: telegram.NewClient(), Inbound: tgIn, Numbers: numbers{dir, acc},
		Polling: true, Leases: db.PollLeases(), Rescan: time.Hour, PollTimeout: time.Second, Log: quiet}
	require.NoError(t, b.poller.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.poller.Stop(stopCtx)
		_ = jobs.Stop(stopCtx)
	})

	h, err := rest.NewHandler(edge.Deps{
		Accounts: acc, Idempotency: edge.NewIdempotency(db.IdempotencyKeys(), 0, nil, quiet), Ready: db.Ready, Registry: prometheus.NewRegistry(), Logger: quiet, Limits: append(limits, unlimited)[0],
	}, rest.Deps{Accounts: acc, Messaging: svc, Providers: providerRoutes{tgIn, waIn}})
	require.NoError(t, err)
	handler = h
	b.url = srv
	b.msgBundle = &msgBundle{callers: callers{client: openapitest.New(t, srv), db: db, account: a.ID, key: cred.Key, secret: cred.Secret,
		other: o.ID, oKey: oCred.Key, oSecret: oCred.Secret}}
	return b
}

// telegramUpdate posts an update to the bot's webhook.
func (b *chanBundle) telegramUpdate(t *testing.T, update []byte, secret string) openapitest.Response {
	t.Helper()
	headers := []string{}
	if secret != "" {
		headers = append(headers, "X-Telegram-Bot-Api-Secret-Token", secret)
	}
	return b.client.Do(http.MethodPost, "/v1/providers/telegram/"+b.tgNumber.ID+"/webhook", update, headers...)
}

// whatsappPost posts a notification signed with signature.
func (b *chanBundle) whatsappPost(t testing.TB, body []byte, signature string) openapitest.Response {
	t.Helper()
	return b.client.Do(http.MethodPost, "/v1/providers/whatsapp/"+b.waNumber.ID+"/webhook", body, "X-Hub-Signature-256", signature)
}

// messageCount counts the stored messages.
func (b *chanBundle) messageCount(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, b.db.Bun().NewRaw("SELECT COUNT(*) FROM messages").Scan(context.Background(), &n))
	return n
}

// threadOf finds the thread of an agent number by type and name.
func (b *chanBundle) threadOf(t *testing.T, typ, name string) map[string]any {
	t.Helper()
	r := b.get("/v1/messages/threads/" + b.account + "/get-all")
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

func (b *chanBundle) providerID(t *testing.T, messageID string) string {
	t.Helper()
	var id string
	require.NoError(t, b.db.Bun().NewRaw("SELECT provider_message_id FROM messages WHERE id = ?", messageID).Scan(context.Background(), &id))
	return id
}

func TestTelegramEndToEnd(t *testing.T) {
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupChannels(t, dialect)

		// A user writes to the bot: the message reaches a thread, once.
		hello := telegramfake.PrivateText(5001, 1, 777000111, "Alice_W", "Alice", "hello bot")
		r := b.telegramUpdate(t, hello, b.tgSecret)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "ok", r.JSON(t)["status"])
		require.Equal(t, http.StatusOK, b.telegramUpdate(t, hello, b.tgSecret).StatusCode)
		require.Equal(t, 1, b.messageCount(t), "a redelivered update is stored once")
		thread := b.threadOf(t, "individual", "Alice")
		recent := b.recent(t, thread["thread_id"].(string))
		require.Len(t, recent, 1)
		require.Equal(t, "hello bot", recent[0].(map[string]any)["content"])
		require.Equal(t, "777000111", recent[0].(map[string]any)["from"])

		// Wrong or missing secret tokens are refused without a look at the body.
		forged := telegramfake.PrivateText(5002, 2, 777000111, "Alice_W", "Alice", "forged")
		requireError(t, b.telegramUpdate(t, forged, b.tgSecret[:63]+"x"), http.StatusUnauthorized, "unauthorized")
		requireError(t, b.telegramUpdate(t, forged, ""), http.StatusUnauthorized, "unauthorized")
		require.Equal(t, 1, b.messageCount(t))
		requireError(t, b.client.Do(http.MethodPost, "/v1/providers/telegram/not-a-number/webhook", forged, "X-Telegram-Bot-Api-Secret-Token", b.tgSecret), http.StatusNotFound, "not_found")
		// The route needs no API key, and another number's id is not a way in.
		requireError(t, b.client.Do(http.MethodPost, "/v1/providers/telegram/"+b.waNumber.ID+"/webhook", forged, "X-Telegram-Bot-Api-Secret-Token", b.tgSecret), http.StatusNotFound, "not_found")

		// The reply names the user by @username; it goes back through the
		// same bot to the user's chat.
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentTGReal, "to": "@alice_w", "service": "telegram", "content": "hi Alice"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
		reply := r.JSON(t)
		require.Equal(t, thread["thread_id"], reply["thread_id"], "the @username names the same conversation")
		b.waitStatus(t, reply["message_id"].(string), "sent")
		sent := b.tg.Calls("sendMessage")
		require.Len(t, sent, 1)
		require.Equal(t, "777000111", sent[0].Params["chat_id"])
		require.Equal(t, "hi Alice", sent[0].Params["text"])

		// Once the user shares their phone number, it names them too.
		require.Equal(t, http.StatusOK, b.telegramUpdate(t, telegramfake.SharedContact(5003, 3, 777000111, "Alice", "491701234567"), b.tgSecret).StatusCode)
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentTGReal, "to": "+491701234567", "service": "telegram", "content": "got your number"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
		require.Equal(t, thread["thread_id"], r.JSON(t)["thread_id"])
		b.waitStatus(t, r.JSON(t)["message_id"].(string), "sent")
		require.Equal(t, "777000111", b.tg.Calls("sendMessage")[1].Params["chat_id"])
		// An unknown phone number has no conversation.
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentTGReal, "to": "+491709999999", "service": "telegram", "content": "x"})
		requireError(t, r, http.StatusConflict, "conversation_not_started")

		// A group chat the bot is in becomes a group thread; a group send
		// goes to that chat.
		require.Equal(t, http.StatusOK, b.telegramUpdate(t, telegramfake.GroupText(5004, 40, -1001234567890, "Team chat", 777000111, "Alice", "hi team"), b.tgSecret).StatusCode)
		group := b.threadOf(t, "group", "Team chat")
		require.Contains(t, group["participants"], "+491701234567", "a member who shared their phone is known by it")
		r = b.post("/v1/messages/group/"+b.account+"/send", map[string]any{"from": agentTGReal, "thread_id": group["thread_id"], "content": "hello group"})
		require.Equal(t, http.StatusOK, r.StatusCode, "group send: %s", r.Body)
		b.waitStatus(t, r.JSON(t)["message_id"].(string), "sent")
		require.Equal(t, "-1001234567890", b.tg.Calls("sendMessage")[2].Params["chat_id"])

		// Group actions reach the chat.
		r = b.post("/v1/group-management/"+b.account, map[string]any{"action": "update_name", "agent_number": agentTGReal, "thread_id": group["thread_id"], "name": "Renamed"})
		require.Equal(t, http.StatusOK, r.StatusCode, "update_name: %s", r.Body)
		require.Equal(t, "Renamed", b.tg.Calls("setChatTitle")[0].Params["title"])
		r = b.post("/v1/group-management/"+b.account, map[string]any{"action": "promote_admin", "agent_number": agentTGReal, "thread_id": group["thread_id"], "participants": []string{"+491701234567"}})
		require.Equal(t, http.StatusOK, r.StatusCode, "promote_admin: %s", r.Body)
		require.Equal(t, float64(777000111), b.tg.Calls("promoteChatMember")[0].Params["user_id"])
		r = b.post("/v1/group-management/"+b.account, map[string]any{"action": "create", "agent_number": agentTGReal, "title": "New", "participants": []string{"+491701234567"}})
		requireError(t, r, http.StatusNotImplemented, "not_supported_by_provider")
		r = b.post("/v1/group-management/"+b.account, map[string]any{"action": "leave", "agent_number": agentTGReal, "thread_id": group["thread_id"]})
		require.Equal(t, http.StatusOK, r.StatusCode, "leave: %s", r.Body)
		require.Equal(t, "-1001234567890", b.tg.Calls("leaveChat")[0].Params["chat_id"])
		r = b.post("/v1/messages/group/"+b.account+"/send", map[string]any{"from": agentTGReal, "thread_id": group["thread_id"], "content": "still here?"})
		requireError(t, r, http.StatusConflict, "not_group_member")

		// A bot without a public URL polls: its updates arrive the same way.
		b.tgPoll.Queue(telegramfake.PrivateText(9001, 1, 555000222, "bob", "Bob", "polled hello"))
		require.Eventually(t, func() bool {
			var n int
			_ = b.db.Bun().NewRaw("SELECT COUNT(*) FROM messages WHERE to_address = ?", agentTGPoll).Scan(context.Background(), &n)
			return n == 1
		}, 15*time.Second, 20*time.Millisecond)
		bob := b.threadOf(t, "individual", "Bob")
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentTGPoll, "to": "555000222", "service": "telegram", "content": "hi Bob"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
		require.Equal(t, bob["thread_id"], r.JSON(t)["thread_id"])
		b.waitStatus(t, r.JSON(t)["message_id"].(string), "sent")
		require.Equal(t, "555000222", b.tgPoll.Calls("sendMessage")[0].Params["chat_id"])
	})
}

func TestWhatsAppEndToEnd(t *testing.T) {
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupChannels(t, dialect)
		base := "/v1/providers/whatsapp/" + b.waNumber.ID + "/webhook"

		// The subscription handshake.
		r := b.client.Do(http.MethodGet, base+"?hub.mode=subscribe&hub.verify_token="+waVerify+"&hub.challenge=1158201444", nil)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "1158201444", string(r.Body))
		requireError(t, b.client.Do(http.MethodGet, base+"?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1", nil), http.StatusForbidden, "verification_failed")

		// A signed inbound message reaches a thread, once.
		body := whatsappfake.TextMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.HBgLMTQxNTU1NTAxMTEVAgASGBQzQUJDMTIzAA==", "Does it come in another color?")
		r = b.whatsappPost(t, body, whatsappfake.Sign(body, waSecret))
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, http.StatusOK, b.whatsappPost(t, body, whatsappfake.Sign(body, waSecret)).StatusCode)
		require.Equal(t, 1, b.messageCount(t), "a replayed payload is stored once")
		// Deliveries of one message racing each other store it once.
		racing := whatsappfake.TextMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.racing", "sent twice at once")
		var wg sync.WaitGroup
		codes := make([]int, 6)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = b.whatsappPost(t, racing, whatsappfake.Sign(racing, waSecret)).StatusCode
			}()
		}
		wg.Wait()
		require.Equal(t, []int{200, 200, 200, 200, 200, 200}, codes)
		require.Equal(t, 2, b.messageCount(t))
		requireError(t, b.whatsappPost(t, body, whatsappfake.Sign(body, "wrong secret")), http.StatusUnauthorized, "unauthorized")
		requireError(t, b.whatsappPost(t, body, ""), http.StatusUnauthorized, "unauthorized")
		thread := b.threadOf(t, "individual", "Sheena Nelson")
		recent := b.recent(t, thread["thread_id"].(string))
		require.Len(t, recent, 2)
		require.Equal(t, "+14155550111", recent[0].(map[string]any)["from"])

		// The reply goes back through the Cloud API...
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentWACld, "to": "+14155550111", "service": "whatsapp", "content": "Yes, in blue."})
		require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
		replyID := r.JSON(t)["message_id"].(string)
		b.waitStatus(t, replyID, "sent")
		sends := b.wa.Sends()
		require.Len(t, sends, 1)
		require.Equal(t, "14155550111", sends[0]["to"])
		require.Equal(t, "Yes, in blue.", sends[0]["text"].(map[string]any)["body"])
		wamid := b.providerID(t, replyID)
		require.Equal(t, b.wa.LastID(), wamid)

		// ...and the provider's statuses move it on.
		status := func(wamid, s string, code int) {
			t.Helper()
			p := whatsappfake.Status(waPNID, "+1 415-555-0120", wamid, "14155550111", s, code)
			r := b.whatsappPost(t, p, whatsappfake.Sign(p, waSecret))
			require.Equal(t, http.StatusOK, r.StatusCode, "status: %s", r.Body)
		}
		status(wamid, "delivered", 0)
		require.Equal(t, "delivered", b.details(t, replyID)["status"])
		status(wamid, "sent", 0) // late and out of order: ignored
		status(wamid, "read", 0)
		require.Equal(t, "read", b.details(t, replyID)["status"])

		// A media reply, fetched and checked before the Cloud API gets its link.
		media := newMediaServer(t)
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentWACld, "to": "+14155550111", "service": "whatsapp",
			"message_type": "media", "media_url": media + "/image.png", "media_type": "image", "caption": "blue"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
		b.waitStatus(t, r.JSON(t)["message_id"].(string), "sent")
		require.Equal(t, map[string]any{"link": media + "/image.png", "caption": "blue"}, b.wa.Sends()[1]["image"])

		// A failure status keeps WhatsApp's reason.
		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"from": agentWACld, "to": "+14155550111", "service": "whatsapp", "content": "still there?"})
		require.Equal(t, http.StatusOK, r.StatusCode, "send: %s", r.Body)
		lateID := r.JSON(t)["message_id"].(string)
		b.waitStatus(t, lateID, "sent")
		// Another app's correctly signed report about this number's
		// message changes nothing: a signature vouches for its own numbers.
		other := whatsappfake.Status("200000000000001", "+1 415-555-0123", b.providerID(t, lateID), "14155550111", "failed", 131047)
		r = b.client.Do(http.MethodPost, "/v1/providers/whatsapp/"+b.waOther.ID+"/webhook", other, "X-Hub-Signature-256", whatsappfake.Sign(other, waOtherSecret))
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		require.Equal(t, "sent", b.details(t, lateID)["status"])
		status(b.providerID(t, lateID), "failed", 131047)
		failed := b.details(t, lateID)
		require.Equal(t, "failed", failed["status"])
		require.Equal(t, "re_engagement_required", failed["error_code"])

		// The Cloud API makes a group later, empty: the answer says it is
		// being created, and whom to send the invite link.
		r = b.post("/v1/group-management/"+b.account, map[string]any{"action": "create", "agent_number": agentWACld, "title": "New", "participants": []string{"+14155550111"}})
		require.Equal(t, http.StatusOK, r.StatusCode, "create: %s", r.Body)
		created := r.JSON(t)["data"].(map[string]any)
		require.Equal(t, true, created["creating"])
		require.Nil(t, created["invite_link"])
		require.Equal(t, []any{"+14155550111"}, created["invited"])
		require.Equal(t, []any{agentWACld}, created["participants"], "nobody is added: people join with the invite link")
	})
}

// newTestServer serves h on 127.0.0.1 and returns its URL.
func newTestServer(t testing.TB, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// newMediaServer serves the media test files on 127.0.0.1.
func newMediaServer(t *testing.T) string {
	return newTestServer(t, mediaHandler())
}

func TestProviderRouteLimits(t *testing.T) {
	b := setupChannels(t, store.SQLite, edge.Limits{MaxBodyBytes: 2048, RatePerSecond: 0.001, RateBurst: 100, AuthFailuresPerMinute: 2})
	path := "/v1/providers/telegram/" + b.tgNumber.ID + "/webhook"
	big := telegramfake.PrivateText(1, 1, 7, "big", "Big", strings.Repeat("x", 4096))
	requireError(t, b.client.Do(http.MethodPost, path, big, "X-Telegram-Bot-Api-Secret-Token", b.tgSecret), http.StatusRequestEntityTooLarge, "payload_too_large")
	ok := telegramfake.PrivateText(2, 2, 7, "small", "Small", "hi")
	require.Equal(t, http.StatusOK, b.client.Do(http.MethodPost, path, ok, "X-Telegram-Bot-Api-Secret-Token", b.tgSecret).StatusCode)
	// Failed secrets spend the client address's budget of failures.
	requireError(t, b.client.Do(http.MethodPost, path, ok, "X-Telegram-Bot-Api-Secret-Token", "wrong"), http.StatusUnauthorized, "unauthorized")
	requireError(t, b.client.Do(http.MethodPost, path, ok, "X-Telegram-Bot-Api-Secret-Token", "wrong"), http.StatusUnauthorized, "unauthorized")
	r := b.client.Do(http.MethodPost, path, ok, "X-Telegram-Bot-Api-Secret-Token", b.tgSecret)
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	require.Contains(t, r.JSON(t)["message"], "failed webhook signatures")
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	// Each agent number has a request budget of its own (a fresh bundle:
	// this client address is blocked on the first one).
	b = setupChannels(t, store.SQLite, edge.Limits{MaxBodyBytes: 2048, RatePerSecond: 0.001, RateBurst: 3, AuthFailuresPerMinute: 100})
	wa := "/v1/providers/whatsapp/" + b.waNumber.ID + "/webhook?hub.mode=subscribe&hub.verify_token=" + waVerify + "&hub.challenge=1"
	for range 3 {
		require.Equal(t, http.StatusOK, b.client.Do(http.MethodGet, wa, nil).StatusCode)
	}
	requireError(t, b.client.Do(http.MethodGet, wa, nil), http.StatusTooManyRequests, "rate_limited")
	tg := "/v1/providers/telegram/" + b.tgNumber.ID + "/webhook"
	require.Equal(t, http.StatusOK, b.client.Do(http.MethodPost, tg, ok, "X-Telegram-Bot-Api-Secret-Token", telegram.WebhookSecret(b.tgNumber.ID, b.tg.Settings())).StatusCode,
		"another number's budget is untouched")
}

// postFrom posts body to path from the loopback address local (another
// client address than the bundle's client, 127.0.0.1) and returns the status.
func (b *chanBundle) postFrom(t *testing.T, local, path string, body []byte, headers ...string) int {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, b.url+path, bytes.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

func TestProviderRoutesVerifyBeforeTheNumberLimit(t *testing.T) {
	t.Parallel()
	// A number budget of 200 requests that does not refill during the
	// test, and a budget of failed signatures too large to stop the flood.
	b := setupChannels(t, store.SQLite, edge.Limits{MaxBodyBytes: 1 << 20, RatePerSecond: 0.001, RateBurst: 200, AuthFailuresPerMinute: 1000})
	body := whatsappfake.TextMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.flood", "signed")
	update := telegramfake.PrivateText(7001, 1, 777000111, "Alice_W", "Alice", "signed")
	for range 250 {
		requireError(t, b.whatsappPost(t, body, whatsappfake.Sign(body, "forged")), http.StatusUnauthorized, "unauthorized")
		requireError(t, b.telegramUpdate(t, update, "forged"), http.StatusUnauthorized, "unauthorized")
	}
	r := b.whatsappPost(t, body, whatsappfake.Sign(body, waSecret))
	require.Equal(t, http.StatusOK, r.StatusCode, "a signed post after 250 unsigned ones: %s", r.Body)
	r = b.telegramUpdate(t, update, b.tgSecret)
	require.Equal(t, http.StatusOK, r.StatusCode, "a signed update after 250 unsigned ones: %s", r.Body)
	require.Equal(t, 2, b.messageCount(t))
}

func TestProviderRoutesLimitFailedSignaturesPerAddress(t *testing.T) {
	t.Parallel()
	b := setupChannels(t, store.SQLite, edge.Limits{MaxBodyBytes: 1 << 20, RatePerSecond: 0.001, RateBurst: 200, AuthFailuresPerMinute: 5})
	wa := "/v1/providers/whatsapp/" + b.waNumber.ID + "/webhook"
	body := whatsappfake.TextMessage(waPNID, "+1 415-555-0120", "14155550111", "Sheena Nelson", "wamid.address", "signed")
	forged := []string{"Content-Type", "application/json", "X-Hub-Signature-256", whatsappfake.Sign(body, "forged")}

	// An unsigned flood from 127.0.0.2 ends in 429 for that address.
	codes := map[int]int{}
	for range 20 {
		codes[b.postFrom(t, "127.0.0.2", wa, body, forged...)]++
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: 5, http.StatusTooManyRequests: 15}, codes)

	// Other addresses are not held back: their failures are still 401,
	// their signed posts are stored.
	require.Equal(t, http.StatusUnauthorized, b.postFrom(t, "127.0.0.3", wa, body, forged...))
	r := b.whatsappPost(t, body, whatsappfake.Sign(body, waSecret))
	require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
	require.Equal(t, 1, b.messageCount(t))
}
