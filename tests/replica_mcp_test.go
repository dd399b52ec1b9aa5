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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
)

// haproxyBinary is Debian's haproxy, which .ci/run installs.
const haproxyBinary = "/usr/sbin/haproxy"

// replicaHeader names the replica that answered; deploy/haproxy.cfg sets
// it from the server's name.
const replicaHeader = "X-Switchboard-Replica"

// cluster is three replicas of the built binary on one Postgres database
// behind HAProxy, configured by deploy/haproxy.cfg.
type cluster struct {
	b        *testBundle
	replicas []*serverProc
	// addrs are the replicas' host:port, kept when one is restarted.
	addrs []string
	// URL is HAProxy's.
	URL string
	// history are the replicas that answered the requests through
	// HAProxy, in order: round-robin's order (which is not always the
	// configuration's) is read from it.
	mu      sync.Mutex
	history []string
}

// answered records the replica that answered a request through HAProxy.
func (c *cluster) answered(replica string) {
	if replica == "" {
		return
	}
	c.mu.Lock()
	c.history = append(c.history, replica)
	c.mu.Unlock()
}

// next is the replica round-robin picks after the latest answer: the one
// that followed that replica the last time.
func (c *cluster) next() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.history[len(c.history)-1]
	for i := len(c.history) - 2; i >= 0; i-- {
		if c.history[i] == last {
			return c.history[i+1]
		}
	}
	return ""
}

// names are the replicas' names in deploy/haproxy.cfg, in its order.
var names = []string{"replica1", "replica2", "replica3"}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	if _, err := os.Stat(haproxyBinary); err != nil {
		t.Skipf("%s is missing (apt-get install haproxy; .ci/run installs it)", haproxyBinary)
	}
	c := &cluster{b: setup(t, store.Postgres)}
	for range names {
		c.replicas = append(c.replicas, launchServer(t, c.b.env, "--database-url", c.b.dbURL))
	}
	for _, r := range c.replicas {
		r.waitListening(t)
		r.waitReady(t)
		u, err := url.Parse(r.URL)
		require.NoError(t, err)
		c.addrs = append(c.addrs, u.Host)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	bind := ln.Addr().String()
	require.NoError(t, ln.Close())
	config, err := filepath.Abs(filepath.Join("..", "deploy", "haproxy.cfg"))
	require.NoError(t, err)
	cmd := exec.Command(haproxyBinary, "-db", "-f", config)
	cmd.Env = []string{"SWITCHBOARD_LB_BIND=" + bind,
		"SWITCHBOARD_REPLICA1=" + c.addrs[0], "SWITCHBOARD_REPLICA2=" + c.addrs[1], "SWITCHBOARD_REPLICA3=" + c.addrs[2]}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", out.String())
		}
	})
	c.URL = "http://" + bind
	c.waitRotation(t, names...)
	return c
}

// replicaOf GETs /readyz through HAProxy and returns who answered.
func (c *cluster) readyz(t *testing.T) string {
	t.Helper()
	res, err := http.Get(c.URL + "/readyz")
	if err != nil {
		return ""
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return ""
	}
	c.answered(res.Header.Get(replicaHeader))
	return res.Header.Get(replicaHeader)
}

// waitRotation waits until HAProxy sends requests round the replicas up,
// exactly those, and returns the last one that answered.
func (c *cluster) waitRotation(t *testing.T, up ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var seen []string
	for time.Now().Before(deadline) {
		seen = append(seen, c.readyz(t))
		if n := len(seen); n >= 2*len(up) {
			last := slices.Clone(seen[n-2*len(up):])
			got := slices.Clone(last)
			slices.Sort(got)
			got = slices.Compact(got)
			if slices.Equal(got, up) && !repeats(last) {
				return last[len(last)-1]
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("HAProxy does not go round %v; the last answers: %v", up, seen[max(0, len(seen)-12):])
	return ""
}

// repeats reports whether a replica answered two requests in a row.
func repeats(seq []string) bool {
	for i := 1; i < len(seq); i++ {
		if seq[i] == seq[i-1] {
			return true
		}
	}
	return false
}

func (c *cluster) replica(name string) *serverProc { return c.replicas[slices.Index(names, name)] }

// kill ends a replica with SIGKILL, as a crash would.
func (c *cluster) kill(t *testing.T, name string) {
	t.Helper()
	p := c.replica(name)
	p.signal(t, syscall.SIGKILL)
	p.waitExit(t, exitTimeout)
}

// restart starts a killed replica again on its address.
func (c *cluster) restart(t *testing.T, name string) {
	t.Helper()
	i := slices.Index(names, name)
	c.replicas[i] = startServer(t, c.b.env, "--database-url", c.b.dbURL, "--addr", c.addrs[i])
	c.replicas[i].waitReady(t)
}

// served is one request an MCP client made through HAProxy.
type served struct {
	method, replica string
	status          int
}

// recorder adds an account's credentials to an MCP client's requests and
// records which replica answered each.
type recorder struct {
	acct createdAccount
	c    *cluster
	mu   sync.Mutex
	log  []served
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-API-Key", r.acct.APIKey)
	req.Header.Set("X-API-Secret", r.acct.APISecret)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.log = append(r.log, served{req.Method, res.Header.Get(replicaHeader), res.StatusCode})
		r.mu.Unlock()
		r.c.answered(res.Header.Get(replicaHeader))
	}
	return res, err
}

// requests returns what was recorded so far.
func (r *recorder) requests() []served {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.log)
}

// last is the replica that answered the latest request.
func (r *recorder) last() string {
	log := r.requests()
	return log[len(log)-1].replica
}

// streams counts the event streams (GETs) answered 200, and names the
// replica of the latest.
func (r *recorder) streams() (n int, latest string) {
	for _, s := range r.requests() {
		if s.method == http.MethodGet && s.status == http.StatusOK {
			n, latest = n+1, s.replica
		}
	}
	return n, latest
}

// Three replicas behind HAProxy, round-robin without affinity, serve one
// MCP session of the official Go SDK's client, each request on another
// replica than the one before: initialize, tools/list, send_message, a
// resource subscription whose update comes through, and a
// wait_for_message answered by a message that arrives through another
// replica. A replica killed (SIGKILL) before initialize completes, during
// a wait_for_message, and between calls (the one holding the session's
// event stream) takes only its request with it: the session goes on
// through the others. Another account's key with the session id, and a
// forged id, are answered 404 by every replica.
func TestMCPSessionAcrossReplicasBehindHAProxy(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	acct := c.b.createAccount(t, "Acme")
	other := c.b.createAccount(t, "Other")
	const agent, user = "+14155550100", "+14155550111"
	c.b.addNumber(t, acct.AccountID, agent)
	inbound := func(via *serverProc, text string) string {
		r := via.client(t).Do(http.MethodPost, "/v1/sandbox/"+acct.AccountID+"/inbound",
			map[string]any{"service": "whatsapp", "from": user, "to": agent, "message": text, "sender_name": "Ann"},
			auth(acct.APIKey, acct.APISecret)...)
		require.Equal(t, http.StatusOK, r.StatusCode, "body: %s", r.Body)
		return r.JSON(t)["thread_id"].(string)
	}
	thread := inbound(c.replicas[0], "Hi!")
	up := slices.Clone(names)

	// Before initialize completes: the replica the initialize goes to
	// dies while it reads the request. The client hears of an error, and
	// its next initialize opens a session on another replica.
	c.waitRotation(t, up...)
	victim := c.next()
	body, release := io.Pipe()
	failed := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, c.URL+"/mcp", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-API-Key", acct.APIKey)
		req.Header.Set("X-API-Secret", acct.APISecret)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = res.Body.Close()
			err = fmt.Errorf("status %d from %s", res.StatusCode, res.Header.Get(replicaHeader))
		}
		failed <- err
	}()
	_, _ = release.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize",`))
	time.Sleep(300 * time.Millisecond) // the request is in the replica, waiting for the rest of its body
	c.kill(t, victim)
	_ = release.Close()
	err := <-failed
	t.Logf("the initialize on %s, killed: %v", victim, err)
	up = slices.DeleteFunc(up, func(n string) bool { return n == victim })
	c.waitRotation(t, up...)
	c.restart(t, victim)
	up = slices.Clone(names)
	c.waitRotation(t, up...)

	rec := &recorder{acct: acct, c: c}
	updated := make(chan string, 10)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-replicas", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
	}).Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: c.URL + "/mcp", HTTPClient: &http.Client{Transport: rec}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	sessionID := cs.ID()
	require.NotEmpty(t, sessionID)

	tools, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.NotEmpty(t, tools.Tools)
	call := func(name string, args map[string]any, out any) {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err, "%s", name)
		require.False(t, res.IsError, "%s: %v", name, res.StructuredContent)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, out))
	}
	var sent struct {
		ThreadID string `json:"thread_id"`
	}
	call("send_message", map[string]any{"service": "whatsapp", "from": agent, "to": user, "text": "Hello"}, &sent)
	require.Equal(t, thread, sent.ThreadID)
	var list struct {
		TotalCount int `json:"total_count"`
	}
	call("list_threads", map[string]any{}, &list)
	require.Equal(t, 1, list.TotalCount)
	// HAProxy takes turns, so the session moves from replica to replica.
	// On a loaded machine a replica may miss two health checks in a row
	// and sit out a few requests, and a replica just back in rotation was
	// seen to take five in a row: the session goes on until every replica
	// has served it and it has moved between replicas once per replica.
	served := func() []string {
		var got []string
		for _, s := range rec.requests() {
			got = append(got, s.replica)
		}
		slices.Sort(got)
		return slices.Compact(got)
	}
	moves := func() int {
		seq, n := rec.requests(), 0
		for i := 1; i < len(seq); i++ {
			if seq[i].replica != seq[i-1].replica {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); (!slices.Equal(served(), names) || moves() < len(names)) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		call("list_threads", map[string]any{}, &list)
		require.Equal(t, 1, list.TotalCount)
	}

	seq := rec.requests()
	t.Logf("requests so far: %v", seq)
	require.GreaterOrEqual(t, len(seq), 6)
	for _, s := range seq {
		require.NotEmpty(t, s.replica)
	}
	require.GreaterOrEqual(t, moves(), len(names), "the session moved between replicas: %v", seq)
	require.Equal(t, names, served(), "every replica served the session")

	// A subscription made on one replica; the update comes through the
	// replica that holds the event stream.
	uri := "switchboard://threads/" + thread
	require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri}))
	inbound(c.replicas[2], "news")
	expectUpdate := func(why string) {
		t.Helper()
		select {
		case got := <-updated:
			require.Equal(t, uri, got)
		case <-time.After(20 * time.Second):
			t.Fatalf("no update notification %s", why)
		}
	}
	expectUpdate("of the subscribed thread")

	type waited struct {
		TimedOut bool `json:"timed_out"`
		Message  struct {
			Text string `json:"text"`
		} `json:"message"`
	}
	// wait runs wait_for_message on the replica round-robin picks next,
	// which it returns, and hands back its outcome.
	wait := func() (string, <-chan error, *waited) {
		on := c.next()
		out, done := &waited{}, make(chan error, 1)
		go func() {
			res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "wait_for_message", Arguments: map[string]any{"timeout_seconds": 30}})
			if err == nil {
				raw, _ := json.Marshal(res.StructuredContent)
				err = json.Unmarshal(raw, out)
			}
			done <- err
		}()
		time.Sleep(time.Second) // the wait is in its replica
		return on, done, out
	}

	// A wait on one replica hears of a message that arrives through
	// another. Round-robin says where the wait goes; should another
	// request of the client have come between, the wait is made again.
	for attempt := 1; ; attempt++ {
		on, done, got := wait()
		via := names[(slices.Index(names, on)+1)%len(names)]
		inbound(c.replica(via), "for the wait")
		require.NoError(t, <-done)
		require.False(t, got.TimedOut)
		require.Equal(t, "for the wait", got.Message.Text)
		if waitedOn := rec.last(); waitedOn != via {
			t.Logf("the wait on %s heard of a message sent through %s", waitedOn, via)
			break
		}
		require.Less(t, attempt, 3, "the waits went to the replica the message was sent through: %v", rec.requests())
	}

	// During a wait: its replica dies; the wait fails, the session goes on.
	// Should the wait not be where round-robin put it (it then goes on),
	// a message ends it and the replica is brought back for another try.
	var on string
	for attempt := 1; ; attempt++ {
		var done <-chan error
		on, done, _ = wait()
		c.kill(t, on)
		select {
		case err := <-done:
			require.Error(t, err, "the wait on the killed %s", on)
		case <-time.After(10 * time.Second):
			require.Less(t, attempt, 3, "the waits were not on the killed replicas: %v", rec.requests())
			inbound(c.replica(names[(slices.Index(names, on)+1)%len(names)]), "ends the wait")
			require.NoError(t, <-done)
			c.restart(t, on)
			c.waitRotation(t, names...)
			continue
		}
		break
	}
	call("list_threads", map[string]any{}, &list)
	up = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == on })
	_, done, got := wait()
	inbound(c.replica(up[0]), "after a crash")
	require.NoError(t, <-done)
	require.Equal(t, "after a crash", got.Message.Text)
	c.waitRotation(t, up...)
	c.restart(t, on)
	up = slices.Clone(names)
	c.waitRotation(t, up...)

	// Between calls: the replica holding the event stream dies; the calls
	// go on, the stream comes back on another replica, and so do the
	// updates.
	streams, holder := rec.streams()
	require.NotEmpty(t, holder)
	c.kill(t, holder)
	up = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == holder })
	call("list_threads", map[string]any{}, &list)
	require.Eventually(t, func() bool { n, latest := rec.streams(); return n > streams && latest != holder }, 30*time.Second, 50*time.Millisecond,
		"the event stream came back")
	time.Sleep(500 * time.Millisecond) // the stream's replica listens to the account
	inbound(c.replica(up[0]), "after the stream moved")
	expectUpdate("after the replica of the event stream died")
	call("send_message", map[string]any{"service": "whatsapp", "from": agent, "to": user, "text": "Still here"}, &sent)

	// The session id answers only for its account, on every replica; a
	// forged id for nobody. Neither opens a session.
	for _, n := range up {
		for _, tc := range []struct {
			acct createdAccount
			id   string
		}{{other, sessionID}, {acct, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, {acct, sessionID + "x"}} {
			for _, base := range []string{c.replica(n).URL, c.URL} {
				req, err := http.NewRequest(http.MethodPost, base+"/mcp", bytes.NewReader([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)))
				require.NoError(t, err)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("X-API-Key", tc.acct.APIKey)
				req.Header.Set("X-API-Secret", tc.acct.APISecret)
				req.Header.Set("Mcp-Session-Id", tc.id)
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				raw, _ := io.ReadAll(res.Body)
				_ = res.Body.Close()
				require.Equal(t, http.StatusNotFound, res.StatusCode, "%s on %s: %s", tc.acct.AccountID, base, raw)
				require.Contains(t, string(raw), `"session_not_found"`)
				require.Empty(t, res.Header.Get("Mcp-Session-Id"))
			}
		}
	}
	call("list_threads", map[string]any{}, &list)
	require.NoError(t, cs.Close())
}
