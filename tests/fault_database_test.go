package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest/faultproxy"
)

// The deadline every request gets by default (--request-timeout).
const requestDeadline = 10 * time.Second

// tenant is one account of the fault test with what it may see.
type tenant struct {
	acct      createdAccount
	contact   string
	messageID string
}

// faultTally is what the load saw.
type faultTally struct {
	mu sync.Mutex
	// byStatus counts answers by route family and status.
	byStatus map[string]int
	// problems lists every answer that breaks the contract.
	problems []string
	// acked are the ids of sends answered 200, by account.
	acked map[string][]string
	// slowest is the longest answer.
	slowest time.Duration
}

func (f *faultTally) add(family string, status int, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byStatus[fmt.Sprintf("%s %d", family, status)]++
	f.slowest = max(f.slowest, took)
}

func (f *faultTally) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.problems) < 50 {
		f.problems = append(f.problems, fmt.Sprintf(format, args...))
	}
}

// Two accounts read and write through a stalled, cut, restarted, silent and
// torn database connection (a fault proxy between the server and Postgres).
// Promised: no answer ever carries the other account's data or a wrong
// 404; every request is answered 200 or 503 (with Retry-After, code
// unavailable, in its route's error shape) within its deadline and a
// second; every acknowledged send is stored; /readyz follows the database.
// Before the guarded connections, a 15 s freeze crossed the accounts'
// answers in 3 runs of 4.
func TestDatabaseFaultsNeverCrossAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t, store.Postgres)
	u, err := url.Parse(b.dbURL)
	require.NoError(t, err)
	proxy := faultproxy.Start(t, u.Host)

	tenants := []*tenant{
		{acct: b.createAccount(t, "Alpha"), contact: "+14155550101"},
		{acct: b.createAccount(t, "Bravo"), contact: "+14155550202"},
	}
	b.addNumber(t, tenants[0].acct.AccountID, "+15550000101")
	b.addNumber(t, tenants[1].acct.AccountID, "+15550000202")
	numbers := []string{"+15550000101", "+15550000202"}

	// A rate limit that never binds, so that every request also leases
	// tokens from the shared buckets through the faults (20 at a time).
	srv := startServer(t, b.env, "--database-url", proxy.URL(b.dbURL), "--rate-limit", "100000", "--rate-burst", "200")
	client := &http.Client{Timeout: 60 * time.Second}
	for i, tn := range tenants {
		r := do(t, client, srv.URL, tn, http.MethodPost, "/v1/sandbox/"+tn.acct.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": tn.contact, "to": numbers[i], "message": "hello"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		r = do(t, client, srv.URL, tn, http.MethodPost, "/v1/messages/individual/"+tn.acct.AccountID+"/send",
			map[string]any{"service": "whatsapp", "from": numbers[i], "to": tn.contact, "content": "first"})
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var sent map[string]any
		require.NoError(t, json.Unmarshal(r.body, &sent))
		tn.messageID = sent["message_id"].(string)
	}

	tally := &faultTally{byStatus: map[string]int{}, acked: map[string][]string{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, tn := range tenants {
		other := tenants[1-i]
		for _, load := range []func(){
			func() { checkAccountRead(t, client, srv.URL, tn, other, tally) },
			func() { checkMessageRead(t, client, srv.URL, tn, other, tally) },
			func() { checkSend(t, client, srv.URL, tn, other, numbers[i], tally) },
			func() { checkCronList(t, client, srv.URL, tn, other, tally) },
			func() { checkGraphQL(t, client, srv.URL, tn, other, tally) },
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					load()
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
	}
	ready := watchReadiness(ctx, &wg, srv.URL)

	phase := func(d time.Duration) { time.Sleep(d) }
	phase(2 * time.Second)
	frozen := time.Now()
	proxy.Freeze() // longer than pgdriver's 10 s read timeout, as measured
	phase(15 * time.Second)
	thawed := time.Now()
	proxy.Thaw()
	phase(4 * time.Second)
	proxy.Cut() // every connection dropped at once
	phase(3 * time.Second)
	restarted := time.Now()
	proxy.SetRefuse(true) // a restart: connections reset, new ones refused
	proxy.Reset()
	phase(4 * time.Second)
	proxy.SetRefuse(false)
	back := time.Now()
	phase(4 * time.Second)
	// A Postgres that accepts connections and never answers them.
	proxy.SetBlackhole(true)
	proxy.Cut()
	phase(4 * time.Second)
	proxy.SetBlackhole(false)
	phase(3 * time.Second)
	// One that answers half a message and resets.
	proxy.HalfReplyThenReset()
	phase(3 * time.Second)
	stop()
	wg.Wait()

	t.Logf("answers: %v; slowest %s", tally.byStatus, tally.slowest)
	require.Empty(t, tally.problems, "answers that break the contract")
	// The slack is for a busy machine (the browser tests run beside this
	// one); what it catches is an answer held past its deadline by a
	// stalled connection, which would wait for the 60 s client timeout.
	require.LessOrEqual(t, tally.slowest, requestDeadline+3*time.Second, "an answer took longer than its deadline and three seconds")
	for _, family := range []string{"account", "message", "send", "cron", "graphql"} {
		require.Positive(t, tally.byStatus[family+" 200"], "no %s request succeeded", family)
	}
	require.Positive(t, tally.byStatus["account 503"]+tally.byStatus["message 503"]+tally.byStatus["send 503"],
		"no request met the outage: the faults were not injected")

	// Readiness: not ready during the freeze and the restart, ready again after each.
	down, up := ready.firstAfter(frozen, 503), ready.firstAfter(thawed, 200)
	t.Logf("readyz: 503 %s after the freeze, 200 %s after the thaw", down.Sub(frozen), up.Sub(thawed))
	require.False(t, down.IsZero() || down.After(thawed), "/readyz never said 503 during the freeze")
	require.False(t, up.IsZero(), "/readyz never said 200 after the thaw")
	require.Less(t, down.Sub(frozen), 3*time.Second, "not-ready within 2 s of the database going away (1 s of slack)")
	require.Less(t, up.Sub(thawed), 3*time.Second, "ready within 2 s of its return (1 s of slack)")
	require.False(t, ready.firstAfter(restarted, 503).IsZero(), "/readyz never said 503 during the restart")
	require.Less(t, ready.firstAfter(back, 200).Sub(back), 3*time.Second)

	// One log line per outage and loop, not one per attempt: five outages,
	// each met by the health watcher and the background loops that touch
	// the database (two runners' claims, lease renewals, rescues, outcomes,
	// the cron scheduler, process liveness, the runners' shared state,
	// revocations, shared rate limits: about a dozen, each logging at most
	// once an outage), are 60 lines at most where thousands of failed
	// requests and attempts went by. A make test run logged 32.
	var warnings []string
	for _, line := range strings.Split(srv.stderr.String(), "\n") {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			warnings = append(warnings, line)
		}
	}
	t.Logf("%d warning and error lines:\n%s", len(warnings), strings.Join(warnings, "\n"))
	require.LessOrEqual(t, len(warnings), 60, "the outages were logged per attempt")

	// Every acknowledged send is stored. A read may still meet a pooled
	// connection the last fault broke (503, retry): it is answered once
	// the connection is replaced, and must then be found.
	total := 0
	for _, tn := range tenants {
		for _, id := range tally.acked[tn.acct.AccountID] {
			path := "/v1/messages/individual/" + tn.acct.AccountID + "/get-details/" + id
			r := do(t, client, srv.URL, tn, http.MethodGet, path, nil)
			for try := 0; r.status == http.StatusServiceUnavailable && try < 10; try++ {
				time.Sleep(200 * time.Millisecond)
				r = do(t, client, srv.URL, tn, http.MethodGet, path, nil)
			}
			require.Equal(t, http.StatusOK, r.status, "acknowledged send %s is missing: %s", id, r.body)
			total++
		}
	}
	require.Positive(t, total)
	t.Logf("%d acknowledged sends all stored", total)
}

// answer is one response.
type answer struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
}

func do(t *testing.T, client *http.Client, base string, tn *tenant, method, path string, body any) answer {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", tn.acct.APIKey)
	req.Header.Set("X-API-Secret", tn.acct.APISecret)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return answer{status: -1, body: []byte(err.Error()), took: time.Since(start)}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: data, took: time.Since(start)}
}

// judge checks an answer every route shares: 200 or 503 unavailable with
// Retry-After, and nothing of the other account. It returns whether the
// answer is a 200 to look into.
func judge(family string, a answer, tn, other *tenant, tally *faultTally, unavailableCode func([]byte) string) bool {
	tally.add(family, a.status, a.took)
	if bytes.Contains(a.body, []byte(other.acct.AccountID)) || (other.messageID != "" && bytes.Contains(a.body, []byte(other.messageID))) {
		tally.problem("%s of %s carried the other account's data: %d %s", family, tn.acct.Name, a.status, a.body)
		return false
	}
	switch a.status {
	case http.StatusOK:
		return true
	case http.StatusServiceUnavailable:
		if a.header.Get("Retry-After") == "" {
			tally.problem("%s: 503 without Retry-After: %s", family, a.body)
		}
		if code := unavailableCode(a.body); code != "unavailable" {
			tally.problem("%s: 503 with code %q, want unavailable: %s", family, code, a.body)
		}
	default:
		tally.problem("%s of %s: status %d: %s", family, tn.acct.Name, a.status, a.body)
	}
	return false
}

// flatCode reads the code of a messaging-shaped error.
func flatCode(body []byte) string {
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Code
}

// cronCode reads the code of a cron-shaped error ({"error": {...}}).
func cronCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Code
}

func checkAccountRead(t *testing.T, client *http.Client, base string, tn, other *tenant, tally *faultTally) {
	a := do(t, client, base, tn, http.MethodGet, "/v1/accounts/"+tn.acct.AccountID, nil)
	if !judge("account", a, tn, other, tally, flatCode) {
		return
	}
	var r struct {
		Data struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"data"`
	}
	if err := json.Unmarshal(a.body, &r); err != nil || r.Data.Name != tn.acct.Name {
		tally.problem("account of %s answered another record: %s", tn.acct.Name, a.body)
	}
}

func checkMessageRead(t *testing.T, client *http.Client, base string, tn, other *tenant, tally *faultTally) {
	a := do(t, client, base, tn, http.MethodGet, "/v1/messages/individual/"+tn.acct.AccountID+"/get-details/"+tn.messageID, nil)
	if judge("message", a, tn, other, tally, flatCode) && !bytes.Contains(a.body, []byte(tn.messageID)) {
		tally.problem("message of %s answered another message: %s", tn.acct.Name, a.body)
	}
}

func checkSend(t *testing.T, client *http.Client, base string, tn, other *tenant, from string, tally *faultTally) {
	a := do(t, client, base, tn, http.MethodPost, "/v1/messages/individual/"+tn.acct.AccountID+"/send",
		map[string]any{"service": "whatsapp", "from": from, "to": tn.contact, "content": "through the fault"})
	if !judge("send", a, tn, other, tally, flatCode) {
		return
	}
	var sent struct {
		MessageID string `json:"message_id"`
	}
	if err := json.Unmarshal(a.body, &sent); err != nil || sent.MessageID == "" {
		tally.problem("send of %s answered without a message id: %s", tn.acct.Name, a.body)
		return
	}
	tally.mu.Lock()
	tally.acked[tn.acct.AccountID] = append(tally.acked[tn.acct.AccountID], sent.MessageID)
	tally.mu.Unlock()
}

func checkCronList(t *testing.T, client *http.Client, base string, tn, other *tenant, tally *faultTally) {
	a := do(t, client, base, tn, http.MethodGet, "/v1/cron-jobs", nil)
	judge("cron", a, tn, other, tally, cronCode)
}

// checkGraphQL reads the account over GraphQL: 200 with its own id, or an
// error whose extensions say unavailable (HTTP 200 from GraphQL, or 503
// from the authentication in front of it).
func checkGraphQL(t *testing.T, client *http.Client, base string, tn, other *tenant, tally *faultTally) {
	a := do(t, client, base, tn, http.MethodPost, "/graphql", map[string]any{"query": "{ account { id name } }"})
	if !judge("graphql", a, tn, other, tally, flatCode) {
		return
	}
	var r struct {
		Data *struct {
			Account struct {
				ID string `json:"id"`
			} `json:"account"`
		} `json:"data"`
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(a.body, &r); err != nil {
		tally.problem("graphql: %v: %s", err, a.body)
		return
	}
	switch {
	case len(r.Errors) > 0:
		if r.Errors[0].Extensions["code"] != "unavailable" || r.Errors[0].Extensions["retryAfter"] == nil {
			tally.problem("graphql error is not unavailable with retryAfter: %s", a.body)
		}
	case r.Data == nil || r.Data.Account.ID != tn.acct.AccountID:
		tally.problem("graphql account of %s answered another record: %s", tn.acct.Name, a.body)
	}
}

// readiness records /readyz answers over time.
type readiness struct {
	mu      sync.Mutex
	answers []readyAnswer
}

type readyAnswer struct {
	at     time.Time
	status int
}

func watchReadiness(ctx context.Context, wg *sync.WaitGroup, base string) *readiness {
	r := &readiness{}
	client := &http.Client{Timeout: 5 * time.Second}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			status := -1
			if resp, err := client.Get(base + "/readyz"); err == nil {
				status = resp.StatusCode
				_ = resp.Body.Close()
			} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
				status = -2
			}
			r.mu.Lock()
			r.answers = append(r.answers, readyAnswer{at: time.Now(), status: status})
			r.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return r
}

// firstAfter is when /readyz first answered status at or after from.
func (r *readiness) firstAfter(from time.Time, status int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.answers {
		if !a.at.Before(from) && a.status == status {
			return a.at
		}
	}
	return time.Time{}
}
