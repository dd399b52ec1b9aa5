package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/edge/rest/openapitest"
	"github.com/switchboard-dev/switchboard/adapters/store"
)

// inbound posts a sandbox inbound message from user to agent in acct (one
// message.received webhook delivery) and returns its id.
func inbound(t *testing.T, c *openapitest.Client, acct createdAccount, agent, user string) string {
	t.Helper()
	r := c.Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
		map[string]any{"service": "whatsapp", "from": user, "to": agent, "message": "hi"}, auth(acct.APIKey, acct.APISecret)...)
	require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	return r.JSON(t)["message_id"].(string)
}

// startReplicas starts n servers on the bundle's Postgres database at once
// and waits until each is ready.
func (b *testBundle) startReplicas(t *testing.T, n int, args ...string) []*serverProc {
	t.Helper()
	replicas := make([]*serverProc, n)
	for i := range replicas {
		replicas[i] = launchServer(t, b.env, append([]string{"--database-url", b.dbURL}, args...)...)
	}
	for _, r := range replicas {
		r.waitListening(t)
		r.waitReady(t)
	}
	return replicas
}

// Three replicas hold one endpoint limit between them: once the replica
// holding account A's hanging webhook found it stalled, the others give it
// no more than the limit (4) less what runs (each used to take up to its
// own ceiling, 14 of its 16 workers, so about 30 where it now holds 4);
// account B's events go through the same replicas meanwhile,
// and A's other events wait in the queue. A's hanging endpoint holds at
// most its share of all 48 workers (12), and less: its limit.
func TestReplicasHoldOneEndpointLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, store.Postgres)
	slow, fast := b.createAccount(t, "Hanging receiver"), b.createAccount(t, "Healthy receiver")
	b.addNumber(t, slow.AccountID, "+15550001001")
	b.addNumber(t, fast.AccountID, "+15550002002")
	hanging := newHangingReceiver(t)
	healthy := newHookReceiver(t)
	var hook webhookOut
	b.cliJSON(t, &hook, "webhook", "set", "--account", slow.AccountID, "--url", hanging.URL, "--allow-private-urls", "127.0.0.1/32")
	b.cliJSON(t, &hook, "webhook", "set", "--account", fast.AccountID, "--url", healthy.URL, "--allow-private-urls", "127.0.0.1/32")
	healthy.setSecret(t, hook.Secret)

	replicas := b.startReplicas(t, 3, "--allow-private-urls", "127.0.0.1/32", "--job-workers", "16")
	clients := make([]*openapitest.Client, len(replicas))
	for i, r := range replicas {
		clients[i] = r.client(t)
	}

	// One of A's events reaches its receiver and hangs; a second later the
	// replica holding it finds A's webhook stalled and marks it for all.
	inbound(t, clients[0], slow, "+15550001001", "+14155550000")
	require.Eventually(t, func() bool { holding, _, _ := hanging.counts(); return holding == 1 }, chWait, chTick,
		"A's first delivery reaches its receiver")
	time.Sleep(2 * time.Second)

	const backlog = 60
	for i := range backlog {
		inbound(t, clients[i%3], slow, "+15550001001", fmt.Sprintf("+1415555%04d", i+1))
	}
	start := time.Now()
	messageID := inbound(t, clients[1], fast, "+15550002002", "+14155550199")
	require.Eventually(t, func() bool { return len(healthy.find("message.received", messageID)) == 1 }, fairWait, chTick,
		"B's webhook gets its event while A's receiver hangs")
	took := time.Since(start)
	// The replicas have had a few claims each since A's backlog came.
	time.Sleep(time.Second)

	holding, peak, got := hanging.counts()
	require.LessOrEqual(t, peak, 4, "A's stalled webhook holds its limit at most, across the replicas")
	require.Positive(t, holding, "A's receiver still holds deliveries")
	require.Less(t, got, backlog, "A's other events wait in the queue")
	require.Empty(t, healthy.rejections())
	t.Logf("B's event delivered %s after its send; A's receiver held at most %d requests (%d so far)", took, peak, got)
	hanging.release()
	for _, r := range replicas {
		r.stop(t)
	}
}

// flakyReceiver answers 503 while down, and records when each request
// came and when it was answered.
type flakyReceiver struct {
	URL  string
	down atomic.Bool
	mu   sync.Mutex
	reqs []span
}

type span struct{ start, end time.Time }

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	t.Helper()
	f := &flakyReceiver{}
	f.down.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := span{start: time.Now()}
		if f.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		} else {
			// Long enough for another replica's claim to come meanwhile,
			// had the breaker let a second request through.
			time.Sleep(200 * time.Millisecond)
			w.WriteHeader(http.StatusOK)
		}
		s.end = time.Now()
		f.mu.Lock()
		f.reqs = append(f.reqs, s)
		f.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL + "/hooks"
	return f
}

func (f *flakyReceiver) requests() []span {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]span(nil), f.reqs...)
}

// A breaker one replica opened holds for the others: replica 1 alone sees
// account A's webhook fail three times and opens its breaker (for 15 s);
// replicas 2 and 3, which never saw it fail, take over and deliver B's
// events but send A's receiver nothing until the open time ends. Then one
// probe goes out, from one replica, and only once it succeeded do A's
// other events follow.
func TestReplicasShareTheBreaker(t *testing.T) {
	t.Parallel()
	b := setup(t, store.Postgres)
	a, other := b.createAccount(t, "Failing receiver"), b.createAccount(t, "Healthy receiver")
	b.addNumber(t, a.AccountID, "+15550003003")
	b.addNumber(t, other.AccountID, "+15550004004")
	flaky := newFlakyReceiver(t)
	healthy := newHookReceiver(t)
	var hook webhookOut
	b.cliJSON(t, &hook, "webhook", "set", "--account", a.AccountID, "--url", flaky.URL, "--allow-private-urls", "127.0.0.1/32")
	b.cliJSON(t, &hook, "webhook", "set", "--account", other.AccountID, "--url", healthy.URL, "--allow-private-urls", "127.0.0.1/32")
	healthy.setSecret(t, hook.Secret)
	const open = 15 * time.Second
	flags := []string{"--allow-private-urls", "127.0.0.1/32", "--job-breaker-failures", "3", "--job-breaker-open", open.String()}

	first := b.startReplicas(t, 1, flags...)[0]
	c := first.client(t)
	for i := range 3 {
		inbound(t, c, a, "+15550003003", fmt.Sprintf("+1415556%04d", i))
		require.Eventually(t, func() bool { return len(flaky.requests()) == i+1 }, chWait, chTick, "attempt %d fails", i+1)
	}
	opened := flaky.requests()[2].end
	// Replicas that never saw A's receiver fail take over.
	others := b.startReplicas(t, 2, flags...)
	first.stop(t)

	for i := range 5 {
		inbound(t, others[i%2].client(t), a, "+15550003003", fmt.Sprintf("+1415557%04d", i))
	}
	healthy.waitOne(t, "message.received", inbound(t, others[1].client(t), other, "+15550004004", "+14155550199"))
	// Until the probe's time the others send A's receiver nothing.
	time.Sleep(time.Until(opened.Add(open - time.Second)))
	require.Equal(t, 3, len(flaky.requests()), "replicas 2 and 3 keep the breaker replica 1 opened")
	require.Less(t, time.Since(opened), open, "the machine was too slow to see the open time out")

	flaky.down.Store(false)
	require.Eventually(t, func() bool { return len(flaky.requests()) >= 3+8 }, chWait+open, chTick,
		"the probe closes the breaker: A's eight events (three retried) are delivered")
	reqs := flaky.requests()
	probe := reqs[3]
	require.GreaterOrEqual(t, probe.start.Sub(opened), open-time.Second, "the probe waits for the open time")
	for _, later := range reqs[4:] {
		require.False(t, later.start.Before(probe.end), "one probe across the replicas: nothing else until it answered")
	}
	require.Empty(t, healthy.rejections())
	for _, r := range others {
		r.stop(t)
	}
}
