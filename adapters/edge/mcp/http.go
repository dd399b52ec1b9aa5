package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/application/mcpsessions"
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
	if h.locals.isClosed() {
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
	sess, opened, ok := h.session(w, r, p.AccountID)
	if !ok {
		return
	}
	defer h.locals.release(sess, h.now())
	if opened {
		// A session this request opened lives on only if its initialize
		// completed (scope stored its state); otherwise it ends with the
		// request.
		c.opening = sess
		defer func() {
			if !h.locals.isInitialized(sess) {
				h.locals.drop(sess)
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
				defer cancel()
				if err := h.deps.Sessions.End(ctx, sess.hash); err != nil {
					h.log.WarnContext(ctx, "mcp: end a session that did not initialize", "error", err.Error())
				}
			}
		}()
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
		key, secret := r.Header.Get("X-API-Key"), r.Header.Get("X-API-Secret")
		checks := time.AfterFunc(h.deps.CredentialRecheck, func() { h.recheck(ctx, cancel, sess, key, secret) })
		defer checks.Stop()
		r = r.WithContext(ctx)
		c.ctx = ctx
	}
	switch r.Method {
	case http.MethodDelete:
		if err := h.deps.Sessions.End(r.Context(), sess.hash); err != nil {
			h.writeFailure(w, r, err)
			return
		}
		h.locals.drop(sess)
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet:
		// The replica that holds the event stream sends the session's
		// resource updates: it hears of every message of the account.
		release, err := h.feed.watch(r.Context(), p.AccountID)
		if err != nil {
			h.writeFailure(w, r, err)
			return
		}
		defer release()
		h.locals.stream(sess, 1)
		defer h.locals.stream(sess, -1)
	}
	token := h.calls.add(c)
	defer h.calls.remove(token)
	r.Header.Set(callHeader, token)
	sess.transport.ServeHTTP(w, r)
}

// session finds the session a request belongs to, held here for the
// request (locals.release gives it back): the one its Mcp-Session-Id
// names, resumed from the database when this replica holds none, or, for
// a POST without one, a new session (opened true). An id that is
// unknown, ended or another account's is answered 404, as are ids of
// sessions that never were: no request makes a session of someone
// else's. false when the request was answered.
func (h *Handler) session(w http.ResponseWriter, r *http.Request, accountID string) (s *local, opened, ok bool) {
	if !h.acceptable(w, r) {
		return nil, false, false
	}
	ctx := r.Context()
	id := r.Header.Get(sessionHeader)
	var (
		stored mcpsessions.Session
		err    error
	)
	switch {
	case id != "":
		stored, err = h.deps.Sessions.Find(ctx, id, accountID)
		if failure.Is(err, failure.KindNotFound) {
			writeError(w, http.StatusNotFound, "session_not_found", "no MCP session "+truncate(id, 80))
			return nil, false, false
		}
		if err == nil {
			if terr := h.deps.Sessions.Touch(ctx, stored); terr != nil {
				h.log.WarnContext(ctx, "mcp: move a session's idle timeout on", "error", terr.Error())
			}
		}
	case r.Method == http.MethodPost:
		// A POST without a session opens one; it holds one of the
		// account's places from now until it ends, or until this request
		// ends when its initialize did not complete.
		id, stored, err = h.deps.Sessions.Open(ctx, accountID)
		if e := failure.As(err); e != nil && e.Code == "too_many_sessions" {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.RetryAfter)))
			writeError(w, http.StatusTooManyRequests, e.Code, e.Message)
			return nil, false, false
		}
		opened = true
	default:
		writeError(w, http.StatusBadRequest, "bad_request", r.Method+" /mcp needs the Mcp-Session-Id header of a session")
		return nil, false, false
	}
	if err != nil {
		h.writeFailure(w, r, err)
		return nil, false, false
	}
	if s, err = h.locals.acquire(id, stored); err != nil {
		h.writeFailure(w, r, err)
		return nil, false, false
	}
	return s, opened, true
}

// acceptable checks the media types of a request as the Streamable HTTP
// transport asks for them: a POST carries JSON and accepts both JSON and
// an event stream; a GET accepts an event stream.
func (h *Handler) acceptable(w http.ResponseWriter, r *http.Request) bool {
	json, stream := accepts(r.Header.Values("Accept"))
	switch r.Method {
	case http.MethodPost:
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
			return false
		}
		if !json || !stream {
			writeError(w, http.StatusBadRequest, "bad_request", "Accept must list both application/json and text/event-stream")
			return false
		}
	case http.MethodGet:
		if !stream {
			writeError(w, http.StatusBadRequest, "bad_request", "Accept must list text/event-stream")
			return false
		}
	}
	return true
}

// accepts reads which of JSON and an event stream Accept headers allow.
func accepts(values []string) (json, stream bool) {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, _, _ := mime.ParseMediaType(strings.TrimSpace(part))
			switch mt {
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				stream = true
			case "*/*":
				json, stream = true, true
			}
		}
	}
	return json, stream
}

// writeFailure answers a failure of the request's own, not of a call, in
// the edge's flat error shape: the database away is 503 with Retry-After.
func (h *Handler) writeFailure(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errClosed) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the server is shutting down; retry later")
		return
	}
	e := failure.As(err)
	if e == nil || e.Kind != failure.KindUnavailable {
		h.log.ErrorContext(r.Context(), "mcp: serve a session", "error", err.Error())
		writeError(w, http.StatusInternalServerError, "internal_error", "internal error")
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.RetryAfter)))
	writeError(w, http.StatusServiceUnavailable, "unavailable", e.Message)
}

// retryAfterSeconds rounds a wait up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// recheck checks a request's credentials at once and then every
// CredentialRecheck until ctx ends; once they are refused (the key was
// revoked) it ends the request (an event stream, a call) and its session,
// for every replica. A check that fails otherwise (the database away)
// changes nothing: an outage is no reason to drop every session. The auth
// cache answers the checks, and forgets revoked keys.
func (h *Handler) recheck(ctx context.Context, end context.CancelFunc, s *local, key, secret string) {
	t := time.NewTicker(h.deps.CredentialRecheck)
	defer t.Stop()
	for {
		if _, err := h.deps.Authenticator.Authenticate(ctx, key, secret, false); failure.Is(err, failure.KindUnauthenticated) {
			end()
			h.locals.drop(s)
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := h.deps.Sessions.End(ctx, s.hash); err != nil {
				h.log.WarnContext(ctx, "mcp: end the session of a revoked key", "error", err.Error())
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
// left, and the session it opened.
type call struct {
	principal accounts.Principal
	// ctx is the HTTP request's context, kept so that a handler running on
	// the SDK's detached context can end with it (see callHeader).
	ctx context.Context
	// quota is what spending the request's token left; a call runs only
	// when it was admitted.
	quota ratelimit.Quota
	// opening is the session a POST without a session id opened; nil on
	// other requests.
	opening *local
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
