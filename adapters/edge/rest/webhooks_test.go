package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	whsender "github.com/switchboard-dev/switchboard/adapters/webhooks"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
)

// hookRecorder is a webhook receiver on 127.0.0.1 that keeps every
// payload.
type hookRecorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  []map[string]any
	hdrs []http.Header
	raw  [][]byte
}

func (h *hookRecorder) payloads() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]any(nil), h.got...)
}

// ofType waits for a payload of event type typ and returns it.
func (h *hookRecorder) ofType(t *testing.T, typ string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, p := range h.payloads() {
			if p["event"] == typ {
				return p
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s payload arrived", typ)
	return nil
}

type hookBundle struct {
	*msgBundle
	hooks *hookRecorder
}

func setupWebhooks(t *testing.T, dialect store.Dialect) *hookBundle {
	t.Helper()
	ctx := context.Background()
	fanOut := webhooks.NewFanOut(nil)
	db := dbtest.OpenWith(t, dialect, store.Options{
		Reactions: func(c *store.Conn) writes.Reactions { return fanOut.Through(store.WebhookStore{Conn: c}) }})
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, cred, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	o, oCred, err := acc.CreateAccount(ctx, "Other")
	require.NoError(t, err)
	for _, n := range []accounts.NumberInput{
		{AccountID: a.ID, Number: agentA, Service: "whatsapp", Enabled: true},
		{AccountID: o.ID, Number: agentOther, Service: "whatsapp", Enabled: true},
	} {
		n.Provider = "sandbox"
		_, err := acc.AddNumber(ctx, n)
		require.NoError(t, err)
	}
	guard := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	hooks := webhooks.NewService(webhooks.Deps{
		Store: db.WebhookStore(), Keys: keys, URLs: guard,
		PlainHTTPAllowed: func(host string) bool { return host == "127.0.0.1" },
		Sender:           whsender.NewSender(guard.DialContext, nil), Logger: quiet,
	})
	svc := messaging.NewService(messaging.Deps{
		Committer: db, Store: db.MessagingStore(),
		Providers: messaging.ProviderSet{sandbox.Name: sandbox.Provider{}},
		Opener:    acc, URLs: guard, Media: guard.NewProber(5 * time.Second), Logger: quiet,
	})
	jobs, err := runner.New(db.JobQueue(), db, runner.Config{PollInterval: 20 * time.Millisecond, Logger: quiet},
		runner.Kind{Name: messaging.DeliverKind, Handler: svc, Backoff: messaging.DeliveryBackoff, Timeout: 10 * time.Second},
		runner.Kind{Name: webhooks.DeliverKind, Handler: hooks, Timeout: 30 * time.Second,
			PaceFor: func(string) runner.Pace { return runner.Pace{MaxConcurrent: 1} }})
	require.NoError(t, err)
	require.NoError(t, jobs.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = jobs.Stop(stopCtx)
	})
	h, err := rest.NewHandler(edge.Deps{
		Accounts: acc, Idempotency: edge.NewIdempotency(db.IdempotencyKeys(), 0, nil, quiet), Ready: db.Ready, Registry: prometheus.NewRegistry(), Logger: quiet, Limits: unlimited,
	}, rest.Deps{Accounts: acc, Messaging: svc, Webhooks: hooks})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	rec := &hookRecorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		rec.mu.Lock()
		rec.got, rec.hdrs, rec.raw = append(rec.got, p), append(rec.hdrs, r.Header.Clone()), append(rec.raw, body)
		rec.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rec.srv.Close)
	return &hookBundle{
		msgBundle: &msgBundle{callers: callers{client: openapitest.New(t, srv.URL), db: db, account: a.ID, key: cred.Key, secret: cred.Secret,
			other: o.ID, oKey: oCred.Key, oSecret: oCred.Secret}},
		hooks: rec,
	}
}

func (b *hookBundle) put(body any, extra ...string) openapitest.Response {
	return b.client.Do(http.MethodPut, "/v1/accounts/"+b.account+"/webhook", body, b.auth(extra...)...)
}

func TestWebhookSettings(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupWebhooks(t, dialect)
		base := "/v1/accounts/" + b.account + "/webhook"

		r := b.get(base)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "%s", r.Body)
		require.Equal(t, "webhook_not_configured", r.JSON(t)["code"])

		for _, bad := range []struct {
			body any
			typ  string
		}{
			{map[string]any{"url": "https://169.254.169.254/latest"}, "url_forbidden"},
			{map[string]any{"url": "https://[::ffff:10.0.0.1]/hook"}, "url_forbidden"},
			{map[string]any{"url": "http://example.com/hook"}, "url_scheme"},
			// Plain http to a refused address: the address is the reason.
			{map[string]any{"url": "http://10.0.0.1:9000/hook"}, "url_forbidden"},
			{map[string]any{"url": "http://[::1]:9000/hook", "events": []string{"message.exploded"}}, `"type":"url_forbidden"},{"loc":["body","events",0]`},
			{map[string]any{"url": "ftp://example.com/hook"}, "url_parsing"},
			{map[string]any{"url": "https://example.com/hook", "events": []string{"message.exploded"}}, "enum"},
			{map[string]any{"enabled": true}, "missing"},
			{map[string]any{"url": "https://example.com/hook", "colour": "red"}, "extra_forbidden"},
		} {
			r := b.put(bad.body)
			require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "%v: %s", bad.body, r.Body)
			require.Contains(t, string(r.Body), bad.typ, "%v", bad.body)
		}

		r = b.put(map[string]any{"url": b.hooks.srv.URL + "/hook", "events": []string{"message.received"}})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		data := r.JSON(t)["data"].(map[string]any)
		secret, _ := data["secret"].(string)
		require.True(t, strings.HasPrefix(secret, "whsec_"), "the first PUT shows the secret: %s", r.Body)
		require.Equal(t, []any{"message.received"}, data["events"])
		require.Equal(t, true, data["enabled"])

		r = b.put(map[string]any{"url": b.hooks.srv.URL + "/hook2"})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		data = r.JSON(t)["data"].(map[string]any)
		require.NotContains(t, data, "secret", "an update does not show the secret again")
		require.Equal(t, true, data["all_events"], "without events every type is delivered")

		r = b.get(base)
		require.Equal(t, http.StatusOK, r.StatusCode)
		require.NotContains(t, r.JSON(t)["data"], "secret")
		require.NotContains(t, string(r.Body), secret)

		r = b.post(base+"/rotate-secret", nil, "Idempotency-Key", "rotate-1")
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		data = r.JSON(t)["data"].(map[string]any)
		rotated, _ := data["secret"].(string)
		require.True(t, strings.HasPrefix(rotated, "whsec_"))
		require.NotEqual(t, secret, rotated)
		require.Contains(t, data, "previous_secret_expires_at")
		r = b.post(base+"/rotate-secret", nil, "Idempotency-Key", "rotate-1")
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
		require.NotContains(t, string(r.Body), rotated, "a replay does not show the secret again")
		var stored [][]byte
		require.NoError(t, b.db.Bun().NewRaw("SELECT body FROM idempotency_responses").Scan(context.Background(), &stored))
		require.NotEmpty(t, stored)
		for _, body := range stored {
			require.NotContains(t, string(body), rotated, "the secret is not kept for replays")
		}

		r = b.client.Do(http.MethodGet, base, nil, b.otherAuth()...)
		require.Equal(t, http.StatusForbidden, r.StatusCode, "another account's credentials: %s", r.Body)
	})
}

func TestWebhookDeliveryThroughTheAPI(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupWebhooks(t, dialect)
		base := "/v1/accounts/" + b.account + "/webhook"
		r := b.put(map[string]any{"url": b.hooks.srv.URL + "/hook"})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		secret := r.JSON(t)["data"].(map[string]any)["secret"].(string)

		thread := b.inbound(t, "whatsapp", userA, agentA, "hello agent")
		in := b.hooks.ofType(t, "message.received")
		require.Equal(t, thread, in["thread_id"])
		require.Equal(t, "individual", in["thread_type"])
		require.Equal(t, userA, in["sender_number"])
		require.Equal(t, agentA, in["a1_phone_number"])
		require.Equal(t, b.account, in["a1_account_id"])
		require.Equal(t, "whatsapp", in["service"])
		require.Equal(t, "text", in["message_type"])
		require.Equal(t, false, in["is_from_agent"])
		require.Equal(t, map[string]any{"text": "hello agent"}, in["message_content"])
		require.Equal(t, "hello agent", in["content"])
		for _, f := range []string{"message_id", "sender_name", "timestamp", "agent_mentioned", "event_id"} {
			require.Contains(t, in, f)
		}

		r = b.post("/v1/messages/individual/"+b.account+"/send", map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "content": "hi user"})
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		sent := b.hooks.ofType(t, "message.sent")
		require.Equal(t, true, sent["is_from_agent"])
		require.Equal(t, r.JSON(t)["message_id"], sent["message_id"])
		status := b.hooks.ofType(t, "message.status")
		require.Equal(t, "delivered", status["status"])
		require.Equal(t, true, status["is_from_agent"])

		b.hooks.mu.Lock()
		for i, raw := range b.hooks.raw {
			wh, err := standardwebhooks.NewWebhook(secret)
			require.NoError(t, err)
			require.NoError(t, wh.Verify(raw, b.hooks.hdrs[i]), "every delivery verifies")
		}
		b.hooks.mu.Unlock()

		// The delivery log, filtered and paged.
		var list map[string]any
		require.Eventually(t, func() bool {
			r = b.get(base + "/deliveries?status=succeeded")
			list = r.JSON(t)
			return list["total_count"] == float64(3)
		}, 20*time.Second, 20*time.Millisecond, "three deliveries succeeded")
		r = b.get(base + "/deliveries?event_type=message.sent&limit=1")
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		page := r.JSON(t)
		require.Equal(t, float64(1), page["total_count"])
		d := page["data"].([]any)[0].(map[string]any)
		require.Equal(t, "message.sent", d["event_type"])
		attempts := d["attempts"].([]any)
		require.Len(t, attempts, 1)
		require.Equal(t, float64(200), attempts[0].(map[string]any)["status_code"])
		r = b.get(base + "/deliveries?limit=1&offset=1")
		require.Equal(t, true, r.JSON(t)["has_more"])
		r = b.get(base + "/deliveries?status=exploded")
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)

		// Replay, with an Idempotency-Key honoured.
		id := d["id"].(string)
		before := len(b.hooks.payloads())
		r = b.post(base+"/deliveries/"+id+"/replay", nil, "Idempotency-Key", "replay-1")
		require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
		again := b.post(base+"/deliveries/"+id+"/replay", nil, "Idempotency-Key", "replay-1")
		require.Equal(t, http.StatusAccepted, again.StatusCode)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
		require.Eventually(t, func() bool { return len(b.hooks.payloads()) == before+1 }, 20*time.Second, 10*time.Millisecond, "replayed once")
		r = b.post(base+"/deliveries/whk_nosuchdelivery/replay", nil)
		require.Equal(t, http.StatusNotFound, r.StatusCode)

		// The test event.
		r = b.post(base+"/test", nil)
		require.Equal(t, http.StatusAccepted, r.StatusCode, "%s", r.Body)
		require.Equal(t, "webhook.test", r.JSON(t)["data"].(map[string]any)["event_type"])
		b.hooks.ofType(t, "webhook.test")
	})
}

func TestPollingAndAcknowledgement(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setupWebhooks(t, dialect)
		b.inbound(t, "whatsapp", userA, agentA, "one")
		b.inbound(t, "whatsapp", userA, agentA, "two")
		b.inbound(t, "whatsapp", userA, agentA, "three")

		r := b.get("/v1/messages/updates?limit=2")
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		page := r.JSON(t)
		data := page["data"].([]any)
		require.Len(t, data, 2)
		require.Equal(t, "one", data[0].(map[string]any)["content"], "oldest first")
		require.Equal(t, "two", data[1].(map[string]any)["content"])
		cursor := page["next_cursor"].(string)
		require.Equal(t, data[1].(map[string]any)["event_id"], cursor)

		r = b.get("/v1/messages/updates?after=" + cursor)
		page = r.JSON(t)
		data = page["data"].([]any)
		require.Len(t, data, 1)
		require.Equal(t, "three", data[0].(map[string]any)["content"])
		last := page["next_cursor"].(string)
		r = b.get("/v1/messages/updates?after=" + last)
		page = r.JSON(t)
		require.Empty(t, page["data"])
		require.Equal(t, last, page["next_cursor"], "nothing new: the same cursor")

		r = b.client.Do(http.MethodGet, "/v1/messages/updates", nil, b.otherAuth()...)
		require.Empty(t, r.JSON(t)["data"], "another account sees none of these events")
		r = b.client.Do(http.MethodGet, "/v1/messages/updates?after="+cursor, nil, b.otherAuth()...)
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "another account's cursor is unknown")
		r = b.get("/v1/messages/updates?limit=0")
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)

		payload := data[0].(map[string]any)
		r = b.post("/v1/messages/wa/whatsapp/incoming", payload)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		require.Equal(t, "received", r.JSON(t)["status"])
		r = b.client.Do(http.MethodPost, "/v1/messages/wa/whatsapp/incoming", payload, b.otherAuth()...)
		require.Equal(t, http.StatusNotFound, r.StatusCode, "another account's message is unknown")
		r = b.post("/v1/messages/wa/whatsapp/incoming", map[string]any{"message_id": "msg_nosuchmessage"})
		require.Equal(t, http.StatusNotFound, r.StatusCode)
		r = b.post("/v1/messages/wa/whatsapp/incoming", map[string]any{"content": "no id"})
		require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode)
	})
}
