// Package edge is the inbound HTTP edge of Switchboard, the one host every
// transport is served by: the server and its one router, the request log
// and metrics, the request deadline and body rules, who a request acts as
// (API key, or dashboard session with CSRF), the client address behind
// trusted proxies, the rate limits, the idempotency-key protocol and the
// one table that turns domain failures into status codes and error
// bodies.
//
// The handler sets are packages below it (rest, mcp, dashboard) and graph,
// which mount their routes on a Host; they never import each other.
package edge

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/switchboard-dev/switchboard/adapters/edge/ratelimit"
	"github.com/switchboard-dev/switchboard/application/accounts"
	"github.com/switchboard-dev/switchboard/domain/failure"
)

// Authenticator checks a request's API credentials; *accounts.Service
// implements it.
type Authenticator interface {
	// Authenticate checks key and secret (or the key alone, keyOnly).
	// Unauthenticated when they are refused.
	Authenticate(ctx context.Context, key, secret string, keyOnly bool) (accounts.Principal, error)
}

// Sessions resume the dashboard's browser sessions, so that the APIs
// accept a session cookie in place of the API key headers;
// *sessions.Service implements it.
type Sessions interface {
	// Resume returns who the session of token acts as and moves its idle
	// timeout on. Unauthenticated when it is unknown, ended or its key
	// revoked.
	Resume(ctx context.Context, token string) (accounts.Principal, error)
}

// Limits bound what one client may ask of the server.
type Limits struct {
	// MaxBodyBytes is the largest request body accepted (413 beyond).
	MaxBodyBytes int64
	// RatePerSecond and RateBurst bound each account's requests; 0 disables.
	RatePerSecond float64
	RateBurst     int
	// AuthFailuresPerMinute bounds failed authentications per client
	// address; further attempts get 429 until the budget refills. 0 disables.
	AuthFailuresPerMinute int
	// AuthFailuresIPv6Prefix is how many leading bits of an IPv6 client
	// address make one client for AuthFailuresPerMinute: a host is usually
	// given a whole /64, so its addresses share one budget. IPv4 addresses
	// count one by one. 0 means 64.
	AuthFailuresIPv6Prefix int
	// TrustedProxies are the peers whose X-Forwarded-For is believed for
	// the client address of the per-address limits and the request log
	// (see clientOf), and whose X-Forwarded-Proto is believed (ForwardedTLS).
	// Empty: every client is its peer address.
	TrustedProxies []netip.Prefix
	// RequestTimeout is every request's deadline, waiting for a database
	// connection included; past it the request answers 503 unavailable.
	// WebSocket connections are exempt (their operations are not).
	// 0 disables.
	RequestTimeout time.Duration
}

// AccountPolicy is the per-account request limit: RatePerSecond refills a
// burst of RateBurst.
func (l Limits) AccountPolicy() ratelimit.Policy {
	return ratelimit.Policy{Name: "account", PerSecond: l.RatePerSecond, Burst: max(l.RateBurst, 1)}
}

// AuthFailurePolicy is the budget of failed authentications (and, apart,
// of failed provider signatures) per client address: AuthFailuresPerMinute
// a minute, all of them at once.
func (l Limits) AuthFailurePolicy() ratelimit.Policy {
	return ratelimit.Policy{Name: "auth-failures", PerSecond: float64(l.AuthFailuresPerMinute) / 60, Burst: l.AuthFailuresPerMinute}
}

// RequestLimiter admits requests of a key (an account) within its budget;
// *ratelimit.Limiter implements it.
type RequestLimiter interface {
	Take(ctx context.Context, key string) ratelimit.Quota
}

// AttemptLimiter admits attempts from a client address while its failures
// stay within their budget; done reports whether the attempt failed.
// ratelimit.PerAddress implements it.
type AttemptLimiter interface {
	Attempt(ctx context.Context, addr string) (q ratelimit.Quota, done func(failed bool))
}

var (
	_ RequestLimiter = (*ratelimit.Limiter)(nil)
	_ AttemptLimiter = ratelimit.PerAddress{}
)

// Limiters hold the budgets of Limits. Replicas of one database share
// them when the composition root builds them over the database
// (NewLimiters); what is nil New fills with this process's own.
type Limiters struct {
	// Accounts limits each account's requests, and each agent number's
	// verified provider posts (keys "provider:<numberId>").
	Accounts RequestLimiter
	// AuthFailures limits failed API-key authentications per client
	// address, on every transport.
	AuthFailures AttemptLimiter
	// ProviderFailures limits failed provider signatures per client
	// address, apart from AuthFailures.
	ProviderFailures AttemptLimiter
}

// NewLimiters builds the limiters of l over buckets (ratelimit.NewMemoryBuckets
// for one process, the database for replicas).
func NewLimiters(l Limits, buckets ratelimit.Buckets, opts ratelimit.Options) Limiters {
	with := func(prefix string) ratelimit.Options {
		o := opts
		o.Prefix = prefix
		return o
	}
	return Limiters{
		Accounts:         ratelimit.New(l.AccountPolicy(), buckets, with("acct:")),
		AuthFailures:     ratelimit.PerAddress{Limiter: ratelimit.New(l.AuthFailurePolicy(), buckets, with("auth:")), IPv6Prefix: l.AuthFailuresIPv6Prefix},
		ProviderFailures: ratelimit.PerAddress{Limiter: ratelimit.New(l.AuthFailurePolicy(), buckets, with("sig:")), IPv6Prefix: l.AuthFailuresIPv6Prefix},
	}
}

// DefaultLimits are the limits when nothing is configured.
var DefaultLimits = Limits{MaxBodyBytes: 1 << 20, RatePerSecond: 100, RateBurst: 200, AuthFailuresPerMinute: 30, AuthFailuresIPv6Prefix: 64, RequestTimeout: 10 * time.Second}

// Deps is what the host is built from.
type Deps struct {
	// Accounts authenticates the API key headers.
	Accounts Authenticator
	// Sessions, when set, lets a browser signed in to the dashboard call
	// the APIs with its session cookie (see authenticate), which CSRF
	// checks.
	Sessions Sessions
	CSRF     CSRF
	// Idempotency is the idempotency-key protocol of the handler sets
	// mounted on the host; nil ignores the key.
	Idempotency *Idempotency
	// Ready reports whether the service can take traffic (database
	// reachable, schema current); /readyz answers 503 with its error
	// otherwise.
	Ready func(ctx context.Context) error
	// Registry receives the HTTP metrics and is served at /metrics.
	Registry *prometheus.Registry
	Logger   *slog.Logger
	Limits   Limits
	// Limiters enforce Limits; see Limiters.
	Limiters Limiters
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Host is the one router every handler set mounts its routes on, with the
// policy around them. Mount every handler set, then serve Handler.
type Host struct {
	accounts    Authenticator
	sessions    Sessions
	csrf        CSRF
	idempotency *Idempotency
	now         func() time.Time
	ready       func(ctx context.Context) error
	log         *slog.Logger
	limits      Limits
	metrics     *httpMetrics
	limiters    Limiters
	registry    *prometheus.Registry
	router      *mux.Router
	// pages goes around every response below /dashboard (Pages).
	pages func(http.Handler) http.Handler
}

// New builds the host with its own routes (/healthz, /readyz, /metrics)
// and no handler set yet.
func New(d Deps) (*Host, error) {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Registry == nil {
		d.Registry = prometheus.NewRegistry()
	}
	if p := d.Limits.AuthFailuresIPv6Prefix; p < 0 || p > 128 {
		return nil, fmt.Errorf("IPv6 prefix length for failed authentications must be 1 to 128, got %d", p)
	}
	if d.Limits.MaxBodyBytes <= 0 {
		d.Limits.MaxBodyBytes = DefaultLimits.MaxBodyBytes
	}
	h := &Host{
		accounts: d.Accounts, sessions: d.Sessions, csrf: d.CSRF, idempotency: d.Idempotency, now: now,
		ready: d.Ready, log: d.Logger, limits: d.Limits, registry: d.Registry,
		metrics: newHTTPMetrics(d.Registry),
	}
	h.limiters = d.Limiters
	if h.limiters.Accounts == nil || h.limiters.AuthFailures == nil || h.limiters.ProviderFailures == nil {
		own := NewLimiters(d.Limits, ratelimit.NewMemoryBuckets(), ratelimit.Options{Now: now, Logger: d.Logger})
		h.limiters.Accounts = cmp.Or(h.limiters.Accounts, own.Accounts)
		h.limiters.AuthFailures = cmp.Or(h.limiters.AuthFailures, own.AuthFailures)
		h.limiters.ProviderFailures = cmp.Or(h.limiters.ProviderFailures, own.ProviderFailures)
	}
	h.router = mux.NewRouter()
	h.router.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, &failure.Error{Kind: failure.KindNotFound, Code: "route_not_found", Message: "no route " + r.URL.Path})
	})
	h.router.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", strings.Join(allowedMethods(h.router, r), ", "))
		writeJSONError(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" is not allowed on "+r.URL.Path)
	})
	top := h.Public()
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		top.Handle(m, "/healthz", h.healthz)
		top.Handle(m, "/readyz", h.readyz)
	}
	top.Handle(http.MethodGet, "/metrics", promhttp.HandlerFor(d.Registry, promhttp.HandlerOpts{}).ServeHTTP)
	return h, nil
}

// Handler serves every route mounted on the host, inside the request log
// and metrics, the request deadline and the body rules.
func (h *Host) Handler() http.Handler {
	return h.observe(h.withDeadline(h.guardBody(h.router)))
}

// Limiters are the host's budgets, for a handler set that spends them
// itself (the providers' callbacks).
func (h *Host) Limiters() Limiters { return h.limiters }

// Idempotency is the idempotency-key protocol of the handler sets; nil
// when keys are ignored.
func (h *Host) Idempotency() *Idempotency { return h.idempotency }

// Public are the routes that authenticate otherwise or not at all, at
// their own paths.
func (h *Host) Public() *Routes { return &Routes{router: h.router} }

// API are the routes below /v1 that authenticate with the API key headers
// or the dashboard session (see authenticate).
func (h *Host) API() *Routes { return &Routes{router: h.router, prefix: "/v1", wrap: h.authenticate} }

// APIWithBearerKey are API routes that also take "Authorization: Bearer
// <key>", the key alone, as a full credential (the cron routes only).
func (h *Host) APIWithBearerKey() *Routes {
	return &Routes{router: h.router, prefix: "/v1", wrap: h.authenticateCron}
}

// Routes registers routes on the host's router, each for one method (a
// path known with another method answers 405 with Allow). Every route sits
// on the root router itself: in gorilla/mux v1.8.1, a method mismatch
// inside a subrouter is forgotten when a later route of it fails to match,
// and the request answered 404 instead of 405; so the API's routes carry
// their /v1 prefix and their authentication themselves rather than
// through a subrouter.
type Routes struct {
	router *mux.Router
	prefix string
	// wrap, when set, goes around every handler (authentication).
	wrap func(http.Handler) http.Handler
}

// Handle registers h for method on path, below the prefix; method ""
// takes every method.
func (rt *Routes) Handle(method, path string, h http.HandlerFunc) {
	route := rt.router.Handle(rt.prefix+path, rt.wrapped(h))
	if method != "" {
		route.Methods(method)
	}
}

// HandlePrefix registers h for every path that starts with prefix (below
// the routes' own), for the given methods or, with none, for every method.
// Routes are tried in the order they were registered.
func (rt *Routes) HandlePrefix(prefix string, h http.Handler, methods ...string) {
	route := rt.router.PathPrefix(rt.prefix + prefix).Handler(rt.wrapped(h))
	if len(methods) > 0 {
		route.Methods(methods...)
	}
}

func (rt *Routes) wrapped(h http.Handler) http.Handler {
	if rt.wrap == nil {
		return h
	}
	return rt.wrap(h)
}

// allowedMethods are the methods of the routes whose path matches r's,
// for a 405's Allow header: mux reports a route that matches all but the
// method with ErrMethodMismatch.
func allowedMethods(root *mux.Router, r *http.Request) []string {
	var allowed []string
	_ = root.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		var match mux.RouteMatch
		if route.Match(r, &match) || match.MatchErr == mux.ErrMethodMismatch {
			methods, _ := route.GetMethods()
			allowed = append(allowed, methods...)
		}
		return nil
	})
	slices.Sort(allowed)
	return slices.Compact(allowed)
}

// writeJSONError answers a status that has no domain kind (405) in the
// route's error shape.
func writeJSONError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	switch styleOf(r) {
	case styleCron:
		WriteJSON(w, status, cronErrorBody{Error: cronError{Code: code, Message: message, Details: map[string][]string{}}})
		return
	case styleA1Cron:
		WriteJSON(w, status, a1CronError{Error: message, Code: code, Details: map[string][]string{}})
		return
	}
	WriteJSON(w, status, flatError{Detail: message, Status: "error", Message: message, Code: code})
}

func (h *Host) healthz(w http.ResponseWriter, r *http.Request) {
	NameRoute(r.Context(), "/healthz")
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *Host) readyz(w http.ResponseWriter, r *http.Request) {
	NameRoute(r.Context(), "/readyz")
	if h.ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := h.ready(ctx); err != nil {
			// Not logged: the health watcher logs an outage once, and a
			// load balancer asks every few hundred milliseconds.
			WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": err.Error()})
			return
		}
	}
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
