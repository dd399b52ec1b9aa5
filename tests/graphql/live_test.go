package graphql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
	"github.com/switchboard-dev/switchboard/bootstrap"
	"github.com/switchboard-dev/switchboard/graph"
)

// wsMessage is one graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// socket is a graphql-transport-ws client connection.
type socket struct {
	t    *testing.T
	conn *websocket.Conn
}

// dial opens a WebSocket to /graphql and sends connection_init with
// payload; it returns the connection and the server's first answer, which
// must be connection_ack.
func (b *testBundle) dial(t *testing.T, header http.Header, payload map[string]any) *socket {
	t.Helper()
	s, ack, err := b.dialRaw(t, header, payload)
	require.NoError(t, err)
	require.Equal(t, "connection_ack", ack.Type, "payload: %s", ack.Payload)
	return s
}

// dialRaw is dial returning whatever the server answers first.
func (b *testBundle) dialRaw(t *testing.T, header http.Header, payload map[string]any) (*socket, wsMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.base, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header,
	})
	require.NoError(t, err)
	require.Equal(t, "graphql-transport-ws", res.Header.Get("Sec-Websocket-Protocol"))
	t.Cleanup(func() { _ = conn.CloseNow() })
	s := &socket{t: t, conn: conn}
	raw, _ := json.Marshal(payload)
	s.send(wsMessage{Type: "connection_init", Payload: raw})
	readCtx, cancelRead := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelRead()
	var first wsMessage
	err = wsjson.Read(readCtx, conn, &first)
	return s, first, err
}

func (s *socket) send(m wsMessage) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(s.t, wsjson.Write(ctx, s.conn, m))
}

// next reads the next message other than a ping or pong.
func (s *socket) next(timeout time.Duration) wsMessage {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.t.Context(), timeout)
	defer cancel()
	for {
		var m wsMessage
		require.NoError(s.t, wsjson.Read(ctx, s.conn, &m))
		if m.Type != "ping" && m.Type != "pong" {
			return m
		}
	}
}

func (s *socket) subscribe(id, query string, vars map[string]any) {
	s.t.Helper()
	raw, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	s.send(wsMessage{ID: id, Type: "subscribe", Payload: raw})
}

type liveMessage struct {
	ID       string `json:"id"`
	ThreadID string `json:"threadId"`
	Status   string `json:"status"`
	Content  struct {
		Text string `json:"text"`
	} `json:"content"`
}

// receiveUntil sends inbound messages with send until the subscription
// delivers one, then returns it. The subscription starts when the server
// has processed the subscribe message, which the protocol does not
// acknowledge, so messages sent before that may rightly be missed.
func receiveUntil(t *testing.T, s *socket, id string, send func(i int)) liveMessage {
	t.Helper()
	// One read stays open while further messages are sent every 3 s: a read
	// cancelled by its context closes a coder/websocket connection, so the
	// resend cannot time the read out. Each read ends before the next starts,
	// and the last before this returns, so the socket stays the caller's.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	type result struct {
		m   wsMessage
		err error
	}
	reads := make(chan result, 1)
	read := func() {
		var m wsMessage
		err := wsjson.Read(ctx, s.conn, &m)
		reads <- result{m, err}
	}
	resend := time.NewTicker(3 * time.Second)
	defer resend.Stop()
	i := 0
	send(i)
	go read()
	for {
		select {
		case <-resend.C:
			i++
			send(i)
			continue
		case r := <-reads:
			if r.err != nil {
				require.ErrorIs(t, r.err, context.DeadlineExceeded)
				t.Fatalf("no event within 20 s of the first of %d inbound messages", i+1)
			}
			if r.m.Type == "ping" || r.m.Type == "pong" {
				go read()
				continue
			}
			require.Equal(t, id, r.m.ID)
			require.Equal(t, "next", r.m.Type, "payload: %s", r.m.Payload)
			var p struct {
				Data   map[string]liveMessage `json:"data"`
				Errors []gqlError             `json:"errors"`
			}
			require.NoError(t, json.Unmarshal(r.m.Payload, &p))
			require.Empty(t, p.Errors)
			for _, v := range p.Data {
				return v
			}
			t.Fatalf("a next message without data: %s", r.m.Payload)
		}
	}
}

func TestSubscriptions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)

		t.Run("ReceivesASandboxInboundMessage", func(t *testing.T) {
			s := b.dial(t, nil, map[string]any{"X-API-Key": b.acme.key, "X-API-Secret": b.acme.secret})
			s.subscribe("1", `subscription { messageReceived { id threadId status content { text } } }`, nil)
			// Another account's traffic never reaches this subscription.
			b.inbound(t, b.other, userA, agentOther, "not for acme")
			sent := map[string]string{}
			got := receiveUntilSent(t, s, "1", b, sent)
			require.Contains(t, sent, got.ID)
			require.Equal(t, sent[got.ID], got.Content.Text)
			require.Equal(t, "RECEIVED", got.Status)
		})

		t.Run("AcrossReplicas", func(t *testing.T) {
			// The subscriber is on one replica, the message arrives at
			// another: Postgres wakes the first through LISTEN/NOTIFY,
			// SQLite processes sharing a file through the reader's poll.
			other := b.replica(t)
			s := b.dial(t, nil, map[string]any{"X-API-Key": b.acme.key, "X-API-Secret": b.acme.secret})
			s.subscribe("r", `subscription { messageReceived { id content { text } } }`, nil)
			sent := map[string]string{}
			got := receiveUntil(t, s, "r", func(i int) {
				text := "via the other replica " + strings.Repeat("!", i+1)
				id, _ := other.inbound(t, b.acme, userA, agentA, text)
				sent[id] = text
			})
			require.Equal(t, sent[got.ID], got.Content.Text)
		})

		t.Run("FiltersByThread", func(t *testing.T) {
			_, thread := b.inbound(t, b.acme, userB, agentB, "open the thread")
			s := b.dial(t, nil, map[string]any{"headers": map[string]any{"x-api-key": b.acme.key, "x-api-secret": b.acme.secret}})
			s.subscribe("7", `subscription($t: ID) { messageReceived(threadId: $t) { id threadId content { text } } }`, map[string]any{"t": thread})
			got := receiveUntil(t, s, "7", func(i int) {
				b.inbound(t, b.acme, userA, agentA, "elsewhere") // another thread
				b.inbound(t, b.acme, userB, agentB, "here")
			})
			require.Equal(t, thread, got.ThreadID)
			require.Equal(t, "here", got.Content.Text)
		})

		t.Run("StatusChanges", func(t *testing.T) {
			_, thread := b.inbound(t, b.acme, userA, agentA, "write to me")
			s := b.dial(t, b.acme.headers(), nil) // credentials on the upgrade request
			s.subscribe("s", `subscription($t: ID) { messageStatusChanged(threadId: $t) { id threadId status } }`, map[string]any{"t": thread})
			got := receiveUntil(t, s, "s", func(i int) {
				b.data(t, b.acme, `mutation { sendMessage(input: {service: WHATSAPP, from: "`+agentA+`", to: "`+userA+`", text: "ping"}) { id } }`, nil, &struct{}{})
			})
			require.Equal(t, thread, got.ThreadID)
			require.Contains(t, []string{"SENT", "DELIVERED"}, got.Status)
		})

		t.Run("OtherAccountsThreadIsNotFound", func(t *testing.T) {
			_, thread := b.inbound(t, b.acme, userA, agentA, "private")
			s := b.dial(t, nil, map[string]any{"X-API-Key": b.other.key, "X-API-Secret": b.other.secret})
			s.subscribe("x", `subscription($t: ID) { messageReceived(threadId: $t) { id } }`, map[string]any{"t": thread})
			m := s.next(10 * time.Second)
			require.Equal(t, "next", m.Type, "payload: %s", m.Payload)
			var p gqlResponse
			require.NoError(t, json.Unmarshal(m.Payload, &p))
			require.JSONEq(t, `null`, string(p.Data))
			require.Len(t, p.Errors, 1)
			require.Equal(t, "not_found", p.Errors[0].Extensions["code"])
			require.Equal(t, "complete", s.next(10*time.Second).Type)
		})

		t.Run("SubscriptionsAreBounded", func(t *testing.T) {
			// A fresh account, so that other subtests' subscriptions do
			// not count.
			a, cred, err := b.acc.CreateAccount(t.Context(), "Bounded")
			require.NoError(t, err)
			acc := credentials{accountID: a.ID, key: cred.Key, secret: cred.Secret}
			creds := map[string]any{"X-API-Key": acc.key, "X-API-Secret": acc.secret}
			requireRefused := func(s *socket) {
				t.Helper()
				m := s.next(10 * time.Second)
				require.Equal(t, "next", m.Type, "payload: %s", m.Payload)
				var p gqlResponse
				require.NoError(t, json.Unmarshal(m.Payload, &p))
				require.Len(t, p.Errors, 1)
				require.Equal(t, "too_many_subscriptions", p.Errors[0].Extensions["code"], "message: %s", p.Errors[0].Message)
				require.Equal(t, "complete", s.next(10*time.Second).Type)
			}
			for i := range graph.DefaultSubscriptionsPerAccount / graph.DefaultSubscriptionsPerSocket {
				s := b.dial(t, nil, creds)
				for j := range graph.DefaultSubscriptionsPerSocket {
					s.subscribe(fmt.Sprintf("%d-%d", i, j), `subscription { messageReceived { id } }`, nil)
				}
				// The socket is full. A socket handles its messages in
				// order, so the refusal also says that those before it
				// were taken.
				s.subscribe("over-socket", `subscription { messageReceived { id } }`, nil)
				requireRefused(s)
			}
			// So is the account, on a new socket too.
			extra := b.dial(t, nil, creds)
			extra.subscribe("over-account", `subscription { messageReceived { id } }`, nil)
			requireRefused(extra)
			// The limits are of the account: another's subscriptions go on.
			s := b.dial(t, nil, map[string]any{"X-API-Key": b.other.key, "X-API-Secret": b.other.secret})
			s.subscribe("o", `subscription { messageReceived { id content { text } } }`, nil)
			got := receiveUntil(t, s, "o", func(i int) { b.inbound(t, b.other, userA, agentOther, "still live") })
			require.Equal(t, "still live", got.Content.Text)
		})

		t.Run("SocketsAreBounded", func(t *testing.T) {
			_, cred, err := b.acc.CreateAccount(t.Context(), "Sockets")
			require.NoError(t, err)
			creds := map[string]any{"X-API-Key": cred.Key, "X-API-Secret": cred.Secret}
			var open []*socket
			for range graph.DefaultSocketsPerAccount {
				open = append(open, b.dial(t, nil, creds))
			}
			s, answer, err := b.dialRaw(t, nil, creds)
			if err == nil {
				require.NotEqual(t, "connection_ack", answer.Type)
				_, _, err = s.conn.Read(t.Context())
			}
			require.Equal(t, websocket.StatusCode(4429), websocket.CloseStatus(err), "one socket too many: %v", err)
			// Closing one frees its place.
			require.NoError(t, open[0].conn.Close(websocket.StatusNormalClosure, ""))
			require.Eventually(t, func() bool {
				s, answer, err := b.dialRaw(t, nil, creds)
				if err == nil && answer.Type == "connection_ack" {
					open = append(open, s)
					return true
				}
				return false
			}, 10*time.Second, 50*time.Millisecond)
		})

		t.Run("WrongCredentialsAreRefused", func(t *testing.T) {
			for _, creds := range []map[string]any{
				{"X-API-Key": b.acme.key, "X-API-Secret": "wrong"},
				{},
			} {
				s, answer, err := b.dialRaw(t, nil, creds)
				if err == nil {
					// The legacy protocol's connection_error, then the close.
					require.NotEqual(t, "connection_ack", answer.Type)
					_, _, err = s.conn.Read(t.Context())
				}
				require.Error(t, err, "the server closes the connection without an ack")
				require.Equal(t, websocket.StatusCode(4403), websocket.CloseStatus(err),
					"closed as forbidden, so that clients do not reconnect: %v", err)
			}
		})
	})
}

// receiveUntilSent sends inbound messages from userA to agentA, recording
// them in sent, until the subscription delivers one.
func receiveUntilSent(t *testing.T, s *socket, id string, b *testBundle, sent map[string]string) liveMessage {
	t.Helper()
	return receiveUntil(t, s, id, func(i int) {
		text := "live " + strings.Repeat("!", i+1)
		msgID, _ := b.inbound(t, b.acme, userA, agentA, text)
		sent[msgID] = text
	})
}

func TestPlayground(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite)
	res, err := http.Get(b.base + "/graphql/playground")
	require.NoError(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode)
	page := string(body)
	require.Contains(t, page, "Switchboard GraphQL")
	csp := res.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self';")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, page, "<script>", "no inline script")
	require.NotContains(t, page, "//", "nothing from another host")

	// Every script and style the page names is served from the binary.
	assets := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	require.Len(t, assets, 6)
	for _, a := range assets {
		res, err := http.Get(b.base + a[1])
		require.NoError(t, err)
		asset, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode, a[1])
		require.NotEmpty(t, asset, a[1])
		if strings.HasSuffix(a[1], ".js") {
			require.Contains(t, res.Header.Get("Content-Type"), "javascript", a[1])
		} else {
			require.Contains(t, res.Header.Get("Content-Type"), "text/css", a[1])
		}
		if strings.HasSuffix(a[1], "/playground.js") {
			require.Contains(t, string(asset), "swk_", "the example key has the real keys' prefix")
		}
	}

	prod := setupWith(t, store.SQLite, appOptions{configure: func(c *bootstrap.Config) { c.Production = true }})
	for _, path := range []string{"/graphql/playground", "/graphql/playground/assets/playground.js"} {
		res, err = http.Get(prod.base + path)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusNotFound, res.StatusCode, path)
	}
}

// A key revoked while its socket is open ends the socket, its
// subscriptions with it, within about a second (the revocation watcher
// and the socket's recheck, each twice a second), instead of working on
// for as long as the socket lives.
func TestRevokedKeyEndsItsSockets(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		issued, err := b.acc.IssueCredential(t.Context(), b.acme.accountID, "socket")
		require.NoError(t, err)
		s := b.dial(t, nil, map[string]any{"X-API-Key": issued.Key, "X-API-Secret": issued.Secret})
		s.subscribe("1", `subscription { messageReceived { id } }`, nil)

		// Revoked by another replica's service, as the CLI or a second
		// server would: this process's cache learns it from the watcher.
		other := b.replica(t)
		_, err = other.acc.RevokeCredential(t.Context(), b.acme.accountID, issued.Credential.ID)
		require.NoError(t, err)
		revoked := time.Now()

		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		for {
			_, _, err = s.conn.Read(ctx)
			if err != nil {
				break
			}
		}
		require.NotErrorIs(t, err, context.DeadlineExceeded, "the socket of a revoked key stayed open")
		t.Logf("socket closed %s after the revocation: %v", time.Since(revoked).Round(time.Millisecond), err)
	})
}
