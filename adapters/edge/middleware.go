package edge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// requestInfo travels in the context so that the outermost middleware (the
// access log and metrics) learns what inner layers found out: the matched
// route and the authenticated account.
type requestInfo struct {
	id        string
	route     string
	accountID string
	// client is the address the request comes from (clientOf).
	client string
}

type requestInfoKey struct{}

func infoFrom(ctx context.Context) *requestInfo {
	if ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{}
}

func requestIDFrom(ctx context.Context) string { return infoFrom(ctx).id }

// NameRoute names the route that serves the request of ctx, for the
// request log and metrics; names come from a bounded set (route
// templates), never from a raw path.
func NameRoute(ctx context.Context, route string) { infoFrom(ctx).route = route }

// isJSON reports whether a Content-Type header names JSON. The plain
// header most clients send is recognised without parsing it.
func isJSON(contentType string) bool {
	if contentType == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// validRequestID accepts a caller's X-Request-Id only when it is short and
// plain, so it can be logged and echoed safely.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// statusRecorder remembers what a handler wrote, for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer (flushing,
// hijacking for WebSockets).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_http_requests_total", Help: "HTTP requests by route, method and status code.",
		}, []string{"route", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_http_request_duration_seconds", Help: "HTTP request latency by route and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route", "method"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// observe is the outermost layer: it assigns the request id, recovers
// panics, and writes one log line and the metrics per request.
func (h *Host) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &requestInfo{id: r.Header.Get("X-Request-Id"), route: "unmatched", client: clientOf(r, h.limits.TrustedProxies)}
		if !validRequestID(ri.id) {
			ri.id = newRequestID()
		}
		w.Header().Set("X-Request-Id", ri.id)
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				h.log.ErrorContext(r.Context(), "panic serving request", "request_id", ri.id, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.status == 0 {
					WriteError(rec, r, fmt.Errorf("panic: %v", p))
				}
			}
			elapsed := time.Since(start)
			h.metrics.requests.WithLabelValues(ri.route, r.Method, strconv.Itoa(rec.status)).Inc()
			h.metrics.duration.WithLabelValues(ri.route, r.Method).Observe(elapsed.Seconds())
			if h.log.Enabled(r.Context(), slog.LevelInfo) {
				h.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("request_id", ri.id), slog.String("method", r.Method), slog.String("path", r.URL.Path),
					slog.String("route", ri.route), slog.Int("status", rec.status), slog.Int("bytes", rec.bytes),
					slog.Duration("duration", elapsed), slog.String("account_id", ri.accountID), slog.String("remote", ri.client))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// withDeadline gives each request its deadline (Limits.RequestTimeout).
// A WebSocket upgrade is exempt: the socket lives as long as its
// subscriptions, and each operation on it gets its own deadline. So is
// /mcp: its event stream lives as long as its session and a long poll
// (wait_for_message) outlasts the deadline; the MCP handler set gives each
// call its own.
func (h *Host) withDeadline(next http.Handler) http.Handler {
	timeout := h.limits.RequestTimeout
	if timeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || r.URL.Path == mcpPath {
			next.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// guardBody enforces the body rules of every API route: JSON only (but
// for the providers' callbacks), and at most MaxBodyBytes (413 beyond, decided before the handler reads a byte when the
// length is declared, and while reading when it is not).
func (h *Host) guardBody(next http.Handler) http.Handler {
	page := next
	if h.pages != nil {
		page = h.pages(next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hasBody := r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
		if r.URL.Path == "/dashboard" || strings.HasPrefix(r.URL.Path, "/dashboard/") {
			// The dashboard's HTML forms: it bounds them itself, and
			// answers in HTML with its security headers (Pages), the
			// router's redirects to a clean path included.
			page.ServeHTTP(w, r)
			return
		}
		if hasBody && !isJSON(r.Header.Get("Content-Type")) && !strings.HasPrefix(r.URL.Path, "/v1/providers/") {
			WriteError(w, r, &failure.Error{Kind: failure.KindUnsupportedMediaType, Code: "unsupported_media_type",
				Message: "request body must be JSON (Content-Type: application/json)"})
			return
		}
		if r.ContentLength > h.limits.MaxBodyBytes {
			WriteError(w, r, &failure.Error{Kind: failure.KindTooLarge, Code: "payload_too_large",
				Message: fmt.Sprintf("request body is larger than %d bytes", h.limits.MaxBodyBytes)})
			return
		}
		if hasBody {
			r.Body = http.MaxBytesReader(w, r.Body, h.limits.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// credentials reads the caller's credentials: the key and secret headers,
// or, where bearerKey (the cron routes only, as the interface defines
// them), "Authorization: Bearer <key>", the key alone as a full
// credential. Anywhere else an Authorization header is ignored, and a
// request that carries only it is unauthenticated.
func credentials(r *http.Request, bearerKey bool) (key, secret string, keyOnly bool) {
	if bearerKey {
		if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
			return strings.TrimSpace(auth[7:]), "", true
		}
	}
	return r.Header.Get("X-API-Key"), r.Header.Get("X-API-Secret"), false
}

// authenticate admits a request with valid credentials (key and secret,
// or the dashboard's session cookie) for the account in its path, within
// the account's rate limit. Clients that keep failing to authenticate are
// slowed down before their credentials are even checked.
func (h *Host) authenticate(next http.Handler) http.Handler {
	return h.admit(next, admission{})
}

// authenticateCron is authenticate for the cron routes, where a bearer
// key alone is also a credential.
func (h *Host) authenticateCron(next http.Handler) http.Handler {
	return h.admit(next, admission{bearerKey: true})
}

// authenticateHandingOnRefusals is authenticate for a handler that
// answers a refused request itself (/mcp): a request beyond the
// account's budget reaches it too, its refused quota in the context
// (ratelimit.QuotaFrom), as every admitted one's.
func (h *Host) authenticateHandingOnRefusals(next http.Handler) http.Handler {
	return h.admit(next, admission{handOn: true})
}

// admission is how a route admits requests: bearerKey takes the key
// alone as a credential (the cron routes only); handOn hands requests
// beyond the rate limit on to the handler (see
// authenticateHandingOnRefusals).
type admission struct {
	bearerKey bool
	handOn    bool
}

// admit is authenticate, as a route's admission says.
func (h *Host) admit(next http.Handler, a admission) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := infoFrom(r.Context())
		if tmpl, err := mux.CurrentRoute(r).GetPathTemplate(); err == nil {
			ri.route = tmpl
		}
		attempt, done := h.limiters.AuthFailures.Attempt(r.Context(), ClientAddress(r))
		if !attempt.Admitted() {
			WriteError(w, r, failure.RateLimited("too many failed authentication attempts from this address", attempt.RetryAfter))
			return
		}
		principal, err := h.principal(r, a.bearerKey, done)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		ri.accountID = principal.AccountID
		vars := mux.Vars(r)
		for _, name := range []string{"accountId", "account_id"} {
			if id, ok := vars[name]; ok && id != principal.AccountID {
				WriteError(w, r, failure.Forbidden("account_mismatch", "these credentials do not belong to account "+truncate(id, 80)))
				return
			}
		}
		quota := h.limiters.Accounts.Take(r.Context(), principal.AccountID)
		rateLimitHeaders(w, quota)
		if !quota.Admitted() && !a.handOn {
			WriteError(w, r, failure.RateLimited("rate limit exceeded for this account", quota.RetryAfter))
			return
		}
		ctx := accounts.WithPrincipal(r.Context(), principal)
		if a.handOn {
			ctx = ratelimit.WithQuota(ctx, quota)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// principal authenticates r and reports to done whether that failed: with
// the API key headers, or, when r has none, with the session cookie of a
// browser signed in to the dashboard (sessionPrincipal).
func (h *Host) principal(r *http.Request, bearerKey bool, done func(failed bool)) (accounts.Principal, error) {
	key, secret, keyOnly := credentials(r, bearerKey)
	if key == "" && h.sessions != nil {
		if c, err := r.Cookie(SessionCookie); err == nil {
			// A refused session token does not count as a failed
			// authentication: it has 256 random bits, nothing to guess,
			// and a tab whose session ended sends a burst of them.
			done(false)
			return h.sessionPrincipal(r, c.Value)
		}
	}
	principal, err := h.accounts.Authenticate(r.Context(), key, secret, keyOnly)
	done(failure.Is(err, failure.KindUnauthenticated))
	return principal, err
}

// sessionPrincipal authenticates r with a session token: the browser must
// say r comes from the server's own origin, and a request that may change
// state (any method but GET and HEAD; GraphQL mutations ride on POST)
// must repeat the session's CSRF token in X-CSRF-Token. Forbidden when
// either fails (cross_site_request, csrf_token_invalid); Unauthenticated
// when the session is unknown, ended or its key revoked.
func (h *Host) sessionPrincipal(r *http.Request, token string) (accounts.Principal, error) {
	if !FromOwnOrigin(r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"), r.Host, r.TLS != nil) {
		return accounts.Principal{}, failure.Forbidden("cross_site_request", "a request with the dashboard's session cookie must come from the dashboard's own origin")
	}
	p, err := h.sessions.Resume(r.Context(), token)
	if err != nil {
		return accounts.Principal{}, err
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !h.csrf.Check(token, r.Header.Get(CSRFHeader)) {
		return accounts.Principal{}, failure.Forbidden("csrf_token_invalid", "a request with the dashboard's session cookie that changes state must carry the session's CSRF token in "+CSRFHeader)
	}
	return p, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// rateLimitHeaders reports q in the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers): the policy, as its quota q and
// window w in seconds, and what is left of it, r requests with t seconds
// until the bucket is full again.
func rateLimitHeaders(w http.ResponseWriter, q ratelimit.Quota) {
	if !q.Policy.Enabled() {
		return
	}
	name := strconv.Quote(q.Policy.Name)
	w.Header().Set("RateLimit-Policy", name+";q="+strconv.Itoa(max(q.Policy.Burst, 1))+";w="+strconv.Itoa(int(q.Policy.Window()/time.Second)))
	w.Header().Set("RateLimit", name+";r="+strconv.Itoa(q.Remaining)+";t="+strconv.Itoa(int(math.Ceil(q.Reset.Seconds()))))
}
