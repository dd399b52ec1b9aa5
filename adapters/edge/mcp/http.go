package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
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
// carrying one message, the GET of a session's event stream, or the
// DELETE that ends a session.
//
// Each HTTP request spends one of the account's request tokens in the
// authentication in front (the edge's host, as for every route), which
// hands the quota on, admitted or not. A POST carrying a tools/call or
// resources/read beyond the budget goes on to the SDK, and the call is
// answered as its own error (rate_limited, with retry_after_seconds)
// without running; any other request beyond the budget is answered 429
// here. A batch is refused before anything runs, so one token never pays
// for more than one call.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !originAllowed(r, h.deps.AllowedOrigins) {
		writeRPCError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest,
			"Origin "+truncate(r.Header.Get("Origin"), 80)+" is not allowed to call /mcp (the server's SWITCHBOARD_MCP_ALLOWED_ORIGINS)")
		return
	}
	if !hostAllowed(r, h.deps.AllowedHosts) {
		writeRPCError(w, http.StatusForbidden, jsonrpc.CodeInvalidRequest,
			"Host "+truncate(r.Host, 80)+" is not a loopback name, on a loopback connection (the server's SWITCHBOARD_MCP_ALLOWED_HOSTS)")
		return
	}
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
	var msg jsonrpc.Message
	if r.Method == http.MethodPost {
		if msg, ok = readMessage(w, r, h.deps.MaxBodyBytes); !ok {
			return
		}
	}
	quota, _ := ratelimit.QuotaFrom(r.Context())
	if !quota.Admitted() && !isCall(msg) {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(quota.RetryAfter)))
		writeError(w, http.StatusTooManyRequests, "rate_limited", "rate limit exceeded for this account")
		return
	}
	c := &call{principal: p, ctx: r.Context(), quota: quota}
	if id := r.Header.Get(sessionHeader); id != "" {
		// A session answers only its own account: another account's
		// session id is not found, like any other id of another account.
		if owner, known := h.sessions.owner(id); known && owner != p.AccountID {
			writeError(w, http.StatusNotFound, "session_not_found", "no MCP session "+truncate(id, 80))
			return
		}
	} else if r.Method == http.MethodPost {
		// A POST without a session makes the SDK create one; it holds one
		// of the account's places from now until it ends, or until this
		// request ends when no session came of it.
		if c.slot = h.sessions.reserve(p.AccountID, h.deps.MaxSessionsPerAccount); c.slot == nil {
			w.Header().Set("Retry-After", "60")
			writeError(w, http.StatusTooManyRequests, "too_many_sessions",
				"this account has "+strconv.Itoa(h.deps.MaxSessionsPerAccount)+" MCP sessions open on this server; close one (DELETE /mcp) or let one idle out")
			return
		}
		defer h.sessions.release(c.slot)
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
		c.ctx = ctx
	}
	token := h.calls.add(c)
	defer h.calls.remove(token)
	r.Header.Set(callHeader, token)
	h.http.ServeHTTP(w, r)
}

// retryAfterSeconds rounds a wait up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
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

// writeError answers in the edge's flat error shape (REST's).
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

// call is one HTTP request being served: who sent it, its context,
// which ends when the client goes away, the quota its request token
// left, and the session place it holds.
type call struct {
	principal accounts.Principal
	// ctx is the HTTP request's context, kept so that a handler running on
	// the SDK's detached context can end with it (see callHeader).
	ctx context.Context
	// quota is what spending the request's token left; a call runs only
	// when it was admitted.
	quota ratelimit.Quota
	// slot is the session place a POST without a session holds; nil on
	// other requests.
	slot *slot
}

// calls are the HTTP requests being served, by the token of their
// callHeader.
type calls struct {
	mu sync.Mutex
	m  map[string]*call
}

func newCalls() *calls { return &calls{m: map[string]*call{}} }

func (c *calls) add(in *call) string {
	token := rand.Text()
	c.mu.Lock()
	c.m[token] = in
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
func (c *calls) of(req sdk.Request) (*call, bool) {
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.m[extra.Header.Get(callHeader)]
	return in, ok
}

// sessions are the open MCP sessions of this process: whose each is, and
// the threads it watches.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	// held counts each account's open sessions and reserved slots: the
	// number its cap applies to.
	held   map[string]int
	closed bool
}

type session struct {
	accountID string
	// watches end the session's resource subscriptions, by URI.
	watches map[string]func()
}

// slot is a place for one session of an account, reserved before the SDK
// creates the session, so that the cap is checked and taken at once.
// Once reserved it is either opened (the session holds it until it ends)
// or released (no session came of the request); never both.
type slot struct {
	accountID string
	state     slotState
}

type slotState int

const (
	slotReserved slotState = iota
	slotOpened
	slotReleased
)

func newSessions() *sessions {
	return &sessions{byID: map[string]*session{}, held: map[string]int{}}
}

// reserve takes a place for a session of accountID if the account holds
// fewer than limit (sessions and reserved places); nil otherwise.
func (s *sessions) reserve(accountID string, limit int) *slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[accountID] >= limit {
		return nil
	}
	s.held[accountID]++
	return &slot{accountID: accountID}
}

// release gives back a reserved place that no session took.
func (s *sessions) release(sl *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl.state == slotReserved {
		sl.state = slotReleased
		s.drop(sl.accountID)
	}
}

// drop gives back one of an account's places; s.mu is held.
func (s *sessions) drop(accountID string) {
	if s.held[accountID]--; s.held[accountID] <= 0 {
		delete(s.held, accountID)
	}
}

// open records ss, initialized by the request holding sl, until it ends.
// A session already recorded is left as it is. A session that holds no
// reserved place (its request ended first and gave the place back, or
// the server is shutting down) is closed, from a goroutine of its own
// (closing waits for the handler that calls open): it would go beyond
// the cap.
func (s *sessions) open(ss *sdk.ServerSession, sl *slot) {
	id := ss.ID()
	s.mu.Lock()
	if _, dup := s.byID[id]; dup {
		s.mu.Unlock()
		return
	}
	if sl == nil || sl.state != slotReserved || s.closed {
		s.mu.Unlock()
		go func() { _ = ss.Close() }()
		return
	}
	sl.state = slotOpened
	s.byID[id] = &session{accountID: sl.accountID, watches: map[string]func(){}}
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
		s.drop(sess.accountID)
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
