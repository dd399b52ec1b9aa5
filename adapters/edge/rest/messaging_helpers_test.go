package rest_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
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
	"github.com/switchboard-dev/switchboard/adapters/edge"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest"
	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/messaging"
)

// The agent numbers of the messaging tests. The first account has a
// WhatsApp number (agentA), a second WhatsApp number (agentB), a Telegram
// number (agentTG) and a disabled WhatsApp number; the other account has
// one WhatsApp number of its own.
const (
	agentA        = "+14155550100"
	agentB        = "+14155550102"
	agentTG       = "+14155550103"
	agentDisabled = "+14155550104"
	agentOther    = "+14155550199"

	userA = "+14155550111"
	userB = "+14155550112"
)

// msgBundle is the real HTTP interface over the real account and messaging
// use cases, a fresh database, the sandbox channel and a running job
// runner, so that queued messages are really delivered.
type msgBundle struct {
	callers
	// media serves files for media messages on 127.0.0.1.
	media *httptest.Server
}

// msgOptions vary the bundle.
type msgOptions struct {
	// guard replaces the SSRF guard, which by default allows 127.0.0.1
	// so that media on the local test server can be fetched.
	guard *httpguard.Guard
}

var quiet = slog.New(slog.DiscardHandler)

func setupMessaging(t *testing.T, dialect store.Dialect, opts msgOptions) *msgBundle {
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
	for _, n := range []accounts.NumberInput{
		{AccountID: a.ID, Number: agentA, Service: "whatsapp", Enabled: true},
		{AccountID: a.ID, Number: agentB, Service: "whatsapp", Enabled: true},
		{AccountID: a.ID, Number: agentTG, Service: "telegram", Enabled: true},
		{AccountID: a.ID, Number: agentDisabled, Service: "whatsapp", Enabled: false},
		{AccountID: o.ID, Number: agentOther, Service: "whatsapp", Enabled: true},
	} {
		n.Provider = "sandbox"
		_, err := acc.AddNumber(ctx, n)
		require.NoError(t, err)
	}

	guard := opts.guard
	if guard == nil {
		guard = httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	}
	svc := messaging.NewService(messaging.Deps{
		Committer: db, Store: db.MessagingStore(),
		Providers: messaging.ProviderSet{sandbox.Name: sandbox.Provider{}},
		Opener:    acc, URLs: guard, Media: guard.NewProber(5 * time.Second), Logger: quiet,
		MediaLinks: messaging.NewMediaLinks(keys, "http://switchboard.test", time.Hour),
	})
	jobs, err := runner.New(db.JobQueue(), db, runner.Config{PollInterval: 20 * time.Millisecond, Logger: quiet},
		runner.Kind{Name: messaging.DeliverKind, Handler: svc, Backoff: messaging.DeliveryBackoff, Timeout: 10 * time.Second})
	require.NoError(t, err)
	require.NoError(t, jobs.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = jobs.Stop(stopCtx)
	})

	h, err := rest.NewHandler(edge.Deps{
		Accounts: acc, Idempotency: edge.NewIdempotency(db.IdempotencyKeys(), 0, nil, quiet), Ready: db.Ready, Registry: prometheus.NewRegistry(), Logger: quiet, Limits: unlimited,
	}, rest.Deps{Accounts: acc, Messaging: svc})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	media := httptest.NewServer(mediaHandler())
	t.Cleanup(media.Close)
	return &msgBundle{
		callers: callers{
			client: openapitest.New(t, srv.URL), db: db,
			account: a.ID, key: cred.Key, secret: cred.Secret,
			other: o.ID, oKey: oCred.Key, oSecret: oCred.Secret,
		},
		media: media,
	}
}

// pngBytes is the start of a PNG file; the sandbox never decodes it.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// mediaHandler serves the files the media tests point at.
func mediaHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/image.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	})
	mux.HandleFunc("/report.pdf", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write([]byte("%PDF-1.4\n"))
	})
	// big.png sends more bytes than an image may have, without declaring
	// its length.
	mux.HandleFunc("/big.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		chunk := bytes.Repeat([]byte{0}, 64<<10)
		for sent := 0; sent <= 5<<20; sent += len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	// declared-big.png declares a length over the limit and sends little.
	mux.HandleFunc("/declared-big.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Content-Length", "6291456")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(pngBytes)
	})
	mux.HandleFunc("/notes.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("not a picture"))
	})
	return mux
}

// callers are the two accounts a REST test acts as, the client that
// validates every response against the OpenAPI document, and the database.
type callers struct {
	client  *openapitest.Client
	db      *store.DB
	account string
	key     string
	secret  string
	other   string
	oKey    string
	oSecret string
}

// auth is the first account's credentials as header pairs, plus extra.
func (b *callers) auth(extra ...string) []string {
	return append([]string{"X-API-Key", b.key, "X-API-Secret", b.secret}, extra...)
}

// otherAuth is the other account's credentials.
func (b *callers) otherAuth(extra ...string) []string {
	return append([]string{"X-API-Key", b.oKey, "X-API-Secret", b.oSecret}, extra...)
}

// post sends a JSON body as the first account.
func (b *callers) post(path string, body any, extra ...string) openapitest.Response {
	return b.client.Do(http.MethodPost, path, body, b.auth(extra...)...)
}

// get reads as the first account.
func (b *callers) get(path string) openapitest.Response {
	return b.client.Do(http.MethodGet, path, nil, b.auth()...)
}

// inbound has user write to agent on service through the sandbox and
// returns the thread id.
func (b *msgBundle) inbound(t *testing.T, service, user, agent, text string) string {
	t.Helper()
	r := b.post("/v1/sandbox/"+b.account+"/inbound", map[string]any{"service": service, "from": user, "to": agent, "content": text})
	require.Equal(t, http.StatusOK, r.StatusCode, "inbound: %s", r.Body)
	body := r.JSON(t)
	require.Equal(t, "success", body["status"])
	return body["thread_id"].(string)
}

// group creates a sandbox group with agent as its member and returns its id.
func (b *msgBundle) group(t *testing.T, service, agent, title string, participants ...string) string {
	t.Helper()
	r := b.post("/v1/sandbox/"+b.account+"/groups", map[string]any{"service": service, "agent_number": agent, "title": title, "participants": participants})
	require.Equal(t, http.StatusCreated, r.StatusCode, "group: %s", r.Body)
	return r.JSON(t)["data"].(map[string]any)["thread_id"].(string)
}

// details reads a message's details and returns its data object.
func (b *msgBundle) details(t *testing.T, id string) map[string]any {
	t.Helper()
	r := b.get("/v1/messages/individual/" + b.account + "/get-details/" + id)
	require.Equal(t, http.StatusOK, r.StatusCode, "details: %s", r.Body)
	return r.JSON(t)["data"].(map[string]any)
}

// waitStatus waits until a message's status is want (or another final
// status) and returns its details, read through the API.
func (b *msgBundle) waitStatus(t *testing.T, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		// The database is polled, not the API, so that waiting costs no
		// validated requests.
		var status string
		require.NoError(t, b.db.Bun().NewRaw("SELECT status FROM messages WHERE id = ?", id).Scan(context.Background(), &status))
		if status == want || status == "failed" || status == "delivered" || status == "read" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %s is still %s, want %s", id, status, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	data := b.details(t, id)
	require.Equal(t, want, data["status"], "message %s: %v", id, data)
	return data
}

// recent returns the recent messages of a thread.
func (b *msgBundle) recent(t *testing.T, threadID string) []any {
	t.Helper()
	r := b.get("/v1/messages/threads/" + b.account + "/get-recent/" + threadID)
	require.Equal(t, http.StatusOK, r.StatusCode, "recent: %s", r.Body)
	return r.JSON(t)["data"].([]any)
}

// counts is what the database holds: messages and delivery jobs.
type counts struct{ messages, jobs int }

func (b *msgBundle) counts(t *testing.T) counts {
	t.Helper()
	var c counts
	ctx := context.Background()
	require.NoError(t, b.db.Bun().NewRaw("SELECT COUNT(*) FROM messages").Scan(ctx, &c.messages))
	require.NoError(t, b.db.Bun().NewRaw("SELECT COUNT(*) FROM jobs").Scan(ctx, &c.jobs))
	return c
}

// job reads the delivery job of a message.
func (b *msgBundle) job(t *testing.T, messageID string) (state string, attempt int) {
	t.Helper()
	payload := []byte(`{"message_id":"` + messageID + `"}`)
	err := b.db.Bun().NewRaw("SELECT state, attempt FROM jobs WHERE kind = ? AND payload = ?", messaging.DeliverKind, payload).Scan(context.Background(), &state, &attempt)
	require.NoError(t, err)
	return state, attempt
}

// requireInvalid checks a 422 whose detail has an item at loc, and returns
// that item.
func requireInvalid(t *testing.T, r openapitest.Response, loc ...any) map[string]any {
	t.Helper()
	require.Equal(t, http.StatusUnprocessableEntity, r.StatusCode, "body: %s", r.Body)
	if item := findLoc(t, r, loc); item != nil {
		require.NotEmpty(t, item["msg"])
		require.NotEmpty(t, item["type"])
		return item
	}
	t.Fatalf("no validation error at %v: %s", loc, r.Body)
	return nil
}

// findLoc returns the item of a 422 body at loc, or nil. A path segment
// written with dots ("content.text") counts as its parts.
func findLoc(t *testing.T, r openapitest.Response, loc []any) map[string]any {
	t.Helper()
	if r.StatusCode != http.StatusUnprocessableEntity {
		return nil
	}
	items, ok := r.JSON(t)["detail"].([]any)
	require.True(t, ok, "detail must be a list: %s", r.Body)
	for _, it := range items {
		item := it.(map[string]any)
		if sameLoc(item["loc"], loc) {
			return item
		}
	}
	return nil
}

// sameLoc compares a decoded loc with the expected one.
func sameLoc(got any, want []any) bool {
	list, ok := got.([]any)
	if !ok {
		return false
	}
	var flat []any
	for _, p := range list {
		if s, ok := p.(string); ok {
			for _, part := range strings.Split(s, ".") {
				flat = append(flat, part)
			}
			continue
		}
		flat = append(flat, p)
	}
	if len(flat) != len(want) {
		return false
	}
	for i := range flat {
		switch w := want[i].(type) {
		case int:
			if f, ok := flat[i].(float64); !ok || f != float64(w) {
				return false
			}
		default:
			if flat[i] != w {
				return false
			}
		}
	}
	return true
}

// edit returns a copy of valid with keys set (nil values delete).
func edit(valid map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range valid {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// recordingDialer records every address a guard tries to connect to and
// connects to none.
type recordingDialer struct {
	mu    sync.Mutex
	dials []string
}

func (d *recordingDialer) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dials = append(d.dials, address)
	d.mu.Unlock()
	return nil, errors.New("recording dialer never connects")
}

func (d *recordingDialer) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dials...)
}

// flipResolver answers "not found" until flipped, then a private address:
// a name that resolves to a forbidden range only after it was checked.
type flipResolver struct {
	mu      sync.Mutex
	flipped bool
}

func (f *flipResolver) flip() { f.mu.Lock(); f.flipped = true; f.mu.Unlock() }

func (f *flipResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flipped && host == "media.rebind.example" {
		return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}
