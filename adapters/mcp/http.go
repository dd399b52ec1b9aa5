package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// callHeader names, on a request handed to the SDK, the entry of calls
// the request's messages are handled in. The SDK handles a session's
// messages on contexts of its own, detached from the HTTP request that
// carried them, and passes each handler only the request's headers; this
// header is how a handler finds the request's principal and learns that
// its client went away. It is set here on every request, over anything a
// client sent.
const callHeader = "Switchboard-Mcp-Call"

// sessionHeader is the Streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// callSlack is how long, beyond the longest call, an HTTP request
// carrying calls may take to be read and answered.
const callSlack = 10 * time.Second

// ServeHTTP serves one MCP request of the authenticated account: a POST
// carrying messages, the GET of a session's event stream, or the DELETE
// that ends a session.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := accounts.PrincipalFrom(r.Context())
	if !ok {
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing or invalid API credentials")
		return
	}
	if h.sessions.isClosed() {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the server is shutting down; retry later")
		return
	}
	if id := r.Header.Get(sessionHeader); id != "" {
		// A session answers only its own account: another account's
		// session id is not found, like any other id of another account.
		if owner, known := h.sessions.owner(id); known && owner != p.AccountID {
			writeError(w, http.StatusNotFound, "session_not_found", "no MCP session "+truncate(id, 80))
			return
		}
	} else if r.Method == http.MethodPost && h.sessions.count(p.AccountID) >= h.deps.MaxSessionsPerAccount {
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, "too_many_sessions",
			"this account has "+strconv.Itoa(h.deps.MaxSessionsPerAccount)+" MCP sessions open on this server; close one (DELETE /mcp) or let one idle out")
		return
	}
	// The server's read and write timeouts would cut an event stream, and
	// a long poll, short.
	rc := http.NewResponseController(w)
	switch r.Method {
	case http.MethodGet:
		// The event stream lives as long as its session, which ends when
		// idle (SessionIdleTimeout) or closed, or as long as its
		// credentials hold.
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
	case http.MethodPost:
		until := time.Now().Add(MaxWaitSeconds*time.Second + h.deps.CallTimeout + callSlack)
		_ = rc.SetReadDeadline(until)
		_ = rc.SetWriteDeadline(until)
	}
	if h.deps.Authenticator != nil {
		// Event streams and calls (a wait lasts up to a minute) end when
		// their key is revoked. The checks start only once a request
		// outlives one interval: most calls end sooner, at no cost.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		sessionID, key, secret := r.Header.Get(sessionHeader), r.Header.Get("X-API-Key"), r.Header.Get("X-API-Secret")
		checks := time.AfterFunc(h.deps.CredentialRecheck, func() { h.recheck(ctx, cancel, sessionID, key, secret) })
		defer checks.Stop()
		r = r.WithContext(ctx)
	}
	token := h.calls.add(r.Context(), p)
	defer h.calls.remove(token)
	r.Header.Set(callHeader, token)
	h.http.ServeHTTP(w, r)
}

// recheck checks a request's credentials at once and then every
// CredentialRecheck until ctx ends; once they are refused (the key was
// revoked) it ends the request (an event stream, a call) and its session.
// A check that fails otherwise (the database away) changes nothing: an
// outage is no reason to drop every session. The auth cache answers the
// checks, and forgets revoked keys.
func (h *Handler) recheck(ctx context.Context, end context.CancelFunc, sessionID, key, secret string) {
	t := time.NewTicker(h.deps.CredentialRecheck)
	defer t.Stop()
	for {
		if _, err := h.deps.Authenticator.Authenticate(ctx, key, secret, false); failure.Is(err, failure.KindUnauthenticated) {
			end()
			for ss := range h.server.Sessions() {
				if ss.ID() == sessionID {
					_ = ss.Close()
				}
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// writeError answers in the REST adapter's flat error shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(map[string]string{"detail": message, "status": "error", "message": message, "code": code})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// call is one HTTP request being served: who sent it, and its context,
// which ends when the client goes away.
type call struct {
	principal accounts.Principal
	// ctx is the HTTP request's context, kept so that a handler running on
	// the SDK's detached context can end with it (see callHeader).
	ctx context.Context
}

// calls are the HTTP requests being served, by the token of their
// callHeader.
type calls struct {
	mu sync.Mutex
	m  map[string]call
}

func newCalls() *calls { return &calls{m: map[string]call{}} }

func (c *calls) add(ctx context.Context, p accounts.Principal) string {
	token := rand.Text()
	c.mu.Lock()
	c.m[token] = call{principal: p, ctx: ctx}
	c.mu.Unlock()
	return token
}

func (c *calls) remove(token string) {
	c.mu.Lock()
	delete(c.m, token)
	c.mu.Unlock()
}

// of finds the HTTP request a message came in. It is gone when the
// request was answered before the message was handled: a notification
// (answered 202 at once), or a call whose client went away.
func (c *calls) of(req sdk.Request) (call, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return call{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.m[extra.Header.Get(callHeader)]
	return in, ok
}

// sessions are the open MCP sessions of this process: whose each is, and
// the threads it watches.
type sessions struct {
	mu     sync.Mutex
	byID   map[string]*session
	counts map[string]int
	closed bool
}

type session struct {
	accountID string
	// watches end the session's resource subscriptions, by URI.
	watches map[string]func()
}

func newSessions() *sessions {
	return &sessions{byID: map[string]*session{}, counts: map[string]int{}}
}

// open records a session of accountID until ss ends.
func (s *sessions) open(ss *sdk.ServerSession, accountID string) {
	id := ss.ID()
	s.mu.Lock()
	if _, dup := s.byID[id]; dup || s.closed {
		s.mu.Unlock()
		return
	}
	s.byID[id] = &session{accountID: accountID, watches: map[string]func(){}}
	s.counts[accountID]++
	s.mu.Unlock()
	go func() {
		_ = ss.Wait()
		s.end(id)
	}()
}

// end forgets a session and ends its resource subscriptions.
func (s *sessions) end(id string) {
	s.mu.Lock()
	sess, ok := s.byID[id]
	if ok {
		delete(s.byID, id)
		if s.counts[sess.accountID]--; s.counts[sess.accountID] <= 0 {
			delete(s.counts, sess.accountID)
		}
	}
	s.mu.Unlock()
	if ok {
		for _, release := range sess.watches {
			release()
		}
	}
}

func (s *sessions) owner(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[id]
	if !ok {
		return "", false
	}
	return sess.accountID, true
}

func (s *sessions) count(accountID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[accountID]
}

// watch records a resource subscription of a session; false when the
// session already has it (or is gone), and release was not kept.
func (s *sessions) watch(id, uri string, release func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.byID[id]
	if !ok {
		return false
	}
	if _, dup := sess.watches[uri]; dup {
		return false
	}
	sess.watches[uri] = release
	return true
}

// unwatch ends a resource subscription of a session.
func (s *sessions) unwatch(id, uri string) {
	s.mu.Lock()
	var release func()
	if sess, ok := s.byID[id]; ok {
		release = sess.watches[uri]
		delete(sess.watches, uri)
	}
	s.mu.Unlock()
	if release != nil {
		release()
	}
}

func (s *sessions) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

func (s *sessions) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
