package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/uptrace/bun"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
)

// takeOverBound is what the tests allow for the work of a killed replica to
// be taken over: generous for a loaded machine; the figure (a second or
// two) is the recovery bench's.
const takeOverBound = 8 * time.Second

// gateReceiver is a webhook receiver that holds every request until it is
// opened (then answers 200 at once, after delay when set) and records, per
// webhook-id, how many requests came and how many it held at once.
type gateReceiver struct {
	URL   string
	delay time.Duration

	mu       sync.Mutex
	open     chan struct{}
	holding  map[string]int
	requests map[string]int
	overlaps []string
}

func newGateReceiver(t *testing.T, delay time.Duration) *gateReceiver {
	t.Helper()
	g := &gateReceiver{delay: delay, open: make(chan struct{}), holding: map[string]int{}, requests: map[string]int{}}
	if delay > 0 {
		close(g.open)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		// Reading the body to its end is what lets the server notice a
		// sender that goes away (a killed replica): only then does it watch
		// the connection and cancel the request's context when it closes.
		// Unread, a cut request would count as held until release.
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		g.mu.Lock()
		g.requests[id]++
		if g.holding[id]++; g.holding[id] > 1 {
			g.overlaps = append(g.overlaps, id)
		}
		open := g.open
		g.mu.Unlock()
		defer func() { g.mu.Lock(); g.holding[id]--; g.mu.Unlock() }()
		select {
		case <-open:
		case <-r.Context().Done():
			return
		}
		if g.delay > 0 {
			select {
			case <-time.After(g.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.release)
	g.URL = srv.URL + "/hooks"
	return g
}

// release answers the held requests and every later one.
func (g *gateReceiver) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// counts are the requests per webhook-id, and the ids that had two at once.
func (g *gateReceiver) counts() (map[string]int, []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int, len(g.requests))
	for id, n := range g.requests {
		out[id] = n
	}
	return out, append([]string(nil), g.overlaps...)
}

// runningJob is a running job with its holder's process id.
type runningJob struct {
	ID      int64  `bun:"id"`
	Kind    string `bun:"kind"`
	Attempt int    `bun:"attempt"`
	PID     int    `bun:"pid"`
	Owner   string `bun:"lease_owner"`
}

func runningJobs(t *testing.T, db *store.DB) []runningJob {
	t.Helper()
	var rows []runningJob
	require.NoError(t, db.Bun().NewRaw(`SELECT j.id, j.kind, j.attempt, p.pid, j.lease_owner FROM jobs j
		JOIN processes p ON p.id = j.lease_owner WHERE j.state = 'running' ORDER BY j.id`).Scan(context.Background(), &rows))
	return rows
}

// Three replicas share the work; one is killed with SIGKILL while it holds
// webhook deliveries (hanging at their receiver) and sends (slow at their
// provider). Its work is taken over by the others within seconds, long
// before its leases end (10 s for sends, 20 s for deliveries), at the
// attempt it was at: the cut-off runs used none. Nothing is lost; the
// receiver never holds two requests of one delivery at once, a delivery
// reached it twice only if it was in flight at the kill (logged as an
// interrupted attempt, not counted), and the provider got a send twice only
// if it was in flight at the kill.
func TestKilledReplicaWorkIsTakenOverAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, store.Postgres)
	acct := b.createAccount(t, "Liveness")
	headers := auth(acct.APIKey, acct.APISecret)
	// A sandbox number for inbound messages (each user its own thread, so
	// their deliveries run side by side), a Cloud API number behind a slow
	// provider for sends.
	const sandboxAgent = "+15550003003"
	b.addNumber(t, acct.AccountID, sandboxAgent)
	wa := whatsappfake.New(t, chWAPNID, chWAToken, chWADisplay)
	provider := newRecordingAPI(t, wa.URL, 3*time.Second)
	var num numberOut
	b.cliJSON(t, &num, "numbers", "add", "--account", acct.AccountID, "--number", chWAAgent,
		"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", chWAPNID,
		"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", provider.URL)
	receiver := newGateReceiver(t, 0)
	var hook webhookOut
	b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", receiver.URL, "--allow-private-urls", "127.0.0.1/32")

	replicas := make([]*serverProc, 3)
	for i := range replicas {
		replicas[i] = b.serve(t, "--allow-private-urls", "127.0.0.1/32", "--rate-limit", "0", "--job-workers", "8")
	}
	client := replicas[0].client(t)
	// The user writes first: a business answers within a day of it.
	inbound := whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.liveness-inbound", "hello")
	r := client.Do(http.MethodPost, "/v1/providers/whatsapp/"+num.NumberID+"/webhook", inbound,
		"X-Hub-Signature-256", whatsappfake.Sign(inbound, chWASecret))
	require.Equal(t, http.StatusOK, r.StatusCode, "inbound: %s", r.Body)
	const users, sends = 24, 12
	for i := range users {
		r := client.Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": fmt.Sprintf("+1415666%04d", i), "to": sandboxAgent, "message": "hi"}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
	}
	var texts []string
	for i := range sends {
		text := fmt.Sprintf("liveness send %d", i)
		r := replicas[i%3].client(t).Do(http.MethodPost, "/v1/messages/individual/"+acct.AccountID+"/send",
			map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550111", "content": text}, headers...)
		require.Equal(t, http.StatusOK, r.StatusCode, "%s", r.Body)
		texts = append(texts, text)
	}

	// The victim: a replica that holds deliveries and sends at once.
	db, err := store.Open(ctx, b.dbURL, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	var victim *serverProc
	var held []runningJob
	require.Eventually(t, func() bool {
		byPID := map[int][]runningJob{}
		for _, j := range runningJobs(t, db) {
			byPID[j.PID] = append(byPID[j.PID], j)
		}
		for _, srv := range replicas {
			kinds := map[string]bool{}
			for _, j := range byPID[srv.cmd.Process.Pid] {
				kinds[j.Kind] = true
			}
			if kinds["webhook.deliver"] && kinds["message.deliver"] {
				victim, held = srv, byPID[srv.cmd.Process.Pid]
				return true
			}
		}
		return false
	}, chWait, 20*time.Millisecond, "a replica holds deliveries and sends at once")
	victim.signal(t, syscall.SIGKILL)
	victim.waitExit(t, exitTimeout)
	killed := time.Now()
	owner := held[0].Owner

	// Each of its jobs runs again elsewhere (or is done), at its attempt.
	var took time.Duration
	require.Eventually(t, func() bool {
		var rows []runningJob
		require.NoError(t, db.Bun().NewRaw(`SELECT id, kind, attempt, COALESCE(lease_owner, '') AS lease_owner FROM jobs WHERE id IN (?)`,
			idList(held)).Scan(ctx, &rows))
		for _, j := range rows {
			if j.Owner == owner {
				return false
			}
		}
		took = time.Since(killed)
		return true
	}, takeOverBound, 10*time.Millisecond, "the killed replica's %d jobs are taken over", len(held))
	var again []runningJob
	require.NoError(t, db.Bun().NewRaw(`SELECT id, kind, attempt, lease_owner FROM jobs WHERE id IN (?) AND state = 'running'`,
		idList(held)).Scan(ctx, &again))
	attemptAt := map[int64]int{}
	for _, j := range held {
		attemptAt[j.ID] = j.Attempt
	}
	for _, j := range again {
		require.Equal(t, attemptAt[j.ID], j.Attempt, "job %d (%s) runs again at the attempt its process's death cut off", j.ID, j.Kind)
	}
	t.Logf("%d jobs of the killed replica taken over %s after the kill", len(held), took.Round(time.Millisecond))

	receiver.release()
	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, db.Bun().NewRaw(`SELECT (SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded')
			+ (SELECT count(*) FROM messages WHERE status = 'queued')`).Scan(ctx, &pending))
		return pending == 0
	}, chWait, chTick, "every delivery succeeded and every send left queued")

	// Deliveries: none twice at once; twice only when cut off at the kill,
	// which their log tells, uncounted.
	var cut []string
	require.NoError(t, db.Bun().NewRaw(`SELECT d.id FROM webhook_deliveries d JOIN webhook_attempts a ON a.delivery_id = d.id
		WHERE a.interrupted ORDER BY d.id`).Scan(ctx, &cut))
	require.NotEmpty(t, cut, "the deliveries in flight at the kill are logged as interrupted")
	wasCut := map[string]bool{}
	for _, id := range cut {
		require.False(t, wasCut[id], "delivery %s interrupted once", id)
		wasCut[id] = true
	}
	requests, overlaps := receiver.counts()
	require.Empty(t, overlaps, "a delivery's attempts never overlap")
	var deliveries []struct {
		ID       string `bun:"id"`
		Attempts int    `bun:"attempts"`
		Logged   int    `bun:"logged"`
	}
	require.NoError(t, db.Bun().NewRaw(`SELECT d.id, d.attempts, (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id AND NOT a.interrupted) AS logged
		FROM webhook_deliveries d`).Scan(ctx, &deliveries))
	require.GreaterOrEqual(t, len(deliveries), users+1)
	for _, d := range deliveries {
		require.Equal(t, d.Logged, d.Attempts, "delivery %s counts the attempts it logged, not the interrupted one", d.ID)
		if !wasCut[d.ID] {
			require.Equal(t, d.Attempts, requests[d.ID], "delivery %s reached the receiver once per counted attempt", d.ID)
		} else {
			require.Equal(t, d.Attempts+1, requests[d.ID], "delivery %s: the interrupted attempt reached the receiver too", d.ID)
		}
	}

	// Sends: each reached the provider; twice only when in flight at the
	// kill.
	arrivals := provider.arrivals()
	twice := 0
	for _, text := range texts {
		at := arrivals[text]
		require.NotEmpty(t, at, "the send %q was lost", text)
		if len(at) > 1 {
			twice++
			require.Len(t, at, 2, "%q", text)
			require.True(t, at[0].Before(killed), "%q was sent again; its first copy came before the kill", text)
			require.True(t, at[1].After(killed))
		}
	}
	var failed int
	require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM messages WHERE status = 'failed'").Scan(ctx, &failed))
	require.Zero(t, failed)
	t.Logf("deliveries cut off at the kill: %d; sends made twice: %d", len(cut), twice)
	for _, srv := range replicas {
		if srv != victim {
			srv.stop(t)
		}
	}
}

// idList is the ids of jobs, as a list for IN (?).
func idList(jobs []runningJob) any {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return bun.List(ids)
}

// Postgres restarts under three busy replicas (a fault proxy drops every
// connection, refuses new ones for a second, then lets them through):
// every session ends and every process lock is free while every process
// lives. No replica takes another's work: none is found dead, no delivery
// runs twice at once, and every delivery succeeds.
func TestDatabaseRestartRunsNoJobTwiceAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, store.Postgres)
	u, err := url.Parse(b.dbURL)
	require.NoError(t, err)
	proxy := faultproxy.Start(t, u.Host)
	acct := b.createAccount(t, "Restart")
	headers := auth(acct.APIKey, acct.APISecret)
	const agent = "+15550004004"
	b.addNumber(t, acct.AccountID, agent)
	// Each delivery takes a second and a half: many are in flight when
	// the database goes.
	receiver := newGateReceiver(t, 1500*time.Millisecond)
	var hook webhookOut
	b.cliJSON(t, &hook, "webhook", "set", "--account", acct.AccountID, "--url", receiver.URL, "--allow-private-urls", "127.0.0.1/32")

	replicas := make([]*serverProc, 3)
	for i := range replicas {
		replicas[i] = startServer(t, b.env, "--database-url", proxy.URL(b.dbURL),
			"--allow-private-urls", "127.0.0.1/32", "--rate-limit", "0", "--job-workers", "8")
	}
	// The messages arrive side by side, ten at a time, so that deliveries
	// pile up even on a loaded machine where one request takes a second.
	const users = 60
	var posts sync.WaitGroup
	statuses := make([]int, users)
	bodies := make([]string, users)
	slots := make(chan struct{}, 10)
	for i := range users {
		posts.Add(1)
		slots <- struct{}{}
		go func() {
			defer posts.Done()
			defer func() { <-slots }()
			r := replicas[i%3].client(t).Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
				map[string]any{"service": "whatsapp", "from": fmt.Sprintf("+1415777%04d", i), "to": agent, "message": "hi"}, headers...)
			statuses[i], bodies[i] = r.StatusCode, string(r.Body)
		}()
	}
	posts.Wait()
	for i := range users {
		require.Equal(t, http.StatusOK, statuses[i], "%s", bodies[i])
	}
	db, err := store.Open(ctx, b.dbURL, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	// Every replica has run deliveries (seen across samples: on a loaded
	// machine the three need not hold one at the same instant).
	seen := map[int]bool{}
	require.Eventually(t, func() bool {
		for _, j := range runningJobs(t, db) {
			seen[j.PID] = true
		}
		return len(seen) == 3
	}, chWait, 20*time.Millisecond, "every replica runs deliveries")

	// The restart.
	proxy.SetRefuse(true)
	proxy.Reset()
	time.Sleep(time.Second)
	proxy.SetRefuse(false)

	require.Eventually(t, func() bool {
		var pending int
		require.NoError(t, db.Bun().NewRaw(`SELECT count(*) FROM webhook_deliveries WHERE status <> 'succeeded'`).Scan(ctx, &pending))
		return pending == 0
	}, 2*chWait, chTick, "every delivery succeeded")
	_, overlaps := receiver.counts()
	require.Empty(t, overlaps, "no delivery ran twice at once")
	registeredAgain := 0
	for _, srv := range replicas {
		logs := srv.stderr.String()
		require.False(t, strings.Contains(logs, "processes found dead"), "a restart of the database kills no process")
		require.False(t, strings.Contains(logs, "rescued the jobs of dead processes"), "a restart of the database takes no work")
		if strings.Contains(logs, "this process registered again") {
			registeredAgain++
		}
	}
	require.Equal(t, 3, registeredAgain, "every replica took its lock again")
	var interrupted int
	require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM webhook_attempts WHERE interrupted").Scan(ctx, &interrupted))
	require.Zero(t, interrupted)
	for _, srv := range replicas {
		srv.stop(t)
	}
}
