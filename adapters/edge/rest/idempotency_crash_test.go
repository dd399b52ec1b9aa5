package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/cronexpr"
	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	emailsandbox "github.com/switchboard-dev/switchboard/adapters/email/sandbox"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	whsender "github.com/switchboard-dev/switchboard/adapters/webhooks"
	"github.com/switchboard-dev/switchboard/application/accounts"
	appcron "github.com/switchboard-dev/switchboard/application/cron"
	appemail "github.com/switchboard-dev/switchboard/application/email"
	"github.com/switchboard-dev/switchboard/application/idempotency"
	"github.com/switchboard-dev/switchboard/application/messaging"
	appwebhooks "github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/domain/cron"
	"github.com/switchboard-dev/switchboard/domain/email"
	domain "github.com/switchboard-dev/switchboard/domain/messaging"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// crashBundle is a process's worth of use cases over one database, from
// which "processes" are built: handlers that share the database and
// nothing else that a crash would keep.
type crashBundle struct {
	db        *store.DB
	acc       *accounts.Service
	messaging *messaging.Service
	email     *appemail.Service
	cron      *appcron.Service
	hooks     *appwebhooks.Service
	account   string
	auth      []string
}

const crashLock = 15 * time.Second

func setupCrash(t *testing.T, dialect store.Dialect) *crashBundle {
	t.Helper()
	ctx := context.Background()
	db := dbtest.Open(t, dialect)
	keys, err := keyring.New([]byte(strings.Repeat("k", 32)))
	require.NoError(t, err)
	acc := accounts.NewService(db.AccountStore(), keys, accounts.Options{})
	a, cred, err := acc.CreateAccount(ctx, "Acme")
	require.NoError(t, err)
	_, err = acc.AddNumber(ctx, accounts.NumberInput{AccountID: a.ID, Number: agentA, Service: "whatsapp", Enabled: true, Provider: "sandbox"})
	require.NoError(t, err)
	msg := messaging.NewService(messaging.Deps{
		Committer: db, Store: db.MessagingStore(),
		Providers: messaging.ProviderSet{sandbox.Name: sandbox.Provider{}}, Opener: acc, Logger: quiet,
	})
	_, err = msg.Receive(ctx, messaging.InboundInput{AccountID: a.ID, Service: "whatsapp", From: userA, To: agentA,
		Content: domain.Content{Kind: domain.KindText, Text: "hello"}, Provider: "sandbox"})
	require.NoError(t, err)
	mail := appemail.NewService(appemail.Deps{
		Committer: db, Store: db.EmailStore(), Sender: emailsandbox.New(db.MailboxStore(), appemail.DefaultMailboxLimits, nil),
		ServiceDomain: "mail.example.com", Logger: quiet,
	})
	_, err = mail.CreateAddress(ctx, a.ID, "agent", "mail.example.com")
	require.NoError(t, err)
	guard := httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	cronSvc := appcron.NewService(appcron.Deps{
		Store: db.CronStore(), Parser: cronexpr.New(), URLs: guard,
	})
	hooks := appwebhooks.NewService(appwebhooks.Deps{
		Store: db.WebhookStore(), Keys: keys, URLs: guard,
		PlainHTTPAllowed: func(host string) bool { return host == "127.0.0.1" },
		Sender:           whsender.NewSender(guard.DialContext, nil), Logger: quiet,
	})
	_, err = hooks.Put(ctx, appwebhooks.PutInput{AccountID: a.ID, URL: "http://127.0.0.1:9/hooks"})
	require.NoError(t, err)
	return &crashBundle{db: db, acc: acc, messaging: msg, email: mail, cron: cronSvc, hooks: hooks, account: a.ID,
		auth: []string{"X-API-Key", cred.Key, "X-API-Secret", cred.Secret}}
}

// process is one run of the server over the bundle's database.
type process struct {
	idempotency idempotency.Store
	messaging   rest.MessagingUseCases
	email       rest.EmailUseCases
	cron        rest.CronUseCases
	webhooks    rest.WebhookUseCases
	// now is the process's clock: a later process runs after the first
	// one's claims lapsed.
	now func() time.Time
}

func (b *crashBundle) handler(t *testing.T, p process) http.Handler {
	t.Helper()
	if p.idempotency == nil {
		p.idempotency = b.db.IdempotencyKeys()
	}
	if p.messaging == nil {
		p.messaging = b.messaging
	}
	if p.email == nil {
		p.email = b.email
	}
	if p.cron == nil {
		p.cron = b.cron
	}
	if p.webhooks == nil {
		p.webhooks = b.hooks
	}
	h, err := rest.NewHandler(edge.Deps{
		Accounts: b.acc, Idempotency: edge.NewIdempotency(p.idempotency, crashLock, p.now, quiet), Registry: prometheus.NewRegistry(), Logger: quiet, Limits: unlimited, Now: p.now,
	}, rest.Deps{Accounts: b.acc, Messaging: p.messaging, Email: p.email, Cron: p.cron, Webhooks: p.webhooks, EmailDomain: "mail.example.com", Now: p.now})
	require.NoError(t, err)
	return h
}

// killed is what a crash leaves of a request: nothing after it runs.
type killed struct{}

// serve runs one request on h; crashed reports that the process died
// while serving it (a panic with killed, past the server's own recovery).
func serve(h http.Handler, w http.ResponseWriter, req *http.Request) (crashed bool) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(killed); !ok {
				panic(p)
			}
			crashed = true
		}
	}()
	h.ServeHTTP(w, req)
	return false
}

// crashingWriter dies when the response is about to reach the client,
// keeping what would have been sent.
type crashingWriter struct {
	header http.Header
	status int
	body   []byte
	// died: the process died here (a server's recovery may swallow the
	// panic, not the death).
	died bool
}

func (c *crashingWriter) Header() http.Header { return c.header }
func (c *crashingWriter) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}
func (c *crashingWriter) Write(p []byte) (int, error) {
	c.body = append(c.body, p...)
	c.died = true
	panic(killed{})
}

// killAfterReserve is an idempotency store whose process dies once the
// key is reserved.
type killAfterReserve struct{ idempotency.Store }

func (k killAfterReserve) ReserveKey(ctx context.Context, accountID, key, fingerprint string, now time.Time, lockFor time.Duration) (idempotency.Reservation, error) {
	res, err := k.Store.ReserveKey(ctx, accountID, key, fingerprint, now, lockFor)
	if err == nil && res.Outcome == idempotency.New {
		panic(killed{})
	}
	return res, err
}

// killAfterSend runs the real sends (and the other work that records its
// answer) and dies once they return: after their transactions committed,
// before any answer is written.
type killAfterSend struct {
	rest.MessagingUseCases
	rest.EmailUseCases
	rest.CronUseCases
}

// killAfterTest is killAfterSend for the webhook test (its use cases share
// method names with the cron ones).
type killAfterTest struct{ rest.WebhookUseCases }

func (k killAfterTest) Test(ctx context.Context, accountID string, answer *idempotency.Completion[webhook.Delivery]) (webhook.Delivery, error) {
	_, err := k.WebhookUseCases.Test(ctx, accountID, answer)
	if err == nil {
		panic(killed{})
	}
	return webhook.Delivery{}, err
}

func (k killAfterSend) Receive(ctx context.Context, in messaging.InboundInput) (domain.Message, error) {
	_, err := k.MessagingUseCases.Receive(ctx, in)
	if err == nil {
		panic(killed{})
	}
	return domain.Message{}, err
}

func (k killAfterSend) CreateGroup(ctx context.Context, in messaging.GroupInput) (domain.Thread, []domain.Participant, error) {
	_, _, err := k.MessagingUseCases.CreateGroup(ctx, in)
	if err == nil {
		panic(killed{})
	}
	return domain.Thread{}, nil, err
}

func (k killAfterSend) Create(ctx context.Context, accountID string, j cron.Job, answer *idempotency.Completion[cron.Job]) (cron.Job, error) {
	_, err := k.CronUseCases.Create(ctx, accountID, j, answer)
	if err == nil {
		panic(killed{})
	}
	return cron.Job{}, err
}

func (k killAfterSend) SendIndividual(ctx context.Context, in messaging.SendInput) (domain.Message, error) {
	_, err := k.MessagingUseCases.SendIndividual(ctx, in)
	if err == nil {
		panic(killed{})
	}
	return domain.Message{}, err
}

func (k killAfterSend) Send(ctx context.Context, in appemail.SendInput) (email.Email, error) {
	_, err := k.EmailUseCases.Send(ctx, in)
	if err == nil {
		panic(killed{})
	}
	return email.Email{}, err
}

// keyedRoute is a route whose work records its answer, its body and how
// to find what it stored.
type keyedRoute struct {
	name, path string
	body       map[string]any
	// status is the route's success.
	status int
	// stored lists the ids of what the route stores, newest first;
	// before is how many there were before the test's first request.
	stored string
	before int
	// id reads the stored row's id from the answer.
	id func(answer map[string]any) any
}

func (b *crashBundle) routes() []keyedRoute {
	field := func(name string) func(map[string]any) any {
		return func(a map[string]any) any { return a[name] }
	}
	inData := func(name string) func(map[string]any) any {
		return func(a map[string]any) any { return a["data"].(map[string]any)[name] }
	}
	return []keyedRoute{
		{name: "message", path: "/v1/messages/individual/" + b.account + "/send", status: http.StatusOK,
			body:   map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "content": "order 42 shipped"},
			stored: "SELECT id FROM messages WHERE direction <> 'inbound' ORDER BY id DESC", id: field("message_id")},
		{name: "email", path: "/v1/emails/" + b.account + "/send", status: http.StatusOK,
			body:   map[string]any{"sender_address": "agent@mail.example.com", "recipient_address": "user@example.org", "subject": "Order 42", "body": "Shipped."},
			stored: "SELECT id FROM emails ORDER BY id DESC", id: field("email_id")},
		{name: "inbound", path: "/v1/sandbox/" + b.account + "/inbound", status: http.StatusOK, before: 1,
			body:   map[string]any{"service": "whatsapp", "from": userA, "to": agentA, "message": "where is my order?"},
			stored: "SELECT id FROM messages WHERE direction = 'inbound' ORDER BY id DESC", id: field("message_id")},
		{name: "group", path: "/v1/sandbox/" + b.account + "/groups", status: http.StatusCreated,
			body:   map[string]any{"service": "whatsapp", "agent_number": agentA, "title": "Orders", "participants": []string{userA}},
			stored: "SELECT id FROM threads WHERE type = 'group' ORDER BY id DESC", id: inData("thread_id")},
		{name: "cron", path: "/v1/cron-jobs", status: http.StatusCreated,
			body: map[string]any{"endpoint_url": "http://127.0.0.1:9/hook", "frequency": "daily", "time": "09:00",
				"timezone": "UTC", "method": "POST"},
			stored: "SELECT id FROM cron_jobs ORDER BY id DESC", id: field("id")},
		{name: "webhook test", path: "/v1/accounts/" + b.account + "/webhook/test", status: http.StatusAccepted,
			body:   map[string]any{},
			stored: "SELECT id FROM webhook_deliveries ORDER BY id DESC", id: inData("id")},
	}
}

func (b *crashBundle) request(t *testing.T, rt keyedRoute, key string) *http.Request {
	t.Helper()
	body, err := json.Marshal(rt.body)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, rt.path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	for i := 0; i < len(b.auth); i += 2 {
		req.Header.Set(b.auth[i], b.auth[i+1])
	}
	return req
}

// storedIDs lists the ids of what the route stored, newest first.
func (b *crashBundle) storedIDs(t *testing.T, rt keyedRoute) []string {
	t.Helper()
	var ids []string
	require.NoError(t, b.db.Bun().NewRaw(rt.stored).Scan(context.Background(), &ids))
	return ids
}

// count is how many the test's requests stored on rt.
func (b *crashBundle) count(t *testing.T, rt keyedRoute) int {
	t.Helper()
	return len(b.storedIDs(t, rt)) - rt.before
}

// A crash between any two steps of a keyed request that creates work (after
// the key is reserved, after the work committed, before the answer reached
// the client) and a retry with the same key, once the crashed request's
// claim has lapsed, make exactly one message, email, inbound message,
// group or cron job, and, where the work had committed, answer what the
// first request would have.
func TestIdempotencyKeyCrashes(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		type crash struct {
			name string
			// process is the process that dies; writer is the client's
			// end of its response.
			process   func(b *crashBundle) process
			committed bool
		}
		crashes := []crash{
			{name: "AfterReserve", process: func(b *crashBundle) process {
				return process{idempotency: killAfterReserve{b.db.IdempotencyKeys()}}
			}},
			{name: "AfterCommit", committed: true, process: func(b *crashBundle) process {
				k := killAfterSend{b.messaging, b.email, b.cron}
				return process{messaging: k, email: k, cron: k, webhooks: killAfterTest{b.hooks}}
			}},
			{name: "BeforeAnswer", committed: true, process: func(*crashBundle) process { return process{} }},
		}
		for _, c := range crashes {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				b := setupCrash(t, dialect)
				first := b.handler(t, c.process(b))
				for _, rt := range b.routes() {
					key := "crash-" + rt.name
					w := &crashingWriter{header: http.Header{}}
					crashed := serve(first, w, b.request(t, rt, key))
					require.True(t, crashed || w.died, "the first process dies")
					if c.committed {
						require.Equal(t, 1, b.count(t, rt), "%s: the send committed before the crash", rt.name)
					} else {
						require.Equal(t, 0, b.count(t, rt), "%s: nothing committed before the crash", rt.name)
					}

					// The dead request's claim holds the key until it lapses.
					rec := httptest.NewRecorder()
					require.False(t, serve(b.handler(t, process{}), rec, b.request(t, rt, key)))
					if c.committed {
						require.Equal(t, rt.status, rec.Code, "%s: a committed send answers at once: %s", rt.name, rec.Body)
						require.Equal(t, "true", rec.Header().Get("Idempotent-Replayed"))
					} else {
						require.Equal(t, http.StatusConflict, rec.Code, "%s: %s", rt.name, rec.Body)
						require.Contains(t, rec.Body.String(), "idempotency_key_in_use")
						retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
						require.NoError(t, err, "Retry-After %q", rec.Header().Get("Retry-After"))
						require.True(t, retry >= 1 && retry <= int(crashLock/time.Second), "Retry-After %d within the claim", retry)
					}

					// The restarted process, after the claim lapsed.
					later := b.handler(t, process{now: func() time.Time { return time.Now().Add(crashLock + time.Second) }})
					rec = httptest.NewRecorder()
					require.False(t, serve(later, rec, b.request(t, rt, key)))
					require.Equal(t, rt.status, rec.Code, "%s: %s", rt.name, rec.Body)
					require.Equal(t, 1, b.count(t, rt), "%s: exactly one after the retry", rt.name)
					var answer map[string]any
					require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &answer))
					require.Equal(t, b.storedIDs(t, rt)[0], rt.id(answer), "%s: the answer names the one stored", rt.name)
					if c.name == "BeforeAnswer" {
						require.Equal(t, string(w.body), rec.Body.String(), "%s: the answer the first request was writing", rt.name)
						require.Equal(t, w.status, rec.Code)
					}

					// And every later retry answers the same.
					again := httptest.NewRecorder()
					require.False(t, serve(later, again, b.request(t, rt, key)))
					require.Equal(t, rec.Body.String(), again.Body.String())
					require.Equal(t, "true", again.Header().Get("Idempotent-Replayed"))
					require.Equal(t, 1, b.count(t, rt))
				}
			})
		}
	})
}
