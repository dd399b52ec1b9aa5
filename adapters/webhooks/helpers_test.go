package webhooks_test

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/httpguard"
	runner "github.com/switchboard-dev/switchboard/adapters/jobs"
	"github.com/switchboard-dev/switchboard/adapters/keyring"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	sender "github.com/switchboard-dev/switchboard/adapters/webhooks"
	"github.com/switchboard-dev/switchboard/application/webhooks"
	"github.com/switchboard-dev/switchboard/application/writes"
	"github.com/switchboard-dev/switchboard/domain/account"
	"github.com/switchboard-dev/switchboard/domain/event"
	"github.com/switchboard-dev/switchboard/domain/ident"
	"github.com/switchboard-dev/switchboard/domain/webhook"
)

// scaled is the production retry schedule divided by factor: the test
// clock of the retry tests.
func scaled(factor time.Duration) []time.Duration {
	out := make([]time.Duration, len(webhook.Schedule))
	for i, d := range webhook.Schedule {
		out[i] = d / factor
	}
	return out
}

// received is one request a test receiver got.
type received struct {
	Header http.Header
	Body   []byte
}

// receiver is an endpoint on 127.0.0.1 whose answers a test chooses.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter, r *http.Request)
	count  atomic.Int64
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 0, 512)
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			body = append(body, buf[:n]...)
			if err != nil {
				break
			}
		}
		rc.mu.Lock()
		rc.got = append(rc.got, received{Header: r.Header.Clone(), Body: body})
		rc.mu.Unlock()
		n := int(rc.count.Add(1))
		if rc.answer != nil {
			rc.answer(n, w, r)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// bundle is a webhooks service on a fresh database, with a job runner.
type bundle struct {
	db      *store.DB
	svc     *webhooks.Service
	sender  *sender.Sender
	runner  *runner.Runner
	account string
	secret  string
}

type options struct {
	schedule     []time.Duration
	timeout      time.Duration
	disableAfter time.Duration
	now          func() time.Time
	guard        *httpguard.Guard
	// noSaveCheck bypasses the save-time URL check.
	noSaveCheck bool
	noRunner    bool
}

func loopbackOnly() *httpguard.Guard {
	return httpguard.New(httpguard.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
}

func plainLoopback(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func setup(t *testing.T, dialect store.Dialect, o options) *bundle {
	t.Helper()
	fanOut := webhooks.NewFanOut(o.now)
	db := dbtest.OpenWith(t, dialect, store.Options{
		Reactions: func(c *store.Conn) writes.Reactions { return fanOut.Through(store.WebhookStore{Conn: c}) }})
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	keys, err := keyring.New(key)
	require.NoError(t, err)
	if o.guard == nil {
		o.guard = loopbackOnly()
	}
	if o.schedule == nil {
		o.schedule = scaled(10000)
	}
	snd := sender.NewSender(o.guard.DialContext, nil)
	deps := webhooks.Deps{
		Store: db.WebhookStore(), Keys: keys, URLs: o.guard,
		PlainHTTPAllowed: plainLoopback, Sender: snd, Now: o.now, Schedule: o.schedule, Timeout: o.timeout,
		DisableAfter: o.disableAfter, OrderWait: 2 * time.Millisecond,
	}
	if o.noSaveCheck {
		deps.URLs = nil
	}
	b := &bundle{db: db, svc: webhooks.NewService(deps), sender: snd}
	now := time.Now().UTC().Truncate(time.Microsecond)
	a := account.Account{ID: ident.New(ident.Account), Name: "hooks", CreatedAt: now, UpdatedAt: now}
	require.NoError(t, db.AccountStore().InsertAccount(context.Background(), a))
	b.account = a.ID
	if !o.noRunner {
		b.startRunner(t)
	}
	return b
}

func (b *bundle) startRunner(t *testing.T) {
	r, err := runner.New(b.db.JobQueue(), b.db, runner.Config{Workers: 16, PollInterval: 20 * time.Millisecond},
		runner.Kind{Name: webhooks.DeliverKind, Handler: b.svc, Timeout: time.Minute,
			PaceFor: func(string) runner.Pace { return runner.Pace{MaxConcurrent: 1} }})
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	b.runner = r
	t.Cleanup(func() { b.stopRunner() })
}

func (b *bundle) stopRunner() {
	if b.runner != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.runner.Stop(ctx)
		b.runner = nil
	}
}

// put sets the endpoint and keeps the secret.
func (b *bundle) put(t *testing.T, url string) {
	t.Helper()
	v, err := b.svc.Put(context.Background(), webhooks.PutInput{AccountID: b.account, URL: url})
	require.NoError(t, err)
	require.NotEmpty(t, v.Secret)
	b.secret = v.Secret
}

// emit records an event of the thread with what the webhooks add to it,
// in one commit, as the messaging use cases do.
func (b *bundle) emit(t *testing.T, thread string, n int) event.Event {
	t.Helper()
	id := ident.New(ident.Event)
	payload, _ := json.Marshal(map[string]any{"event": event.MessageReceived, "event_id": id, "thread_id": thread, "n": n, "content": fmt.Sprintf("hello %d", n)})
	e := event.Event{ID: id, AccountID: b.account, Type: event.MessageReceived, ThreadID: thread, Payload: payload, CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	require.NoError(t, b.db.Commit(context.Background(), writes.Batch{Events: []event.Event{e}}))
	return e
}

// deliveries lists every delivery of the bundle's account.
func (b *bundle) deliveries(t *testing.T, status webhook.Status) []webhook.Delivery {
	t.Helper()
	list, _, err := b.svc.Deliveries(context.Background(), webhooks.DeliveryQuery{AccountID: b.account, Status: status, Limit: 100000})
	require.NoError(t, err)
	return list
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// verifyStandard checks a request with the Standard Webhooks reference
// library (timestamp tolerance included).
func verifyStandard(secret string, r received) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(r.Body, r.Header)
}

// verifyLegacy checks x-signature: hex HMAC-SHA256 of x-timestamp followed
// by the body, keyed with the whole secret string.
func verifyLegacy(secret string, r received) bool {
	return hmacEqualHex(legacySignature(secret, r.Header.Get("x-timestamp"), r.Body), r.Header.Get("x-signature"))
}

// legacySignature is x-signature computed independently of the signer.
func legacySignature(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

func hmacEqualHex(a, b string) bool {
	return len(a) == len(b) && a == b && a != ""
}

// recordingDialer records every dial and refuses it: no test connects to
// anything but what the guard let through, and that is recorded.
type recordingDialer struct {
	mu    sync.Mutex
	dials []string
}

func (d *recordingDialer) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials = append(d.dials, address)
	return nil, fmt.Errorf("recording dialer refuses %s", address)
}

func (d *recordingDialer) recorded() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dials...)
}

// fakeResolver answers names from a table (DNS rebinding: a public-looking
// name that resolves to a forbidden address).
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// rawReceiver is an endpoint on 127.0.0.1 that writes its answers byte by
// byte, as a test chooses (answers net/http's server would not send): it
// reads each request on a kept-alive connection and calls answer with the
// request's number (from 1) and the connection's writer, flushed after.
type rawReceiver struct {
	url   string
	count atomic.Int64
}

func newRawReceiver(t *testing.T, answer func(n int, w *bufio.Writer) error) *rawReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rc := &rawReceiver{url: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br, bw := bufio.NewReader(c), bufio.NewWriter(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if answer(int(rc.count.Add(1)), bw) != nil || bw.Flush() != nil {
						return
					}
				}
			})
		}
	})
	return rc
}
