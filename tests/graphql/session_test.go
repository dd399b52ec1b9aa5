package graphql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/switchboard-dev/switchboard/adapters/store"
	"github.com/switchboard-dev/switchboard/adapters/store/dbtest"
)

// session is a browser signed in to the dashboard: its cookie and the
// CSRF token its pages carry.
type session struct {
	cookie string // "sb_session=…"
	csrf   string
}

var csrfMeta = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)

// signIn signs in to the dashboard as c, as a browser does: the form,
// then the console page for its CSRF token.
func (b *testBundle) signIn(t *testing.T, c credentials) session {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"api_key": {c.key}, "api_secret": {c.secret}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/dashboard/sign-in", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	res, err := client.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	var s session
	for _, ck := range res.Cookies() {
		if ck.Name == "sb_session" {
			s.cookie = ck.Name + "=" + ck.Value
		}
	}
	require.NotEmpty(t, s.cookie)

	req, err = http.NewRequestWithContext(t.Context(), http.MethodGet, b.base+"/dashboard/", nil)
	require.NoError(t, err)
	req.Header.Set("Cookie", s.cookie)
	res, err = client.Do(req)
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	m := csrfMeta.FindSubmatch(page)
	require.NotNil(t, m, "page: %s", page)
	s.csrf = string(m[1])
	return s
}

// post sends a GraphQL operation over HTTP with headers (name, value
// pairs) and returns the status and body.
func (b *testBundle) post(t *testing.T, query string, headers ...string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/graphql", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "body: %s", body)
	return e.Code
}

// closed waits until the server ends the socket, and fails if it does not
// within a few seconds.
func closed(t *testing.T, s *socket, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	var err error
	for err == nil {
		_, _, err = s.conn.Read(ctx)
	}
	require.NotErrorIs(t, err, context.DeadlineExceeded, "the socket stayed open after %s", what)
	t.Logf("socket closed %s after %s: %v", time.Since(start).Round(time.Millisecond), what, err)
}

func TestSessionCookieOnGraphQL(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		s := b.signIn(t, b.acme)
		b.inbound(t, b.acme, userA, agentA, "the user writes first")
		send := `mutation { sendMessage(input: {service: WHATSAPP, from: "` + agentA + `", to: "` + userA + `", text: "from the console"}) { id } }`

		status, body := b.post(t, `{ account { id name } }`, "Cookie", s.cookie, "Origin", b.base)
		require.Equal(t, http.StatusForbidden, status, "every POST needs the CSRF token, queries too: %s", body)
		require.Equal(t, "csrf_token_invalid", errorCode(t, body))
		status, body = b.post(t, send, "Cookie", s.cookie, "Origin", b.base)
		require.Equal(t, http.StatusForbidden, status, "body: %s", body)
		status, body = b.post(t, send, "Cookie", s.cookie, "Origin", "https://evil.example", "X-CSRF-Token", s.csrf)
		require.Equal(t, http.StatusForbidden, status, "body: %s", body)
		require.Equal(t, "cross_site_request", errorCode(t, body))

		status, body = b.post(t, `{ account { id name } }`, "Cookie", s.cookie, "Origin", b.base, "X-CSRF-Token", s.csrf)
		require.Equal(t, http.StatusOK, status, "body: %s", body)
		require.Contains(t, string(body), `"id":"`+b.acme.accountID+`"`)
		status, body = b.post(t, send, "Cookie", s.cookie, "Origin", b.base, "Sec-Fetch-Site", "same-origin", "X-CSRF-Token", s.csrf)
		require.Equal(t, http.StatusOK, status, "body: %s", body)
		require.Contains(t, string(body), `"sendMessage":{"id":"msg_`)

		// Queries over GET need no CSRF token; mutations cannot ride on GET.
		get := func(query string) (int, string) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.base+"/graphql?query="+url.QueryEscape(query), nil)
			require.NoError(t, err)
			req.Header.Set("Cookie", s.cookie)
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(raw)
		}
		status, got := get(`{ account { id } }`)
		require.Equal(t, http.StatusOK, status, got)
		require.Contains(t, got, b.acme.accountID)
		_, got = get(send)
		require.NotContains(t, got, `"sendMessage":{`, "a mutation over GET is refused")

		// API keys work as before, without a CSRF token.
		status, body = b.post(t, `{ account { id } }`, "X-API-Key", b.acme.key, "X-API-Secret", b.acme.secret)
		require.Equal(t, http.StatusOK, status, "body: %s", body)
	})
}

// dialSession opens a WebSocket to /graphql with the session cookie and
// origin (none when empty).
func (b *testBundle) dialSession(t *testing.T, s session, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h := http.Header{"Cookie": {s.cookie}}
	if origin != "" {
		h.Set("Origin", origin)
	}
	conn, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(b.base, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: h,
	})
	if conn != nil {
		t.Cleanup(func() { _ = conn.CloseNow() })
	}
	return conn, res, err
}

// A browser signed in to the dashboard opens the GraphQL WebSocket with
// its cookie alone (connection_init carries nothing), from the server's
// own origin only; its subscriptions end with its session.
func TestSessionCookieOnTheWebSocket(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		s := b.signIn(t, b.acme)

		for name, origin := range map[string]string{"foreign origin": "https://evil.example", "no origin": ""} {
			_, res, err := b.dialSession(t, s, origin)
			require.Error(t, err, name)
			require.NotNil(t, res, name)
			require.Equal(t, http.StatusForbidden, res.StatusCode, name)
		}

		conn, _, err := b.dialSession(t, s, b.base)
		require.NoError(t, err)
		sock := &socket{t: t, conn: conn}
		sock.send(wsMessage{Type: "connection_init", Payload: json.RawMessage(`{}`)})
		require.Equal(t, "connection_ack", sock.next(10*time.Second).Type)
		sock.subscribe("1", `subscription { messageReceived { id threadId status content { text } } }`, nil)
		sent := map[string]string{}
		got := receiveUntilSent(t, sock, "1", b, sent)
		require.Equal(t, sent[got.ID], got.Content.Text)

		// Signing out ends the session's sockets too.
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.base+"/dashboard/sign-out",
			strings.NewReader(url.Values{"csrf_token": {s.csrf}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", s.cookie)
		req.Header.Set("Origin", b.base)
		res, err := client.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		closed(t, sock, "sign-out")

		// The upgrade passes (its origin is right); connection_init is
		// refused, with 4403 so that clients do not reconnect.
		conn, _, err = b.dialSession(t, s, b.base)
		require.NoError(t, err)
		again := &socket{t: t, conn: conn}
		again.send(wsMessage{Type: "connection_init", Payload: json.RawMessage(`{}`)})
		closed(t, again, "connection_init with an ended session")
	})
}

// Revoking the key a session was signed in with ends the session on
// every transport: its open sockets within about a second, its next
// request at once.
func TestRevokedKeyEndsItsSessions(t *testing.T) {
	t.Parallel()
	dbtest.ForEachDialect(t, func(t *testing.T, dialect store.Dialect) {
		b := setup(t, dialect)
		issued, err := b.acc.IssueCredential(t.Context(), b.acme.accountID, "console")
		require.NoError(t, err)
		s := b.signIn(t, credentials{accountID: b.acme.accountID, key: issued.Key, secret: issued.Secret})
		conn, _, err := b.dialSession(t, s, b.base)
		require.NoError(t, err)
		sock := &socket{t: t, conn: conn}
		sock.send(wsMessage{Type: "connection_init", Payload: json.RawMessage(`{}`)})
		require.Equal(t, "connection_ack", sock.next(10*time.Second).Type)
		sock.subscribe("1", `subscription { messageReceived { id } }`, nil)

		// Revoked by another replica, as the CLI would.
		other := b.replica(t)
		_, err = other.acc.RevokeCredential(t.Context(), b.acme.accountID, issued.Credential.ID)
		require.NoError(t, err)
		closed(t, sock, "the revocation")

		eventually(t, func() bool {
			status, _ := b.post(t, `{ account { id } }`, "Cookie", s.cookie, "Origin", b.base, "X-CSRF-Token", s.csrf)
			return status == http.StatusUnauthorized
		}, "the revoked key's session still answers")
	})
}
