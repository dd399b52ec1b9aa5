package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/channels/whatsapp/whatsappfake"
	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// The crash test's settings.
const (
	// crashWorkers bounds the deliveries in flight in one server, and so
	// the deliveries a kill can leave half done.
	crashWorkers = 8
	// crashKills is how often the server is killed.
	crashKills = 3
	// crashRecovery is the documented bound: a delivery of a dead process
	// is back in the queue within 15 s; the queue must have drained this
	// long after the last restart.
	crashRecovery = 30 * time.Second
	// crashInFlight is how long before a kill the first copy of a message
	// sent twice may have reached the provider: its status was not yet
	// recorded when the process died. Generous for a loaded machine.
	crashInFlight = 5 * time.Second
)

// A server killed with SIGKILL three times while sends arrive steadily loses
// no accepted send, sends a message twice only when its provider call was
// in flight at a kill, and has delivered everything within 30 s of its last
// restart: leases are per kind (10 s for deliveries), not the 5 minutes of
// the slowest kind.
func TestKilledServerDeliversEveryAcceptedSend(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		wa := whatsappfake.New(t, chWAPNID, chWAToken, chWADisplay)
		// Each provider call takes a little while, so that some are in
		// flight when the server dies.
		provider := newRecordingAPI(t, wa.URL, 40*time.Millisecond)

		b := setup(t, dialect)
		acct := b.createAccount(t, "Crashes")
		var num numberOut
		b.cliJSON(t, &num, "numbers", "add", "--account", acct.AccountID, "--number", chWAAgent,
			"--service", "whatsapp", "--provider", "whatsapp-cloud", "--phone-number-id", chWAPNID,
			"--access-token", chWAToken, "--app-secret", chWASecret, "--verify-token", chWAVerify, "--api-base-url", provider.URL)
		serve := func() *serverProc {
			return b.serve(t, "--allow-private-urls", "127.0.0.1/32", "--rate-limit", "0",
				"--job-workers", fmt.Sprint(crashWorkers))
		}

		srv := serve()
		// The user writes first: WhatsApp lets a business answer within a
		// day of the user's last message.
		inbound := whatsappfake.TextMessage(chWAPNID, chWADisplay, "14155550111", "Sheena Nelson", "wamid.crash-inbound", "hello")
		r := srv.client(t).Do(http.MethodPost, "/v1/providers/whatsapp/"+num.NumberID+"/webhook", inbound,
			"X-Hub-Signature-256", whatsappfake.Sign(inbound, chWASecret))
		require.Equal(t, http.StatusOK, r.StatusCode, "inbound: %s", r.Body)
		var base atomic.Value
		base.Store(srv.URL)
		s := &steadySender{account: acct.AccountID, headers: auth(acct.APIKey, acct.APISecret), base: &base}
		stopSending := s.start(25 * time.Millisecond)

		var kills []time.Time
		var lastRestart time.Time
		for range crashKills {
			time.Sleep(2 * time.Second)
			srv.signal(t, syscall.SIGKILL)
			srv.waitExit(t, exitTimeout)
			// A kill is when the process is gone: a request it had on the
			// wire may reach the provider a moment after the signal.
			kills = append(kills, time.Now())
			srv = serve()
			lastRestart = time.Now()
			base.Store(srv.URL)
		}
		time.Sleep(time.Second)
		stopSending()
		accepted := s.acceptedTexts()
		require.NotEmpty(t, accepted)

		db, err := store.Open(context.Background(), b.dbURL, store.Options{})
		require.NoError(t, err)
		defer db.Close()
		queued := func() int {
			var n int
			require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM messages WHERE status = 'queued'").Scan(context.Background(), &n))
			return n
		}
		require.Eventually(t, func() bool { return queued() == 0 }, time.Until(lastRestart.Add(crashRecovery)), 50*time.Millisecond,
			"every message has left queued within %s of the last restart", crashRecovery)
		drained := time.Since(kills[len(kills)-1])
		var failed int
		require.NoError(t, db.Bun().NewRaw("SELECT count(*) FROM messages WHERE status = 'failed'").Scan(context.Background(), &failed))
		require.Zero(t, failed, "the provider took every message")

		arrivals := provider.arrivals()
		for _, text := range accepted {
			require.NotEmpty(t, arrivals[text], "the accepted send %q never reached the provider", text)
		}
		// A message sent more than once was in flight at a kill each time
		// but the last: every copy but the last reached the provider
		// shortly before a kill, and the next copy came after that kill.
		perKill := make([]int, len(kills))
		var resentAfter []time.Duration
		var twice int
		for text, at := range arrivals {
			if len(at) > 1 {
				twice++
			}
			for i := 0; i+1 < len(at); i++ {
				k := killAfter(kills, at[i])
				require.Less(t, k, len(kills), "%q was sent again after a copy at %s, after the last kill", text, at[i].Format(time.StampMilli))
				require.WithinDuration(t, kills[k], at[i], crashInFlight,
					"%q was sent again; its copy at %s was not in flight at the kill (%s)", text, at[i].Format(time.StampMilli), kills[k].Format(time.StampMilli))
				require.True(t, at[i+1].After(kills[k]), "the next copy of %q came from a later process", text)
				perKill[k]++
				resentAfter = append(resentAfter, at[i+1].Sub(kills[k]))
			}
		}
		for k, n := range perKill {
			require.LessOrEqual(t, n, crashWorkers, "kill %d: more messages sent twice than deliveries can be in flight", k+1)
		}
		sort.Slice(resentAfter, func(i, j int) bool { return resentAfter[i] < resentAfter[j] })
		var slowest time.Duration
		if len(resentAfter) > 0 {
			slowest = resentAfter[len(resentAfter)-1]
		}
		t.Logf("%s: %d sends accepted, %d reached the provider more than once (in flight per kill %v), in-flight deliveries resent %v after their kill (slowest %s); queue drained %s after the last kill",
			dialect, len(accepted), twice, perKill, roundAll(resentAfter), slowest.Round(time.Millisecond), drained.Round(time.Millisecond))
		srv.stop(t)
	})
}

func roundAll(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond).String()
	}
	return out
}

// recordingAPI stands in front of the fake Cloud API: it records when each
// text send arrives, by its text, then waits delay and passes the request
// on.
type recordingAPI struct {
	URL string

	mu   sync.Mutex
	seen map[string][]time.Time
}

func newRecordingAPI(t *testing.T, upstream string, delay time.Duration) *recordingAPI {
	t.Helper()
	target, err := url.Parse(upstream)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	a := &recordingAPI{seen: map[string][]time.Time{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body struct {
			Text struct {
				Body string `json:"body"`
			} `json:"text"`
		}
		if r.Method == http.MethodPost && json.Unmarshal(raw, &body) == nil && body.Text.Body != "" {
			a.mu.Lock()
			a.seen[body.Text.Body] = append(a.seen[body.Text.Body], at)
			a.mu.Unlock()
			time.Sleep(delay)
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// arrivals are the times each text reached the provider, in order.
func (a *recordingAPI) arrivals() map[string][]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]time.Time, len(a.seen))
	for text, at := range a.seen {
		out[text] = append([]time.Time(nil), at...)
	}
	return out
}

// steadySender sends one message every interval to whichever server base
// holds, and keeps the texts of the sends answered 200. A send that fails
// (the server is down or dying) is not retried: the next one carries a new
// text.
type steadySender struct {
	account string
	headers []string
	base    *atomic.Value

	mu       sync.Mutex
	accepted []string
}

func (s *steadySender) start(interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: 10 * time.Second}
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			text := fmt.Sprintf("crash test message %d", n)
			if s.send(client, text) {
				s.mu.Lock()
				s.accepted = append(s.accepted, text)
				s.mu.Unlock()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (s *steadySender) send(client *http.Client, text string) bool {
	body, _ := json.Marshal(map[string]any{"service": "whatsapp", "from": chWAAgent, "to": "+14155550111", "content": text})
	req, err := http.NewRequest(http.MethodPost, s.base.Load().(string)+"/v1/messages/individual/"+s.account+"/send", bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(s.headers); i += 2 {
		req.Header.Set(s.headers[i], s.headers[i+1])
	}
	r, err := sendValidated(client, req, body)
	return err == nil && r.StatusCode == http.StatusOK
}

func (s *steadySender) acceptedTexts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.accepted...)
}

// killAfter is the index of the first of kills (in order) at or after at,
// the one that could have cut off a request on the wire then; len(kills)
// when none is.
func killAfter(kills []time.Time, at time.Time) int {
	return sort.Search(len(kills), func(j int) bool { return !kills[j].Before(at) })
}
