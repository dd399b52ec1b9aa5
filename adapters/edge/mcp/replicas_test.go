package mcp_test

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/bootstrap"
)

// roundRobin is a load balancer without affinity: it sends each request
// to the next replica in turn, whatever its session, and counts where
// each method went.
type roundRobin struct {
	replicas []string // base URLs
	mu       sync.Mutex
	next     int
	served   map[string]map[string]int // method -> replica -> requests
}

func newRoundRobin(replicas ...*testBundle) *roundRobin {
	rr := &roundRobin{served: map[string]map[string]int{}}
	for _, r := range replicas {
		rr.replicas = append(rr.replicas, r.base)
	}
	return rr
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	rr.mu.Lock()
	base := rr.replicas[rr.next%len(rr.replicas)]
	rr.next++
	if rr.served[r.Method] == nil {
		rr.served[r.Method] = map[string]int{}
	}
	rr.served[r.Method][base]++
	rr.mu.Unlock()
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	r.URL.Host, r.Host = u.Host, u.Host
	return http.DefaultTransport.RoundTrip(r)
}

// replicasOf counts the replicas that served method.
func (rr *roundRobin) replicasOf(method string) int {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return len(rr.served[method])
}

// Two replicas on one database serve one session between them, each
// request of it on the other replica than the one before: initialize,
// the tools, a send, a subscription whose update comes through the event
// stream wherever it was made, a wait answered by a message that arrives
// through the other replica, and the end of the session, after which
// both answer its id 404.
func TestAnyReplicaServesASession(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		a := setup(t, dialect)
		b := a.replica(t)
		rr := newRoundRobin(a, b)
		updated := make(chan string, 10)
		cs := a.connectWith(t, a.acme, clientOptions{transport: rr, ClientOptions: sdk.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
		}})
		id := cs.ID()
		require.NotEmpty(t, id)

		tools, err := cs.ListTools(t.Context(), nil)
		require.NoError(t, err)
		require.NotEmpty(t, tools.Tools)
		_, thread := a.inbound(t, a.acme, userA, agentA, "Hi!")
		var sent struct {
			ThreadID string `json:"thread_id"`
		}
		ok(t, cs, "send_message", map[string]any{"service": "whatsapp", "from": agentA, "to": userA, "text": "Hello"}, &sent)
		require.Equal(t, thread, sent.ThreadID)

		uri := "switchboard://threads/" + thread
		require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri}))
		b.inbound(t, b.acme, userA, agentA, "news")
		select {
		case got := <-updated:
			require.Equal(t, uri, got)
		case <-time.After(15 * time.Second):
			t.Fatal("no update notification")
		}

		var waited struct {
			TimedOut bool `json:"timed_out"`
			Message  struct {
				Text string `json:"text"`
			} `json:"message"`
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ok(t, cs, "wait_for_message", map[string]any{"timeout_seconds": 30}, &waited)
		}()
		require.Eventually(t, func() bool {
			_, wa := a.mcp.Waiting()
			_, wb := b.mcp.Waiting()
			return wa+wb == 1
		}, 10*time.Second, 10*time.Millisecond, "the wait begins")
		// The message arrives through the replica the wait is not on,
		// whichever that is.
		a.inbound(t, a.acme, userA, agentA, "for the wait")
		b.inbound(t, b.acme, userA, agentA, "for the wait")
		<-done
		require.False(t, waited.TimedOut)
		require.Equal(t, "for the wait", waited.Message.Text)

		require.Equal(t, 2, rr.replicasOf(http.MethodPost), "the calls went to both replicas")
		require.Equal(t, 1, rr.replicasOf(http.MethodGet), "one event stream")
		require.NoError(t, cs.Close())
		for _, r := range []*testBundle{a, b} {
			h := headersOf(a.acme)
			h.Set("Mcp-Session-Id", id)
			res, raw := r.post(t, h, ping(t))
			require.Equal(t, http.StatusNotFound, res.StatusCode, "an ended session on %s: %s", r.base, raw)
		}
	})
}

// A session id answers only for its account, on every replica: another
// account's credentials with it, a forged id of the right shape and a
// malformed one are all answered 404 session_not_found, as an unknown
// session, and none of them opens a session or reaches the first one.
func TestSessionIDsOfOthersAreNotFound(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		a := setup(t, dialect)
		b := a.replica(t)
		cs := a.connectWith(t, a.acme, clientOptions{noEventStream: true})
		forged := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		require.Len(t, forged, len(cs.ID()))
		for _, r := range []*testBundle{a, b} {
			for _, tc := range []struct {
				creds credentials
				id    string
			}{{a.other, cs.ID()}, {a.acme, forged}, {a.acme, cs.ID() + "x"}, {a.other, forged}} {
				for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
					h := headersOf(tc.creds)
					h.Set("Mcp-Session-Id", tc.id)
					body, err := jsonrpc.EncodeMessage(ping(t))
					require.NoError(t, err)
					got, err := r.send(method, "", h, body)
					require.NoError(t, err)
					require.Equal(t, http.StatusNotFound, got.status, "%s with %s's credentials: %s", method, tc.creds.accountID, got.body)
					require.Contains(t, string(got.body), `"code":"session_not_found"`)
					require.Empty(t, got.header.Get("Mcp-Session-Id"))
				}
			}
			require.Zero(t, r.mcp.HeldSessions(a.other.accountID), "no session of the other account")
		}
		var list struct {
			TotalCount int `json:"total_count"`
		}
		ok(t, cs, "list_threads", map[string]any{}, &list)
	})
}

// The cap on an account's sessions holds across the replicas, and an
// idle session ends on all of them.
func TestSessionCapAndIdleExpiryAcrossReplicas(t *testing.T) {
	t.Parallel()
	// Long enough that the two sessions stay open through the cap's
	// checks on a loaded machine.
	const idleTimeout = 10 * time.Second
	a := setupWith(t, store.Postgres, appOptions{configure: func(c *bootstrap.Config) {
		c.MCP.MaxSessionsPerAccount = 2
		c.MCP.SessionIdleTimeout = idleTimeout
	}})
	b := a.replica(t)
	first := a.connectWith(t, a.acme, clientOptions{noEventStream: true})
	b.connectWith(t, a.acme, clientOptions{noEventStream: true})
	for _, r := range []*testBundle{a, b} {
		got := r.postBody(t, headersOf(a.acme), initializeBody(t))
		res, raw := got.status, got.body
		require.Equal(t, http.StatusTooManyRequests, res, "%s", raw)
		require.Contains(t, string(raw), `"code":"too_many_sessions"`)
	}
	other := b.postBody(t, headersOf(a.other), initializeBody(t))
	require.Equal(t, http.StatusOK, other.status, "another account has places of its own: %s", other.body)

	// A request would move the idle timeout on: none comes for longer
	// than it.
	time.Sleep(idleTimeout + time.Second)
	h := headersOf(a.acme)
	h.Set("Mcp-Session-Id", first.ID())
	idle, raw := b.post(t, h, ping(t))
	require.Equal(t, http.StatusNotFound, idle.StatusCode, "the idle session ended: %s", raw)
	again := b.postBody(t, headersOf(a.acme), initializeBody(t))
	require.Equal(t, http.StatusOK, again.status, "the idle sessions gave their places back: %s", again.body)
	require.Eventually(t, func() bool { return a.mcp.HeldSessions(a.acme.accountID) == 0 }, 10*time.Second, 50*time.Millisecond,
		"the replica that opened the ended session let it go")
}
